//! Host events: requests as a host issues them to a block device, in
//! 512-byte sectors, with what the block layer knows about each (flags, the
//! journal thread, priority). Every workload source produces them and the
//! host stages turn them into page requests for the translation layer.

use crate::host::classify::WriteFlags;
use crate::host::discard::SectorRange;
use crate::host::Op;
use crate::units::{SimNs, StreamId};
use serde::Serialize;

/// Bytes per sector in [`HostEvent`] addresses.
pub const SECTOR_BYTES: u64 = 512;

/// What a host request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HostOp {
    Read,
    Write,
    Discard,
    Flush,
}

impl From<Op> for HostOp {
    /// The host request a page request of `op` is (a trim is a DISCARD).
    fn from(op: Op) -> Self {
        match op {
            Op::Read => Self::Read,
            Op::Write => Self::Write,
            Op::Trim => Self::Discard,
            Op::Flush => Self::Flush,
        }
    }
}

/// One host request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostEvent {
    /// When the host issued it (traces: the trace's timestamp; synthetic:
    /// the arrival process, or 0 in a closed loop).
    pub time: SimNs,
    pub op: HostOp,
    pub sectors: SectorRange,
    /// Block-layer flags (REQ_SYNC, REQ_FUA, REQ_PREFLUSH, REQ_META).
    pub flags: WriteFlags,
    /// Issued by the file system's journal thread (`jbd2/...`).
    pub journal_thread: bool,
    /// The request completes a journal commit: Delay-D's issue point.
    pub journal_commit: bool,
    /// A latency-critical request (priority-aware cleaning holds GC back).
    pub priority: bool,
    /// The placement hint the source gave (a trace's stream tag, a
    /// synthetic workload's stream); a classifier stage may replace it.
    pub stream: StreamId,
    /// When the request must be complete (a real-time task's job); the
    /// timing engine counts misses and, with `timing.die_queue = "edf"`,
    /// serves each die's operations earliest deadline first.
    pub deadline: Option<SimNs>,
    /// The `[[job]]` that issued it (0 when the run has no jobs).
    pub job: u16,
}

impl HostEvent {
    /// A request with no flags, stream 0.
    pub fn new(time: SimNs, op: HostOp, sectors: SectorRange) -> Self {
        Self {
            time,
            op,
            sectors,
            flags: WriteFlags::default(),
            journal_thread: false,
            journal_commit: false,
            priority: false,
            stream: StreamId(0),
            deadline: None,
            job: 0,
        }
    }
}
