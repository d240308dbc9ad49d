//! One-pass statistics of a trace: counts and bytes by operation, request
//! size distribution, footprint (distinct 4 KiB blocks touched), duration,
//! flags, the busiest processes, the share of journal writes and what
//! [`crate::journal`] infers about the journal (region, commits). What
//! `nandlab trace info` prints; memory grows only with the number of separate
//! extents touched, work per request is independent of its length.

use crate::header::TraceHeader;
use crate::journal::{JournalReport, JournalTracker};
use crate::record::{Flags, Op, ProcessName, Record};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Footprint granularity: the flash page size of every nandlab preset.
pub const FOOTPRINT_BLOCK_BYTES: u64 = 4096;
const SIZE_BUCKETS: usize = 33;

/// Request sizes in power-of-two buckets: bucket `i` holds requests of
/// `[2^i, 2^(i+1))` sectors; bucket 0 also holds zero-length requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeHistogram {
    pub counts: [u64; SIZE_BUCKETS],
}

impl Default for SizeHistogram {
    fn default() -> SizeHistogram {
        SizeHistogram { counts: [0; SIZE_BUCKETS] }
    }
}

impl SizeHistogram {
    fn add(&mut self, sectors: u32) {
        let bucket = if sectors == 0 { 0 } else { 31 - sectors.leading_zeros() as usize };
        self.counts[bucket] += 1;
    }
}

/// Touched 4 KiB blocks as disjoint extents, merged as they come: work per
/// request is logarithmic in the extents whatever the request's length, and
/// memory grows with the number of separate extents, not with their size.
#[derive(Default)]
struct BlockSet {
    /// Extent start → end (exclusive); extents neither overlap nor touch.
    extents: BTreeMap<u64, u64>,
    distinct: u64,
}

impl BlockSet {
    fn insert_range(&mut self, first_block: u64, end_block: u64) {
        if first_block >= end_block {
            return;
        }
        let (mut start, mut end) = (first_block, end_block);
        let before = self.extents.range(..=start).next_back().map(|(&s, &e)| (s, e));
        if let Some((s, e)) = before.filter(|&(_, e)| e >= start) {
            start = s;
            end = end.max(e);
            self.extents.remove(&s);
            self.distinct -= e - s;
        }
        while let Some((s, e)) = self.extents.range(start..=end).next().map(|(&s, &e)| (s, e)) {
            end = end.max(e);
            self.extents.remove(&s);
            self.distinct -= e - s;
        }
        self.extents.insert(start, end);
        self.distinct += end - start;
    }
}

#[derive(Default)]
pub struct TraceSummary {
    pub records: u64,
    pub count_by_op: [u64; 4],
    pub sectors_by_op: [u64; 4],
    pub sizes_by_op: [SizeHistogram; 4],
    pub sync: u64,
    pub fua: u64,
    pub preflush: u64,
    pub meta: u64,
    pub first_ns: Option<u64>,
    pub last_ns: u64,
    pub max_sector_end: u64,
    /// Writes into the header's journal range.
    pub journal_writes: u64,
    processes: HashMap<ProcessName, u64>,
    journal: JournalTracker,
    written: BlockSet,
    read: BlockSet,
    sector_bytes: u64,
}

impl TraceSummary {
    pub fn new(header: &TraceHeader) -> TraceSummary {
        TraceSummary {
            sector_bytes: u64::from(header.sector_size_bytes),
            journal: JournalTracker::new(header),
            ..TraceSummary::default()
        }
    }

    pub fn add(&mut self, record: &Record, header: &TraceHeader) {
        let op = record.op.index();
        self.records += 1;
        self.count_by_op[op] += 1;
        self.sectors_by_op[op] = self.sectors_by_op[op].saturating_add(u64::from(record.len.0));
        self.sizes_by_op[op].add(record.len.0);
        for (flag, counter) in [
            (Flags::SYNC, &mut self.sync),
            (Flags::FUA, &mut self.fua),
            (Flags::PREFLUSH, &mut self.preflush),
            (Flags::META, &mut self.meta),
        ] {
            *counter += u64::from(record.flags.contains(flag));
        }
        self.first_ns.get_or_insert(record.timestamp.0);
        self.last_ns = self.last_ns.max(record.timestamp.0);
        self.max_sector_end = self.max_sector_end.max(record.end().0);
        *self.processes.entry(record.process).or_default() += 1;
        self.journal.observe(record);
        let (first_block, end_block) = self.blocks(record);
        match record.op {
            Op::Write => {
                self.written.insert_range(first_block, end_block);
                self.journal_writes += u64::from(header.is_journal(record.start, record.len));
            }
            Op::Read => self.read.insert_range(first_block, end_block),
            Op::Discard | Op::Flush => {}
        }
    }

    fn blocks(&self, record: &Record) -> (u64, u64) {
        let start_byte = record.start.0.saturating_mul(self.sector_bytes);
        let end_byte = record.end().0.saturating_mul(self.sector_bytes);
        (start_byte / FOOTPRINT_BLOCK_BYTES, end_byte.div_ceil(FOOTPRINT_BLOCK_BYTES))
    }

    pub fn duration_ns(&self) -> u64 {
        self.last_ns - self.first_ns.unwrap_or(0)
    }

    /// Distinct 4 KiB blocks written / read.
    pub fn footprint_blocks(&self) -> (u64, u64) {
        (self.written.distinct, self.read.distinct)
    }

    /// The journal region and commits, from the header when it gives the
    /// journal, else estimated in this one pass (see [`crate::journal`]).
    pub fn journal(&self) -> JournalReport {
        self.journal.report()
    }

    /// The processes that issued most requests, busiest first.
    pub fn top_processes(&self, limit: usize) -> Vec<(ProcessName, u64)> {
        let mut processes: Vec<_> = self.processes.iter().map(|(name, count)| (*name, *count)).collect();
        processes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.as_str().cmp(b.0.as_str())));
        processes.truncate(limit);
        processes
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

fn size_label(bucket: usize, sector_bytes: u64) -> String {
    let bytes = (1u64 << bucket) * sector_bytes;
    match bytes {
        b if b >= 1 << 30 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

impl fmt::Display for TraceSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "requests        {}", self.records)?;
        writeln!(f, "duration        {:.3} s", self.duration_ns() as f64 / 1e9)?;
        writeln!(
            f,
            "address span    {:.1} MiB (highest sector end {})",
            mib(self.max_sector_end.saturating_mul(self.sector_bytes)),
            self.max_sector_end
        )?;
        let (written, read) = self.footprint_blocks();
        writeln!(
            f,
            "footprint       {:.1} MiB written, {:.1} MiB read (distinct 4 KiB blocks)",
            mib(written.saturating_mul(FOOTPRINT_BLOCK_BYTES)),
            mib(read.saturating_mul(FOOTPRINT_BLOCK_BYTES))
        )?;
        writeln!(
            f,
            "flags           sync {}, fua {}, preflush {}, meta {}",
            self.sync, self.fua, self.preflush, self.meta
        )?;
        writeln!(f, "journal writes  {}", self.journal_writes)?;
        write!(f, "{}", self.journal())?;
        writeln!(f, "\n{:<9} {:>12} {:>14}", "operation", "requests", "MiB")?;
        for op in Op::ALL {
            writeln!(
                f,
                "{:<9} {:>12} {:>14.1}",
                op.name(),
                self.count_by_op[op.index()],
                mib(self.sectors_by_op[op.index()].saturating_mul(self.sector_bytes))
            )?;
        }
        writeln!(f, "\nrequest size (from)      read      write    discard")?;
        for bucket in 0..SIZE_BUCKETS {
            let row = [Op::Read, Op::Write, Op::Discard].map(|op| self.sizes_by_op[op.index()].counts[bucket]);
            if row.iter().any(|&count| count > 0) {
                writeln!(
                    f,
                    "{:>19} {:>9} {:>10} {:>10}",
                    size_label(bucket, self.sector_bytes),
                    row[0],
                    row[1],
                    row[2]
                )?;
            }
        }
        writeln!(f, "\nbusiest processes")?;
        for (name, count) in self.top_processes(8) {
            let shown = if name.is_empty() { "(unknown)" } else { name.as_str() };
            writeln!(f, "  {shown:<24} {count:>10}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::SectorRange;
    use crate::record::{Sector, SectorCount, TimestampNs};

    fn record(timestamp: u64, op: Op, start: u64, len: u32, process: &str) -> Record {
        Record {
            timestamp: TimestampNs(timestamp),
            op,
            flags: Flags::NONE,
            start: Sector(start),
            len: SectorCount(len),
            process: ProcessName::new(process),
            stream: None,
        }
    }

    #[test]
    fn counts_footprint_and_journal_share_add_up() {
        let header =
            TraceHeader { journal: vec![SectorRange { start: Sector(1000), len: 100 }], ..TraceHeader::default() };
        let mut summary = TraceSummary::new(&header);
        for r in [
            record(10, Op::Write, 0, 16, "dd"), // blocks 0, 1
            record(20, Op::Write, 8, 16, "dd"), // blocks 1, 2
            record(30, Op::Write, 1000, 8, "jbd2/loop0-8"),
            record(40, Op::Read, 3, 2, "cat"), // block 0
            record(50, Op::Discard, 0, 4096, "kworker/1:1H"),
            record(60, Op::Flush, 0, 0, "kworker/1:1H"),
        ] {
            summary.add(&r, &header);
        }
        assert_eq!(summary.count_by_op, [1, 3, 1, 1]);
        assert_eq!(summary.footprint_blocks(), (4, 1));
        assert_eq!(summary.journal_writes, 1);
        assert_eq!(summary.duration_ns(), 50);
        assert_eq!(summary.sizes_by_op[Op::Write.index()].counts[3], 1);
        assert_eq!(summary.sizes_by_op[Op::Write.index()].counts[4], 2);
        assert_eq!(summary.top_processes(1)[0].0.as_str(), "dd");
        assert!(summary.to_string().contains("discard"));
    }
}
