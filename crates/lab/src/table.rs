//! A trace file as columns, one row per request in the trace's order, for
//! data frames (`nandlab.read_trace`). Addresses are in 512-byte sectors
//! whatever the trace's own sector size, as the replay sees them.

use crate::drive::SECTOR_BYTES;
use crate::error::{Context as _, Result};
use crate::replay::TraceSource;
use crate::{Observer, Phase, Progress, OBSERVER_INTERVAL};
use nandlab_trace::host::host_event;
use nandlab_trace::{Flags, Record, TraceHeader};
use std::collections::HashMap;

/// One column per field a trace records; every column has one entry per
/// request. Text columns are codes into a small table of names, as data
/// frames store categories.
#[derive(Clone, Debug, Default)]
pub struct TraceTable {
    pub header: TraceHeader,
    /// Nanoseconds since the trace's first request.
    pub time_ns: Vec<u64>,
    /// [`Op::index`]: a code into [`OP_NAMES`].
    pub op: Vec<u8>,
    pub start_sector: Vec<u64>,
    /// Zero for flushes.
    pub sectors: Vec<u64>,
    /// The issuing process (`comm`): a code into `processes`.
    pub process: Vec<u32>,
    /// Process names in order of first appearance; `""` when the trace does not say.
    pub processes: Vec<String>,
    /// The block layer's flags as [`Flags::bits`]; [`flag_letters`] names them.
    pub flags: Vec<u8>,
    /// The write-stream tag, when the trace carries one.
    pub stream: Vec<Option<u8>>,
    /// The request lies in the file system's journal (known from a capture's header).
    pub in_journal: Vec<bool>,
    /// The replay counts the request as a jbd2 commit.
    pub journal_commit: Vec<bool>,
    process_codes: HashMap<String, u32>,
}

/// Names of the operation codes of [`TraceTable::op`].
pub const OP_NAMES: [&str; 4] = ["read", "write", "discard", "flush"];

/// The `rwbs` letters of flag bits (`P`reflush, `F`ua, `S`ync, `M`eta; `-` for none).
pub fn flag_letters(bits: u8) -> String {
    Flags::from_bits(bits).map_or_else(|| format!("?{bits:#x}"), |flags| flags.to_string())
}

impl TraceTable {
    pub fn len(&self) -> usize {
        self.time_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }

    fn push(&mut self, record: &Record, commit: bool) -> Result<()> {
        let scale = (u64::from(self.header.sector_size_bytes) / SECTOR_BYTES).max(1);
        let process = self.process_code(record.process.as_str())?;
        self.time_ns.push(record.timestamp.0);
        self.op.push(u8::try_from(record.op.index())?);
        self.start_sector.push(record.start.0.checked_mul(scale).context("start sector overflows u64")?);
        self.sectors.push(u64::from(record.len.0) * scale);
        self.process.push(process);
        self.flags.push(record.flags.bits());
        self.stream.push(record.stream.map(|tag| tag.0));
        let in_journal = !self.header.journal.is_empty() && self.header.is_journal(record.start, record.len);
        self.in_journal.push(in_journal);
        self.journal_commit.push(commit);
        Ok(())
    }

    fn process_code(&mut self, name: &str) -> Result<u32> {
        if let Some(&code) = self.process_codes.get(name) {
            return Ok(code);
        }
        let code = u32::try_from(self.processes.len())?;
        self.processes.push(name.to_owned());
        self.process_codes.insert(name.to_owned(), code);
        Ok(code)
    }
}

/// Reads every request of a trace into columns; `observer` sees the count
/// read so far and may stop the reading.
pub fn read_table(source: &TraceSource<'_>, observer: &mut dyn Observer) -> Result<TraceTable> {
    let mut trace = source.open()?;
    let mut table = TraceTable { header: trace.header().clone(), ..TraceTable::default() };
    let mut journal = source.journal(&table.header);
    for record in &mut trace {
        let record = record?;
        let commit = host_event(&record, &table.header, &mut journal).journal_commit;
        table.push(&record, commit)?;
        let done = table.len() as u64;
        if done.is_multiple_of(OBSERVER_INTERVAL) {
            observer.progress(Progress { phase: Phase::Measure, done, total: 0 })?;
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use nandlab_trace::Op;

    /// MSR Cambridge CSV: Timestamp (100 ns ticks), host, disk, type, offset (bytes), size (bytes), response.
    const MSR: &str = "128166372003061629,hm,0,Write,4096,8192,100\n\
                       128166372003061729,hm,0,Read,0,512,100\n\
                       128166372013061629,hm,0,Write,1048576,4096,100\n";

    #[test]
    fn every_request_becomes_one_row_in_512_byte_sectors() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("hm_0.csv");
        std::fs::write(&path, MSR).expect("trace");
        let table = read_table(&TraceSource::file(&path), &mut |_| Ok(())).expect("table");
        assert_eq!(table.len(), 3);
        assert!(Op::ALL.iter().all(|op| OP_NAMES[op.index()] == op.name()));
        let ops: Vec<&str> = table.op.iter().map(|&code| OP_NAMES[usize::from(code)]).collect();
        assert_eq!(ops, ["write", "read", "write"]);
        assert_eq!(table.processes.len(), table.process.iter().map(|&code| code as usize + 1).max().unwrap_or(0));
        assert_eq!(table.start_sector, [8, 0, 2048]);
        assert_eq!(table.sectors, [16, 1, 8]);
        assert_eq!(table.time_ns[0], 0);
        assert_eq!(table.time_ns[2], 1_000_000_000, "10^7 ticks of 100 ns");
    }

    #[test]
    fn the_observer_stops_a_long_read() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("long.csv");
        let line = "128166372003061629,hm,0,Write,4096,4096,100\n";
        std::fs::write(&path, line.repeat(3 * OBSERVER_INTERVAL as usize)).expect("trace");
        let mut calls = 0;
        let error = read_table(&TraceSource::file(&path), &mut |_| {
            calls += 1;
            Err(Error::Cancelled)
        })
        .expect_err("stopped");
        assert!(error.is_cancelled());
        assert_eq!(calls, 1);
    }
}
