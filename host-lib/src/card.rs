//! A card: the thing behind the host stack's two seams, its registers
//! ([`Device`]) and its frame ports ([`FramePorts`]) — the wire (CMAC) and
//! the host (QDMA). Every job in this library talks to a card through
//! these and nothing else, so the same code runs on the simulated card and
//! on a real one.

use crate::spec::{DeviceSpec, SimChoice};
use crate::{Error, Result};
use std::sync::Arc;
use weft_driver::{identify, CardInfo, Device, FramePorts, RegisterAccess};
use weft_regs::net;

/// Options for opening a card.
#[derive(Default)]
pub struct OpenOptions<'a> {
    /// Progress of long steps (Verilator builds), as stage names.
    pub progress: Option<&'a (dyn Fn(&str) + Sync)>,
    /// Record a VCD waveform of a simulated card here.
    pub waves: Option<std::path::PathBuf>,
    /// The job is short (well under a million cycles): a Verilated card
    /// then uses the optimised model only when it is built already, and
    /// otherwise builds an unoptimised one, which compiles in a fraction of
    /// the time and runs about five times slower
    /// (`weft_sim::verilator::Optimisation::FastIfBuilt`).
    pub short_run: bool,
}

/// An open weft card. Clones share the card (its registers and frame
/// ports), as handles on one device do.
#[derive(Clone)]
pub struct Card {
    spec: DeviceSpec,
    regs: Arc<dyn Device>,
    frames: Option<Arc<dyn FramePorts>>,
}

impl Card {
    /// Open the card named by `spec` (see [`DeviceSpec`]).
    pub fn open(spec: &str) -> Result<Self> {
        Self::open_with(spec.parse()?, &OpenOptions::default())
    }

    /// Open a card with options.
    pub fn open_with(spec: DeviceSpec, opts: &OpenOptions) -> Result<Self> {
        match &spec {
            DeviceSpec::Sim(engine) => open_sim(*engine, opts),
            DeviceSpec::Vfio(bdf) => {
                // At weft's window on an OpenNIC card, BAR2 + 0x100000
                // (`Window::OPENNIC`); a function without it is refused.
                let dev = weft_driver::vfio::VfioDevice::open(bdf)?;
                // Refuse anything that is not a weft card speaking our map
                // before it is handed out (the error says what was found).
                identify(&dev)?;
                Ok(Self {
                    spec,
                    regs: Arc::new(dev),
                    frames: None,
                })
            }
            DeviceSpec::Qdma(bdf) => {
                use weft_driver::qdma::{NetworkWire, Qdma, QdmaCard, QdmaConfig, VfioBus};
                let bus = Arc::new(VfioBus::open(bdf)?);
                let (q, pairs) = Qdma::bring_up(bus, QdmaConfig::default())?;
                let name = format!("qdma:{bdf}");
                let wire = Arc::new(NetworkWire::new(name.clone()));
                let card = Arc::new(QdmaCard::new(name, q, pairs, wire));
                identify(card.as_ref())?;
                Ok(Self {
                    spec,
                    regs: card.clone(),
                    frames: Some(card),
                })
            }
            DeviceSpec::Onic(bdf) => {
                // BAR2 + 0x100000 through sysfs `resource2`, beside the
                // bound `onic` driver (which owns the QDMA and the netdev).
                let dev = weft_driver::OnicDevice::open(bdf)?;
                identify(&dev)?;
                Ok(Self {
                    spec,
                    regs: Arc::new(dev),
                    frames: None,
                })
            }
            DeviceSpec::Unix(path) => {
                let dev = crate::remote::RemoteDevice::connect(path)?;
                identify(&dev)?;
                Ok(Self {
                    spec,
                    regs: Arc::new(dev),
                    frames: None,
                })
            }
        }
    }

    /// A card from its two seams (for example test doubles).
    pub fn from_parts(
        spec: DeviceSpec,
        regs: Arc<dyn Device>,
        frames: Option<Arc<dyn FramePorts>>,
    ) -> Self {
        Self { spec, regs, frames }
    }

    /// What was asked for.
    pub fn spec(&self) -> &DeviceSpec {
        &self.spec
    }

    /// What runs behind it, e.g. `sim:verilator` or `vfio:0000:3b:00.0`.
    pub fn name(&self) -> String {
        self.regs.name()
    }

    /// The card's registers.
    pub fn regs(&self) -> &dyn Device {
        self.regs.as_ref()
    }

    /// The card's registers, shared.
    pub fn regs_arc(&self) -> Arc<dyn Device> {
        self.regs.clone()
    }

    /// The card's frame ports, or why this card has none here.
    pub fn frames(&self) -> Result<&dyn FramePorts> {
        self.frames.as_deref().ok_or_else(|| {
            let why = match self.spec {
                DeviceSpec::Onic(_) => "this card's frames go through its onic netdev, reached by the roles over UDP (weft kv send / weft kv collect, weft grad worker, weft memops send)",
                DeviceSpec::Unix(_) => "a served card's frames are on its TAP netdevs, reached by the roles over UDP (weft kv send / weft kv collect, weft grad worker, weft memops send)",
                DeviceSpec::Vfio(_) => "no frame path through vfio:, which reaches only the card's registers: open it as qdma:DDDD:BB:DD.F for frames through weft's QDMA queues, or bind onic and use its netdev (the roles over UDP)",
                _ => "no frame path to this card (it was opened without frame ports)",
            };
            Error::Unsupported(format!("{}: {why}", self.name()))
        })
    }

    /// The card's frame ports, shared (see [`Card::frames`]).
    pub fn frames_arc(&self) -> Result<Arc<dyn FramePorts>> {
        self.frames()?;
        Ok(self.frames.clone().expect("checked above"))
    }

    /// Read the ID block and walk the register chain.
    pub fn identify(&self) -> Result<CardInfo> {
        Ok(identify(self.regs.as_ref())?)
    }

    /// Give the card its own addresses ([`addr::card`]) in its `net`
    /// registers: the MAC and IPv4 address frames to its engines carry.
    pub fn set_address(&self) -> weft_driver::Result<()> {
        self.set_address_to(&addr::card())
    }

    /// Give the card the addresses `me` (its MAC and IPv4 address; `port`
    /// unused) in its `net` registers.
    pub fn set_address_to(&self, me: &weft_model::wire::Endpoint) -> weft_driver::Result<()> {
        let (hi, lo) = weft_model::wire::mac_regs(&me.mac);
        let r = self.regs();
        r.write_reg(&net::MAC_HI, hi)?;
        r.write_reg(&net::MAC_LO, lo)?;
        r.write_reg(&net::IP, u32::from(me.ip))
    }

    /// Set `net.CTRL.ENABLE`: frames addressed to the card reach its
    /// engines (configure everything else first).
    pub fn enable_engines(&self) -> weft_driver::Result<()> {
        let r = self.regs();
        let ctrl = r.read_reg(&net::CTRL)?;
        r.write_reg(&net::CTRL, net::CTRL_ENABLE.set(ctrl, 1))
    }
}

#[cfg(feature = "sim")]
fn open_sim(choice: SimChoice, opts: &OpenOptions) -> Result<Card> {
    use weft_sim::device::SimKind;
    use weft_sim::SimDevice;
    let kind = match choice {
        SimChoice::Auto if weft_sim::verilator::toolchain().is_ok() => SimKind::Verilator,
        SimChoice::Auto => {
            note_no_verilator();
            SimKind::RustHdl
        }
        SimChoice::RustHdl => SimKind::RustHdl,
        SimChoice::Verilator => SimKind::Verilator,
        SimChoice::Model => SimKind::Model,
        SimChoice::Qdma => return open_sim_qdma(opts),
    };
    let eo = sim_options(opts);
    let dev = Arc::new(SimDevice::open(kind, &eo)?);
    Ok(Card {
        spec: DeviceSpec::Sim(choice),
        regs: dev.clone(),
        frames: Some(dev),
    })
}

/// The simulator options a card opened with `opts` gets.
#[cfg(feature = "sim")]
fn sim_options<'a>(opts: &OpenOptions<'a>) -> weft_sim::SimulatorOptions<'a> {
    use weft_sim::verilator::Optimisation;
    weft_sim::SimulatorOptions {
        waves: opts.waves.clone(),
        progress: opts.progress,
        optimisation: if opts.short_run {
            Optimisation::FastIfBuilt
        } else {
            Optimisation::Fast
        },
        prebuilt: prebuilt_top(),
        ..weft_sim::SimulatorOptions::default()
    }
}

/// `weft_top`'s model as this crate's build script built it, if it did
/// (`build.rs`: when Verilator was there and `WEFT_PREBUILD` is not 0).
#[cfg(feature = "sim")]
pub fn prebuilt_top() -> Option<&'static weft_sim::prebuilt::TopModels> {
    static MODELS: std::sync::OnceLock<Option<weft_sim::prebuilt::TopModels>> =
        std::sync::OnceLock::new();
    MODELS
        .get_or_init(|| {
            option_env!("WEFT_PREBUILT_TOP").and_then(weft_sim::prebuilt::TopModels::decode)
        })
        .as_ref()
}

/// `sim:qdma`: the top behind the behavioural QDMA model, brought up and
/// driven by weft's QDMA driver (the code a real card runs).
#[cfg(feature = "sim")]
fn open_sim_qdma(opts: &OpenOptions) -> Result<Card> {
    use weft_driver::qdma::{Qdma, QdmaCard, QdmaConfig};
    use weft_sim::device::SimKind;
    use weft_sim::qdma::{ModelOptions, QdmaModel};
    use weft_sim::SimDevice;
    let kind = if weft_sim::verilator::toolchain().is_ok() {
        SimKind::Verilator
    } else {
        note_no_verilator();
        SimKind::RustHdl
    };
    let eo = sim_options(opts);
    let model = Arc::new(QdmaModel::new(
        SimDevice::open(kind, &eo)?,
        ModelOptions::default(),
    ));
    let (q, pairs) = Qdma::bring_up(model.clone(), QdmaConfig::default())?;
    let card = Arc::new(QdmaCard::new("sim:qdma".into(), q, pairs, model));
    Ok(Card {
        spec: DeviceSpec::Sim(SimChoice::Qdma),
        regs: card.clone(),
        frames: Some(card),
    })
}

/// Say once, on stderr, that the fast simulation is missing.
#[cfg(feature = "sim")]
fn note_no_verilator() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        eprintln!(
            "note: Verilator is not installed: the card runs in rust-hdl's simulator, far slower (apt-get install verilator for the fast path)"
        )
    });
}

#[cfg(not(feature = "sim"))]
fn open_sim(_choice: SimChoice, _opts: &OpenOptions) -> Result<Card> {
    Err(Error::Unsupported(
        "this build of weft has no simulated card (built without the `sim` feature)".into(),
    ))
}

/// Where the card and its peers sit: the addresses a job gives the card
/// (its `net` registers) and uses for the hosts around it. In simulation
/// these are the simulated network's hosts; on a real deployment the same
/// roles get real addresses (flags of the roles' commands).
pub mod addr {
    use std::net::Ipv4Addr;
    use weft_model::wire::Endpoint;

    /// Workers the simulated network has addresses for.
    pub const MAX_WORKERS: usize = 250;
    /// The key-value collector's UDP port on the card's host.
    pub const KV_COLLECTOR_PORT: u16 = 7000;
    /// The gradient host fallback's UDP port on the card's host.
    pub const GRAD_FALLBACK_PORT: u16 = 7001;
    /// The UDP port MemOps requests come from on the card's host.
    pub const MEMOPS_CLIENT_PORT: u16 = 7002;
    /// `net.PACK_WAIT` a job sets: a partial record frame leaves 4 µs at
    /// 250 MHz after its first record.
    pub const PACK_WAIT: u32 = 1000;

    /// The card itself (`port` unused: each engine has its own).
    pub fn card() -> Endpoint {
        Endpoint {
            mac: [0x02, 0x57, 0x46, 0x00, 0x00, 0x01],
            ip: Ipv4Addr::new(10, 0, 0, 2),
            port: 0,
        }
    }

    /// The card's own host, on its host port (`port` set per role).
    pub fn host() -> Endpoint {
        Endpoint {
            mac: [0x02, 0x57, 0x46, 0xff, 0x00, 0x01],
            ip: Ipv4Addr::new(10, 0, 0, 1),
            port: 0,
        }
    }

    /// Worker `i` on the wire (`i < MAX_WORKERS`).
    pub fn worker(i: usize) -> Endpoint {
        Endpoint {
            mac: [0x02, 0x57, 0x46, 0x01, (i >> 8) as u8, i as u8],
            ip: Ipv4Addr::new(10, 0, 1, (i % 250 + 1) as u8),
            port: 40000 + i as u16,
        }
    }
}
