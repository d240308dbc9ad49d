//! The replays' use of nandlab-core's run driver (`Simulation`) and of its
//! event and report types, in one small module: the experiments and the
//! front ends name the types through here. (Periodic task sets run through
//! the driver in `experiments/periodic_run.rs`, and the journal experiment's
//! looped aging in `experiments/journal/steady.rs`.)

use crate::{Progress, Result};
use nandlab_core::host::discard::SectorRange;
use nandlab_core::{Config, Simulation};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub use nandlab_core::host::event::{HostEvent, HostOp, SECTOR_BYTES};
pub use nandlab_core::workload::{EventSource, SourceError};
pub use nandlab_core::Report;

/// One replay: the device `config` describes, aged by `aging` (a trace) or
/// as `[precondition]` says, then `events` in counting or timed mode.
pub(crate) fn replay(
    config: &Config,
    journal: &[SectorRange],
    aging: Option<&mut dyn EventSource>,
    events: &mut dyn EventSource,
    timed: bool,
    progress: &mut dyn FnMut(Progress),
    stop: Arc<AtomicBool>,
) -> Result<Report> {
    let mut simulation = Simulation::with_journal(config, journal)?;
    simulation.stop_when(stop);
    match aging {
        Some(aging) => {
            simulation.age_with(aging, progress)?;
        }
        None => {
            simulation.precondition(progress)?;
        }
    }
    if timed {
        simulation.replay_timed(events, progress)?;
    } else {
        simulation.replay(events, progress)?;
    }
    Ok(simulation.report())
}
