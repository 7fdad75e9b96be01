//! Opening a card for gradient jobs: which engine backs a device spec.
//! The card itself, [`GradCard`] and its implementation on the engine's
//! witnesses, lives in `weft_sim::grad_card`.

use super::GradError;
use crate::spec::{DeviceSpec, SimEngine};
use weft_sim::engine::{Engine, EngineOptions};
pub use weft_sim::grad_card::{DutCard, GradCard, MODEL_MAX_SLOTS, RTL_SLOTS};

/// A card opened for gradient jobs, and what it is.
pub struct OpenedCard {
    /// The card.
    pub card: Box<dyn GradCard>,
    /// The device spec it was opened for.
    pub device: String,
}

/// Open a card for gradient jobs with `slots` aggregator slots; the one
/// place that decides which card backs a device spec:
/// - `sim:model`: the cycle model at 512 bits (64-value chunks), any power
///   of two from 2 to 65536 slots;
/// - `sim:verilator` and `sim` (rust-hdl): the RTL at 512 bits with 16 or
///   256 slots (the builds with port glue).
///
/// `progress` sees Verilator's build stages (the first build of a geometry
/// takes minutes; later ones come from the cache).
pub fn open_card(
    device: &DeviceSpec,
    slots: usize,
    progress: Option<&dyn Fn(&str)>,
) -> Result<OpenedCard, GradError> {
    let engine = match device {
        DeviceSpec::Sim(SimEngine::Model) => None,
        DeviceSpec::Sim(SimEngine::RustHdl) => Some(Engine::RustHdl),
        DeviceSpec::Sim(SimEngine::Verilator) => Some(Engine::Verilator),
        DeviceSpec::Vfio(bdf) => {
            return Err(GradError::Unsupported(format!(
                "vfio:{bdf}: gradient jobs reach a real card's engine through its network ports, which weft does not drive yet; they run on the simulated engine (sim, sim:verilator, sim:model)"
            )))
        }
    };
    let o = EngineOptions {
        progress,
        ..EngineOptions::default()
    };
    let card = weft_sim::grad_card::grad_card(engine, slots, &o).map_err(|e| match e {
        weft_sim::SimError::Geometry(m) if engine.is_some() => GradError::Options(format!(
            "{device}: {m}; use --device sim:model for other sizes"
        )),
        weft_sim::SimError::Geometry(m) => GradError::Options(format!("{device}: {m}")),
        e => GradError::Sim(e),
    })?;
    Ok(OpenedCard {
        card,
        device: device.to_string(),
    })
}
