//! Journal knowledge from the requests alone: where a journaling file
//! system (ext4/jbd2) keeps its log, and when it commits.
//!
//! **Region.** The journal is a circular log: jbd2 writes it in address order
//! and wraps back to its start. [`RegionEstimator`] follows that log: every
//! write by a `jbd2/…` thread is log, and so is a synchronous write that
//! starts exactly where the log's head stands, whoever issued it — on a loop
//! device the commit block reaches the block layer from a `kworker` after
//! the flush machinery requeued it. The log ranges grow as the head advances
//! and are merged as they touch; once the log has wrapped, they cover the
//! whole journal, superblock included (jbd2 rewrites it when the tail
//! moves). A region is only as complete as the log's travel: a trace whose
//! log never wrapped yields the part that was written, and the report says
//! how often it wrapped. jbd2 also writes ordered-mode file data; such writes
//! are scattered, so only ranges written at least an eighth as often as the
//! busiest one are kept.
//!
//! Memory is bounded: at most [`MAX_LOG_RANGES`] ranges are kept, the two
//! closest merged when one more arrives. The estimate is usable at any time
//! (incrementally, as [`JournalTracker::new`] does without a header), but the
//! exact region needs the whole log's travel, so the replay glue should run
//! [`infer_region`] as a first pass over the file and hand the result to
//! [`JournalTracker::with_region`]. When the trace header gives the journal
//! extents (`nandlab capture` records the journal inode's), they are used
//! exactly and nothing is inferred.
//!
//! **Commits.** A commit is made durable by the request patterns real stacks
//! produce, seen in issue order (reads ignored):
//! * a write into the journal with PREFLUSH or FUA (a device with FUA: the
//!   block layer issues the preflush, then the commit block `WFS`);
//! * a flush right after a write into the journal, whoever issued it — on a
//!   loop device (no FUA) the commit shows as flush, commit block, flush,
//!   all from a `kworker`.
//!
//! One commit shows up as several of these, so they are folded: a journal
//! write between two flushes (a "sandwich") is a commit block and the
//! second flush its commit, unless the first flush itself closed a counted
//! sandwich (then the write is the next transaction's log or a journal
//! superblock update). A flush after journal writes that closes no sandwich
//! is pending: it is the commit unless a sandwich or a FUA journal write
//! follows at once, and it is counted at the next request otherwise (e.g.
//! `journal_async_commit`: log and commit block, then one flush). A commit
//! is thus reported at the request that completes its pattern. A journal
//! superblock update that follows a commit (flush, superblock, flush, then
//! the next log) counts as one commit too; requests of other processes
//! slipped between a commit's flush and its commit block make one commit
//! count twice.

use crate::error::TraceError;
use crate::header::{SectorRange, TraceHeader};
use crate::record::{Flags, Op, Record, Sector};
use crate::{Format, ReadOptions};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// The most log ranges the estimator keeps; ext4 journals are one or a few
/// extents, so only scattered jbd2 data writes ever reach this.
pub const MAX_LOG_RANGES: usize = 1024;
/// Ranges written fewer times than the busiest one divided by this are taken
/// for jbd2's ordered-mode data writes, not log.
const LOG_DOMINANCE_DIVISOR: u64 = 8;
const JOURNAL_THREAD: &str = "jbd2";

/// A log range and how many log writes landed in it.
#[derive(Clone, Copy, Debug)]
struct LogRange {
    end: u64,
    writes: u64,
}

/// Follows jbd2's circular log through a stream of records; see the module
/// documentation for the rules.
#[derive(Clone, Debug, Default)]
pub struct RegionEstimator {
    ranges: BTreeMap<u64, LogRange>,
    head: Option<u64>,
    /// End of a write that jumped back below the head; if the log then goes
    /// on from there, it wrapped.
    jumped_back_to: Option<u64>,
    wraps: u64,
}

impl RegionEstimator {
    pub fn new() -> RegionEstimator {
        RegionEstimator::default()
    }

    /// Takes one record; returns whether it was taken as a log write.
    pub fn observe(&mut self, record: &Record) -> bool {
        if record.op != Op::Write || record.len.0 == 0 {
            return false;
        }
        let (start, end) = (record.start.0, record.end().0);
        let by_journal_thread = record.process.has_base(JOURNAL_THREAD);
        let synchronous = record.flags.contains(Flags::SYNC) || is_forced(record.flags);
        let continues_head = self.head == Some(start) && synchronous;
        if !(by_journal_thread || continues_head) {
            return false;
        }
        self.follow_head(start, end);
        self.insert(start, end);
        true
    }

    fn follow_head(&mut self, start: u64, end: u64) {
        if self.jumped_back_to == Some(start) {
            self.wraps += 1;
            self.jumped_back_to = None;
        } else {
            self.jumped_back_to = self.head.filter(|&head| start < head).map(|_| end);
        }
        self.head = Some(end);
    }

    fn insert(&mut self, mut start: u64, mut end: u64) {
        let mut writes = 1;
        let touching: Vec<u64> = self
            .ranges
            .range(..=end)
            .rev()
            .take_while(|(&range_start, range)| range.end >= start || range_start >= start)
            .map(|(&range_start, _)| range_start)
            .collect();
        for range_start in touching {
            if let Some(range) = self.ranges.remove(&range_start) {
                start = start.min(range_start);
                end = end.max(range.end);
                writes += range.writes;
            }
        }
        self.ranges.insert(start, LogRange { end, writes });
        if self.ranges.len() > MAX_LOG_RANGES {
            self.merge_closest_pair();
        }
    }

    fn merge_closest_pair(&mut self) {
        let closest = self
            .ranges
            .iter()
            .zip(self.ranges.iter().skip(1))
            .min_by_key(|((_, left), (&right_start, _))| right_start - left.end)
            .map(|((&left_start, _), (&right_start, _))| (left_start, right_start));
        if let Some((left_start, right_start)) = closest {
            if let Some(right) = self.ranges.remove(&right_start) {
                if let Some(left) = self.ranges.get_mut(&left_start) {
                    left.end = right.end;
                    left.writes += right.writes;
                }
            }
        }
    }

    /// Does `[start, start + len)` touch a log range seen so far? Cheap
    /// enough for every record; unlike [`RegionEstimator::estimate`] it does
    /// not drop rarely written ranges.
    pub fn touches(&self, start: Sector, end: Sector) -> bool {
        self.ranges.range(..end.0).next_back().is_some_and(|(_, range)| range.end > start.0)
    }

    /// The journal region as far as the log has shown it.
    pub fn estimate(&self) -> Vec<SectorRange> {
        let busiest = self.ranges.values().map(|range| range.writes).max().unwrap_or(0);
        let threshold = busiest.div_ceil(LOG_DOMINANCE_DIVISOR);
        self.ranges
            .iter()
            .filter(|(_, range)| range.writes >= threshold)
            .map(|(&start, range)| SectorRange { start: Sector(start), len: range.end - start })
            .collect()
    }

    /// How many times the log was seen to wrap around.
    pub fn wraps(&self) -> u64 {
        self.wraps
    }
}

fn is_forced(flags: Flags) -> bool {
    flags.contains(Flags::PREFLUSH) || flags.contains(Flags::FUA)
}

/// The first pass: the journal region of a whole trace, with how often its
/// log wrapped (zero means the region may be only part of the journal).
pub fn infer_region(
    records: impl IntoIterator<Item = Result<Record, TraceError>>,
) -> Result<(Vec<SectorRange>, u64), TraceError> {
    let mut estimator = RegionEstimator::new();
    for record in records {
        estimator.observe(&record?);
    }
    Ok((estimator.estimate(), estimator.wraps()))
}

/// Where the journal region came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionSource {
    /// The trace header's journal extents.
    Header,
    /// Given by the caller, from a first pass ([`infer_region`]).
    FirstPass,
    /// Estimated as the records went by.
    Incremental,
}

#[derive(Clone, Debug)]
enum Region {
    Fixed(Vec<SectorRange>, RegionSource),
    Incremental,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Nothing,
    JournalWrite,
    OtherWrite,
    Flush,
}

/// What one record was, as far as the journal is concerned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JournalEvent {
    /// A write into the journal region.
    pub journal_write: bool,
    /// The record completes a commit pattern: the flush after a commit
    /// block, a FUA journal write, or the request after a lone flush that
    /// followed journal writes.
    pub commit: bool,
}

/// Streaming journal classifier and commit detector: feed every record in
/// issue order to [`JournalTracker::observe`]. Constant memory with a fixed
/// region, bounded ([`MAX_LOG_RANGES`]) when estimating.
#[derive(Clone, Debug)]
pub struct JournalTracker {
    region: Region,
    estimator: RegionEstimator,
    /// The last two writes or flushes, latest first.
    recent: [Seen; 2],
    /// A flush right after journal writes that was not itself the end of a
    /// flush-journal write-flush sandwich: a commit, unless a sandwich or a
    /// FUA journal write follows and is that commit.
    pending: bool,
    /// The pending commit's possible commit block has been seen.
    pending_block_seen: bool,
    /// The latest flush closed a counted sandwich: a journal write after
    /// it is the next transaction's log or a journal superblock update, not
    /// a commit block, whatever flush follows.
    last_flush_closed_commit: bool,
    commits: u64,
    journal_writes: u64,
}

impl Default for JournalTracker {
    fn default() -> JournalTracker {
        JournalTracker::new(&TraceHeader::default())
    }
}

impl JournalTracker {
    /// Exact when the header gives the journal extents, else estimating the
    /// region as records arrive.
    pub fn new(header: &TraceHeader) -> JournalTracker {
        if header.journal.is_empty() {
            JournalTracker::build(Region::Incremental)
        } else {
            JournalTracker::build(Region::Fixed(header.journal.clone(), RegionSource::Header))
        }
    }

    /// For a trace file, ready for the streaming pass: the header's journal
    /// extents when it has them, else the region of a first pass over the
    /// file ([`infer_region`]).
    pub fn for_file(path: &Path, format: Option<Format>, options: &ReadOptions) -> Result<JournalTracker, TraceError> {
        let reader = crate::open(path, format, options)?;
        if !reader.header().journal.is_empty() {
            return Ok(JournalTracker::new(reader.header()));
        }
        let (region, _wraps) = infer_region(reader)?;
        Ok(JournalTracker::with_region(region))
    }

    /// With a region found by a first pass ([`infer_region`]).
    pub fn with_region(region: Vec<SectorRange>) -> JournalTracker {
        JournalTracker::build(Region::Fixed(region, RegionSource::FirstPass))
    }

    fn build(region: Region) -> JournalTracker {
        JournalTracker {
            region,
            estimator: RegionEstimator::new(),
            recent: [Seen::Nothing; 2],
            pending: false,
            pending_block_seen: false,
            last_flush_closed_commit: false,
            commits: 0,
            journal_writes: 0,
        }
    }

    fn is_journal(&mut self, record: &Record) -> bool {
        match &self.region {
            Region::Fixed(ranges, _) => ranges.iter().any(|range| range.overlaps(record.start, record.len)),
            Region::Incremental => self.estimator.observe(record) || self.estimator.touches(record.start, record.end()),
        }
    }

    pub fn observe(&mut self, record: &Record) -> JournalEvent {
        if matches!(self.region, Region::Fixed(..)) {
            self.estimator.observe(record);
        }
        let seen = match record.op {
            Op::Read => return JournalEvent::default(),
            Op::Write if record.len.0 > 0 && self.is_journal(record) => Seen::JournalWrite,
            Op::Write | Op::Discard => Seen::OtherWrite,
            Op::Flush => Seen::Flush,
        };
        let journal_write = seen == Seen::JournalWrite;
        self.journal_writes += u64::from(journal_write);
        let commit = self.commit_shown_by(seen, is_forced(record.flags));
        self.commits += u64::from(commit);
        self.recent = [seen, self.recent[0]];
        JournalEvent { journal_write, commit }
    }

    fn commit_shown_by(&mut self, seen: Seen, forced: bool) -> bool {
        match seen {
            Seen::JournalWrite if forced => {
                self.pending = false;
                true
            }
            Seen::JournalWrite if self.pending && !self.pending_block_seen => {
                self.pending_block_seen = true;
                false
            }
            Seen::Flush => {
                let after_journal_write = self.recent[0] == Seen::JournalWrite;
                let closes_sandwich =
                    after_journal_write && self.recent[1] == Seen::Flush && !self.last_flush_closed_commit;
                self.last_flush_closed_commit = closes_sandwich;
                if closes_sandwich {
                    self.pending = false;
                    return true;
                }
                self.pending_block_seen = false;
                std::mem::replace(&mut self.pending, after_journal_write)
            }
            _ => std::mem::replace(&mut self.pending, false),
        }
    }

    /// What was inferred so far.
    pub fn report(&self) -> JournalReport {
        let (regions, source) = match &self.region {
            Region::Fixed(ranges, source) => (ranges.clone(), *source),
            Region::Incremental => (self.estimator.estimate(), RegionSource::Incremental),
        };
        JournalReport {
            regions,
            source,
            wraps: self.estimator.wraps(),
            commits: self.commits + u64::from(self.pending),
            journal_writes: self.journal_writes,
        }
    }
}

/// What [`JournalTracker`] found, for `trace info` and replay reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalReport {
    /// The journal region, in the trace's sectors; empty if none was found.
    pub regions: Vec<SectorRange>,
    pub source: RegionSource,
    /// How often jbd2's log was seen to wrap (0: the region may be partial).
    pub wraps: u64,
    pub commits: u64,
    pub journal_writes: u64,
}

impl fmt::Display for JournalReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.regions.is_empty() {
            f.write_str("journal region  none found (no jbd2 writes and no journal extents in the header)\n")?;
        }
        for range in &self.regions {
            let origin = match self.source {
                RegionSource::Header => "from the trace header".to_owned(),
                RegionSource::FirstPass | RegionSource::Incremental => {
                    format!("inferred from jbd2's log, which wrapped {} times", self.wraps)
                }
            };
            writeln!(
                f,
                "journal region  sectors {}..{} ({} sectors), {origin}",
                range.start.0,
                range.end().0,
                range.len
            )?;
        }
        writeln!(f, "journal commits {} ({} journal writes)", self.commits, self.journal_writes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ProcessName, SectorCount, TimestampNs};

    fn request(op: Op, flags: Flags, start: u64, len: u32, process: &str) -> Record {
        Record {
            timestamp: TimestampNs(0),
            op,
            flags,
            start: Sector(start),
            len: SectorCount(len),
            process: ProcessName::new(process),
            stream: None,
        }
    }

    fn sync_write(start: u64, len: u32, process: &str) -> Record {
        request(Op::Write, Flags::SYNC.with(Flags::META), start, len, process)
    }

    fn flush(process: &str) -> Record {
        request(Op::Flush, Flags::PREFLUSH, 0, 0, process)
    }

    /// One transaction as a loop device shows it: jbd2's log blocks, then
    /// from a kworker the preflush, the commit block and the post-flush.
    fn loop_device_transaction(at: u64, log_sectors: u32) -> [Record; 4] {
        [
            sync_write(at, log_sectors, "jbd2/loop0-8"),
            flush("kworker/0:1H"),
            sync_write(at + u64::from(log_sectors), 8, "kworker/1:2H"),
            flush("kworker/1:2H"),
        ]
    }

    #[test]
    fn the_loop_device_pattern_counts_one_commit_per_transaction() {
        let mut tracker = JournalTracker::new(&TraceHeader::default());
        let mut commits = 0;
        for transaction in 0..10 {
            tracker.observe(&sync_write(50_000 + transaction * 8, 8, "dd"));
            for record in loop_device_transaction(1000 + transaction * 64, 56) {
                commits += u64::from(tracker.observe(&record).commit);
            }
        }
        let report = tracker.report();
        assert_eq!((commits, report.commits, report.journal_writes), (10, 10, 20));
        assert_eq!(report.regions, vec![SectorRange { start: Sector(1000), len: 640 }]);
    }

    #[test]
    fn a_journal_superblock_update_does_not_swallow_the_next_commit() {
        let mut tracker = JournalTracker::with_region(vec![SectorRange { start: Sector(1000), len: 1000 }]);
        let mut records: Vec<Record> = loop_device_transaction(1008, 56).into();
        records.extend([sync_write(1000, 8, "jbd2/loop0-8"), flush("kworker/1:2H")]);
        records.extend(loop_device_transaction(1072, 56));
        records.extend(loop_device_transaction(1136, 8));
        let commits: Vec<usize> =
            records.iter().enumerate().filter(|(_, record)| tracker.observe(record).commit).map(|(at, _)| at).collect();
        assert_eq!(commits, [3, 7, 11]);
        assert_eq!(tracker.report().commits, 4, "three transactions and the superblock update, still pending");
    }

    #[test]
    fn a_fua_device_commit_is_one_commit_and_data_flushes_are_none() {
        let header =
            TraceHeader { journal: vec![SectorRange { start: Sector(1000), len: 1000 }], ..TraceHeader::default() };
        let mut tracker = JournalTracker::new(&header);
        let commit_block = request(Op::Write, Flags::SYNC.with(Flags::FUA), 1008, 8, "jbd2/sda1-8");
        let events: Vec<bool> = [
            sync_write(1000, 8, "jbd2/sda1-8"),
            flush("kworker/0:1H"),
            commit_block,
            sync_write(5000, 8, "dd"),
            flush("dd"), // fdatasync of data alone: no commit
            request(Op::Write, Flags::SYNC.with(Flags::FUA).with(Flags::PREFLUSH), 1016, 8, "jbd2/sda1-8"),
        ]
        .iter()
        .map(|record| tracker.observe(record).commit)
        .collect();
        assert_eq!(events, [false, false, true, false, false, true]);
        assert_eq!(tracker.report().source, RegionSource::Header);
    }

    #[test]
    fn the_log_wraps_into_the_whole_region_and_data_written_by_jbd2_is_left_out() {
        let mut estimator = RegionEstimator::new();
        for lap in 0..3 {
            for block in 0..100 {
                estimator.observe(&sync_write(8 + block * 8, 8, "jbd2/loop0-8"));
            }
            estimator.observe(&request(Op::Write, Flags::SYNC.with(Flags::FUA), 0, 8, "jbd2/loop0-8"));
            if lap == 0 {
                estimator.observe(&sync_write(90_000, 8, "jbd2/loop0-8"));
            }
        }
        assert_eq!(estimator.estimate(), vec![SectorRange { start: Sector(0), len: 808 }]);
        assert_eq!(estimator.wraps(), 2);
        assert!(estimator.touches(Sector(90_000), Sector(90_008)));
    }

    #[test]
    fn writes_that_merely_start_at_the_head_without_sync_are_not_log() {
        let mut estimator = RegionEstimator::new();
        estimator.observe(&sync_write(0, 8, "jbd2/loop0-8"));
        assert!(!estimator.observe(&request(Op::Write, Flags::NONE, 8, 8, "kworker/u4:2")));
        assert!(estimator.observe(&sync_write(8, 8, "kworker/1:2H")));
    }

    #[test]
    fn memory_stays_bounded_when_jbd2_writes_everywhere() {
        let mut estimator = RegionEstimator::new();
        for block in 0..(MAX_LOG_RANGES as u64 * 3) {
            estimator.observe(&sync_write(block * 1000, 8, "jbd2/loop0-8"));
        }
        assert!(estimator.ranges.len() <= MAX_LOG_RANGES);
    }
}
