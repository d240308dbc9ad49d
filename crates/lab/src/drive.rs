//! The replays' use of nandlab-core's run driver (`Simulation`) and of its
//! event and report types, in one small module: the experiments and the
//! front ends name the types through here. (Periodic task sets run through
//! the driver in `experiments/periodic_run.rs`, and the journal experiment's
//! replay, whose aging passes differ from its measured one, in
//! `experiments/journal/steady.rs`.)

use crate::{Progress, Result};
use nandlab_core::host::discard::SectorRange;
use nandlab_core::sim::{Counting, Timed, Workload};
use nandlab_core::{Config, Simulation};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub use nandlab_core::host::event::{HostEvent, HostOp, SECTOR_BYTES};
pub use nandlab_core::workload::{EventSource, Passes, SourceError};
pub use nandlab_core::Report;

/// How a replay ages the device before the measured phase.
pub(crate) enum Aging<'a> {
    /// Workload aging: these passes (the trace itself, or an aging trace)
    /// until the WAF settles.
    Workload(&'a mut dyn Passes),
    /// As `[precondition]` says (random fill, or nothing).
    Configured,
}

/// One replay: the device `config` describes, aged as `aging` says and
/// settled (the aging's GC debt paid), then `events` in counting or timed mode.
pub(crate) fn replay(
    config: &Config,
    journal: &[SectorRange],
    aging: Aging<'_>,
    events: &mut dyn EventSource,
    timed: bool,
    progress: &mut dyn FnMut(Progress),
    stop: Arc<AtomicBool>,
) -> Result<Report> {
    let mut simulation = Simulation::with_journal(config, journal)?;
    simulation.stop_when(stop);
    match aging {
        Aging::Workload(passes) => {
            simulation.age_with_workload(passes, progress)?;
        }
        Aging::Configured => {
            simulation.precondition(progress)?;
        }
    }
    simulation.settle()?;
    if timed {
        simulation.run_phase(Workload::Events(events), Timed, progress)?;
    } else {
        simulation.run_phase(Workload::Events(events), Counting::ToEnd, progress)?;
    }
    Ok(simulation.report())
}
