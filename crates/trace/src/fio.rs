//! fio iolog versions 2 and 3 (fio's `read_iolog`/`write_iolog`):
//!
//! ```text
//! fio version 2 iolog           fio version 3 iolog
//! /dev/sdb add                  0 /dev/sdb add
//! /dev/sdb open                 3 /dev/sdb open
//! /dev/sdb write 0 4096         7 /dev/sdb write 0 4096
//! /dev/sdb wait 250 0           ...
//! /dev/sdb trim 4096 8192
//! /dev/sdb sync 0 0
//! ```
//!
//! Offsets and lengths are bytes. Version 3 prefixes every line with a
//! timestamp in microseconds since the start (fio's `log_io_u` writes
//! `utime_since_now`). Version 2 has none; time advances only by `wait`
//! actions, whose offset column is the time **in milliseconds since the job
//! started** that fio waits for — not a relative microsecond delay, whatever
//! the HOWTO says: with fio 3.33, fifty `wait 10000 0` lines take 10 s in
//! total, not 0.5 s or 500 s (measurements in docs/trace-format.md). `sync`,
//! `datasync` and `sync_file_range` become flushes; file actions (`add`,
//! `open`, `close`, `unlink`) carry no I/O and are skipped.

use crate::error::TraceError;
use crate::record::{Flags, Op, ProcessName, Record, Sector, SectorCount, TimestampNs};
use crate::text::{byte_range_to_sectors, fields, next_field, parse_u64, show, DeviceLock, LineParser};
use crate::{TraceWrite, WriteSummary};
use std::io::Write;
use std::path::PathBuf;

const NS_PER_US: u64 = 1_000;
const US_PER_MS: u64 = 1_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FioVersion {
    V2,
    V3,
}

impl FioVersion {
    fn banner(self) -> &'static str {
        match self {
            FioVersion::V2 => "fio version 2 iolog",
            FioVersion::V3 => "fio version 3 iolog",
        }
    }
}

pub(crate) struct FioParser {
    version: Option<FioVersion>,
    devices: DeviceLock,
    clock_us: u64,
}

impl FioParser {
    pub(crate) fn new(device: Option<&str>) -> FioParser {
        FioParser { version: None, devices: DeviceLock::new(device), clock_us: 0 }
    }

    fn parse_banner(&mut self, line: &[u8]) -> Result<Option<Record>, String> {
        let line = line.trim_ascii();
        self.version = Some(if line == FioVersion::V2.banner().as_bytes() {
            FioVersion::V2
        } else if line == FioVersion::V3.banner().as_bytes() {
            FioVersion::V3
        } else {
            return Err(format!(
                "first line must be `fio version 2 iolog` or `fio version 3 iolog`, found `{}`",
                show(line)
            ));
        });
        Ok(None)
    }
}

impl LineParser for FioParser {
    fn parse(&mut self, line: &[u8]) -> Result<Option<Record>, String> {
        let Some(version) = self.version else {
            return self.parse_banner(line);
        };
        let mut columns = fields(line);
        let Some(first) = columns.next() else {
            return Ok(None);
        };
        let (file, timestamp_us) = match version {
            FioVersion::V2 => (first, None),
            FioVersion::V3 => {
                (next_field(&mut columns, "the file name")?, Some(parse_u64(first, "the timestamp (µs)")?))
            }
        };
        let action = next_field(&mut columns, "the action")?;
        let op = match action {
            b"read" => Op::Read,
            b"write" => Op::Write,
            b"trim" => Op::Discard,
            b"sync" | b"datasync" | b"sync_file_range" => Op::Flush,
            b"wait" => {
                let until_ms = parse_u64(
                    next_field(&mut columns, "the wait time (ms since start)")?,
                    "the wait time (ms since start)",
                )?;
                if version == FioVersion::V2 {
                    self.clock_us = self.clock_us.max(until_ms.saturating_mul(US_PER_MS));
                }
                return Ok(None);
            }
            b"add" | b"open" | b"close" | b"unlink" => return Ok(None),
            other => return Err(format!("unknown action `{}`", show(other))),
        };
        if let Some(timestamp_us) = timestamp_us {
            self.clock_us = timestamp_us;
        }
        let (start, len) = if op == Op::Flush {
            (Sector(0), SectorCount(0))
        } else {
            let offset = parse_u64(next_field(&mut columns, "the offset (bytes)")?, "the offset (bytes)")?;
            let length = parse_u64(next_field(&mut columns, "the length (bytes)")?, "the length (bytes)")?;
            byte_range_to_sectors(offset, length)?
        };
        if !self.devices.admit(file)? {
            return Ok(None);
        }
        let timestamp = TimestampNs(self.clock_us.checked_mul(NS_PER_US).ok_or("timestamp is too large")?);
        Ok(Some(Record {
            timestamp,
            op,
            flags: Flags::NONE,
            start,
            len,
            process: ProcessName::default(),
            stream: None,
        }))
    }

    fn devices(&self) -> Vec<String> {
        self.devices.devices()
    }
}

/// Writes a fio iolog that `fio --read_iolog=FILE` replays on `target`
/// (override with fio's `replay_redirect`). Version 2 keeps the timing, to
/// the millisecond, as a `wait` until each new millisecond a request starts
/// in; version 3 as microsecond timestamps.
pub struct FioWriter<W: Write> {
    output: W,
    path: PathBuf,
    version: FioVersion,
    target: String,
    last_timestamp_us: u64,
    summary: WriteSummary,
    sector_bytes: u64,
}

impl<W: Write> FioWriter<W> {
    /// `sector_bytes`: the size of the sectors the records count (the trace
    /// header's); fio iologs count bytes.
    pub fn new(
        mut output: W,
        path: PathBuf,
        version: FioVersion,
        target: &str,
        sector_bytes: u32,
    ) -> Result<FioWriter<W>, TraceError> {
        let preamble = match version {
            FioVersion::V2 => format!("{}\n{target} add\n{target} open\n", version.banner()),
            FioVersion::V3 => format!("{}\n0 {target} add\n0 {target} open\n", version.banner()),
        };
        output.write_all(preamble.as_bytes()).map_err(|source| TraceError::io(path.clone(), source))?;
        Ok(FioWriter {
            output,
            path,
            version,
            target: target.to_owned(),
            last_timestamp_us: 0,
            summary: WriteSummary::default(),
            sector_bytes: u64::from(sector_bytes),
        })
    }

    fn emit(&mut self, line: std::fmt::Arguments<'_>) -> Result<(), TraceError> {
        let written = match self.version {
            FioVersion::V2 => writeln!(self.output, "{} {line}", self.target),
            FioVersion::V3 => writeln!(self.output, "{} {} {line}", self.last_timestamp_us, self.target),
        };
        written.map_err(|source| TraceError::io(self.path.clone(), source))
    }
}

impl<W: Write> TraceWrite for FioWriter<W> {
    fn write(&mut self, record: &Record) -> Result<(), TraceError> {
        let timestamp_us = record.timestamp.0 / NS_PER_US;
        let previous_ms = self.last_timestamp_us / US_PER_MS;
        self.last_timestamp_us = self.last_timestamp_us.max(timestamp_us);
        let now_ms = self.last_timestamp_us / US_PER_MS;
        if self.version == FioVersion::V2 && now_ms > previous_ms {
            self.emit(format_args!("wait {now_ms} 0"))?;
        }
        let (offset, length) = crate::byte_extent(record, self.sector_bytes)
            .map_err(|message| TraceError::Unrepresentable { path: self.path.clone(), message })?;
        match record.op {
            Op::Read => self.emit(format_args!("read {offset} {length}"))?,
            Op::Write => self.emit(format_args!("write {offset} {length}"))?,
            Op::Discard => self.emit(format_args!("trim {offset} {length}"))?,
            Op::Flush => self.emit(format_args!("sync 0 0"))?,
        }
        self.summary.written += 1;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<WriteSummary, TraceError> {
        self.emit(format_args!("close"))?;
        self.output.flush().map_err(|source| TraceError::io(self.path.clone(), source))?;
        Ok(self.summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(lines: &[&str]) -> Result<Vec<Record>, String> {
        let mut parser = FioParser::new(None);
        let mut records = Vec::new();
        for line in lines {
            records.extend(parser.parse(line.as_bytes())?);
        }
        Ok(records)
    }

    #[test]
    fn version_2_time_advances_to_each_wait_in_milliseconds_since_start() {
        let lines = [
            "fio version 2 iolog",
            "/dev/sdb add",
            "/dev/sdb open",
            "/dev/sdb write 0 4096",
            "/dev/sdb wait 250 0",
            "/dev/sdb trim 4096 8192",
            "/dev/sdb wait 250 0",
            "/dev/sdb wait 100 0",
            "/dev/sdb sync 0 0",
            "/dev/sdb wait 400 0",
            "/dev/sdb read 0 512",
            "/dev/sdb close",
        ];
        let records = parse_all(&lines).expect("valid log");
        let summary: Vec<_> = records.iter().map(|r| (r.op, r.start.0, r.len.0, r.timestamp.0)).collect();
        assert_eq!(
            summary,
            vec![
                (Op::Write, 0, 8, 0),
                (Op::Discard, 8, 16, 250_000_000),
                (Op::Flush, 0, 0, 250_000_000),
                (Op::Read, 0, 1, 400_000_000)
            ]
        );
    }

    #[test]
    fn version_3_lines_carry_microsecond_timestamps() {
        let records =
            parse_all(&["fio version 3 iolog", "0 f add", "872 f open", "878 f read 16384 16384", "10001677 f close"])
                .expect("valid log");
        assert_eq!(records.len(), 1);
        assert_eq!(
            (records[0].op, records[0].start, records[0].timestamp),
            (Op::Read, Sector(32), TimestampNs(878_000))
        );
    }

    #[test]
    fn malformed_logs_say_what_is_wrong() {
        assert!(parse_all(&["fio version 1 iolog"]).unwrap_err().contains("first line"));
        assert!(parse_all(&["fio version 2 iolog", "/dev/sdb scribble 0 4096"])
            .unwrap_err()
            .contains("unknown action"));
        assert!(parse_all(&["fio version 2 iolog", "/dev/sdb write 0"]).unwrap_err().contains("length"));
        assert!(parse_all(&["fio version 3 iolog", "x f write 0 4096"]).unwrap_err().contains("timestamp"));
    }
}
