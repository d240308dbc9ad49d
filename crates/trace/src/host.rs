//! Trace records as the simulator's host sees them: the one adapter from a
//! [`Record`] to a core [`HostEvent`] (512-byte sectors, flags, the journal
//! commits [`JournalTracker`] recognises). Replay, the experiments and the
//! live emulator all turn records into events here, so a trace and a live
//! session of the same requests reach the host stages identically.

use crate::journal::JournalTracker;
use crate::{Flags, Op, Record, TraceHeader};
use nandlab_core::host::classify::WriteFlags;
use nandlab_core::host::discard::SectorRange;
use nandlab_core::host::event::{HostEvent, HostOp, SECTOR_BYTES};
use nandlab_core::units::{SimNs, StreamId};

/// How many 512-byte sectors one of the trace's sectors spans (at least 1).
fn sector_scale(header: &TraceHeader) -> u64 {
    (u64::from(header.sector_size_bytes) / SECTOR_BYTES).max(1)
}

/// Journal extents given in the trace's sectors, in 512-byte sectors.
pub fn journal_sectors(regions: &[crate::SectorRange], header: &TraceHeader) -> Vec<SectorRange> {
    let scale = sector_scale(header);
    regions.iter().map(|range| SectorRange::new(range.start.0 * scale, range.len * scale)).collect()
}

/// A trace record as the simulator's host sees it, in 512-byte sectors;
/// `journal` marks the commits it completes (Delay-D's issue points).
pub fn host_event(record: &Record, header: &TraceHeader, journal: &mut JournalTracker) -> HostEvent {
    let scale = sector_scale(header);
    let sectors = SectorRange::new(record.start.0 * scale, u64::from(record.len.0) * scale);
    let op = match record.op {
        Op::Read => HostOp::Read,
        Op::Write => HostOp::Write,
        Op::Discard => HostOp::Discard,
        Op::Flush => HostOp::Flush,
    };
    let flags = WriteFlags {
        sync: record.flags.contains(Flags::SYNC),
        fua: record.flags.contains(Flags::FUA),
        preflush: record.flags.contains(Flags::PREFLUSH),
        meta: record.flags.contains(Flags::META),
    };
    let seen = journal.observe(record);
    HostEvent {
        flags,
        // Journal traffic as the trace shows it: writes into the journal
        // region the tracker knows (from the header, else inferred), which
        // include the commit blocks a kworker issues. Not jbd2's name alone:
        // under data=ordered jbd2 also writes other inodes' ordered data.
        journal_thread: seen.journal_write,
        journal_commit: seen.commit,
        stream: StreamId(record.stream.map_or(0, |tag| tag.0)),
        ..HostEvent::new(SimNs(record.timestamp.0), op, sectors)
    }
}
