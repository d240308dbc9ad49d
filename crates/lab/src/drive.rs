//! Every use the lab makes of nandlab-core's run drivers (`Replayer`,
//! `OpenChannelReplayer`) and of their event and report types, in one small
//! module so that they can be repointed to a single pipeline without touching
//! the experiments or the front ends (which name the types through here).

use crate::replay::{write_flags, TracedRequest};
use crate::Result;
use nandlab_core::host::discard::SectorRange;
use nandlab_core::host::pblk::replay::{OpenChannelReplayer, WriteOrigin};
use nandlab_core::replay::Replayer;
use nandlab_core::Config;

pub use nandlab_core::host::pblk::replay::OpenChannelReport;
pub use nandlab_core::replay::{HostEvent, HostOp, ReplayReport, SECTOR_BYTES};

/// Counting mode on the page-mapped FTL: every request applied in order.
pub(crate) fn replay_counted(config: &Config, events: impl Iterator<Item = Result<HostEvent>>) -> Result<ReplayReport> {
    let mut replayer = Replayer::new(config)?;
    for event in events {
        replayer.apply(&event?)?;
    }
    Ok(replayer.finish()?)
}

/// Timed mode on the page-mapped FTL. `events` ends early when the caller
/// stops the run; the caller then discards the report.
pub(crate) fn replay_timed(config: &Config, events: &mut dyn Iterator<Item = HostEvent>) -> Result<ReplayReport> {
    Ok(Replayer::new(config)?.run_timed(events, &mut |_| {})?)
}

/// The open-channel device under the pblk-like host FTL; `age` writes every
/// logical page once first.
pub(crate) fn replay_open_channel(
    config: &Config,
    journal: &[SectorRange],
    age: bool,
    requests: impl Iterator<Item = Result<TracedRequest>>,
) -> Result<OpenChannelReport> {
    let mut replayer = OpenChannelReplayer::new(config, journal)?;
    if age {
        replayer.precondition_fill()?;
    }
    for request in requests {
        let request = request?;
        let origin = WriteOrigin { process: request.record.process.as_str(), flags: write_flags(&request.record) };
        replayer.apply(&request.event, &origin)?;
    }
    Ok(replayer.finish()?)
}
