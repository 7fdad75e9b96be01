//! Opening a card.

use crate::spec::{DeviceSpec, SimEngine};
use crate::{Error, Result};
use std::sync::Arc;
use weft_driver::{identify, CardInfo, Device};

/// Options for opening a card.
#[derive(Default)]
pub struct OpenOptions<'a> {
    /// Progress of long steps (Verilator builds), as stage names.
    pub progress: Option<&'a dyn Fn(&str)>,
    /// Record a VCD waveform of a simulated card here.
    pub waves: Option<std::path::PathBuf>,
}

/// An open weft card.
pub struct Nic {
    spec: DeviceSpec,
    dev: Arc<dyn Device>,
}

impl Nic {
    /// Open the card named by `spec` (see [`DeviceSpec`]).
    pub fn open(spec: &str) -> Result<Self> {
        Self::open_with(spec.parse()?, &OpenOptions::default())
    }

    /// Open a card with options.
    pub fn open_with(spec: DeviceSpec, opts: &OpenOptions) -> Result<Self> {
        let dev: Arc<dyn Device> = match &spec {
            DeviceSpec::Sim(engine) => open_sim(*engine, opts)?.into(),
            DeviceSpec::Vfio(bdf) => {
                // At weft's window on an OpenNIC card, BAR2 + 0x100000
                // (`Window::OPENNIC`); a function without it is refused.
                let dev = weft_driver::vfio::VfioDevice::open(bdf)?;
                // Refuse anything that is not a weft card speaking our map
                // before it is handed out (the error says what was found).
                identify(&dev)?;
                Arc::new(dev)
            }
        };
        Ok(Self { spec, dev })
    }

    /// Wrap an already open device (for example a test double).
    pub fn from_device(spec: DeviceSpec, dev: Box<dyn Device>) -> Self {
        Self {
            spec,
            dev: dev.into(),
        }
    }

    /// What was opened.
    pub fn spec(&self) -> &DeviceSpec {
        &self.spec
    }

    /// The device.
    pub fn device(&self) -> &dyn Device {
        self.dev.as_ref()
    }

    /// The device, shared (queues hold on to it).
    pub fn device_arc(&self) -> Arc<dyn Device> {
        self.dev.clone()
    }

    /// Read the ID block and walk the register chain.
    pub fn identify(&self) -> Result<CardInfo> {
        Ok(identify(self.dev.as_ref())?)
    }
}

#[cfg(feature = "sim")]
fn open_sim(engine: SimEngine, opts: &OpenOptions) -> Result<Box<dyn Device>> {
    use weft_sim::{Engine, EngineOptions, SimDevice};
    let engine = match engine {
        SimEngine::RustHdl => Engine::RustHdl,
        SimEngine::Verilator => Engine::Verilator,
        SimEngine::Model => {
            return Err(Error::Unsupported(
                "sim:model is the engines' reference model, with no register space: use it with `weft agg kv`; for the card use sim or sim:verilator".into(),
            ))
        }
    };
    let eo = EngineOptions {
        waves: opts.waves.clone(),
        progress: opts.progress,
        cache_dir: None,
    };
    Ok(Box::new(SimDevice::open(engine, &eo)?))
}

#[cfg(not(feature = "sim"))]
fn open_sim(_engine: SimEngine, _opts: &OpenOptions) -> Result<Box<dyn Device>> {
    Err(Error::Unsupported(
        "this build of weft has no simulated card (built without the `sim` feature)".into(),
    ))
}
