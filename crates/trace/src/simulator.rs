//! The ASCII input traces of two storage simulators, one request per line in
//! five whitespace-separated columns:
//!
//! ```text
//! MQSim    (IO_Flow_Trace_Based)    DiskSim  (iotrace_ascii_get_ioreq_event)
//! 1000 0 2048 8 0                   0.001000 0 2048 8 0
//! arrival_ns device lba sectors type arrival_ms device blkno blocks flags
//! ```
//!
//! * MQSim: arrival time in integer nanoseconds, device number, start LBA
//!   and size in 512-byte sectors, type `0` = write, `1` = read (MQSim's
//!   `ASCII_Trace_Definition.h`).
//! * DiskSim: arrival time in (fractional) milliseconds, device number,
//!   block number and size in 512-byte blocks, flags in hexadecimal (DiskSim
//!   scans them with `%x`) whose bit 0 means read; other bits (DiskSim's
//!   synchronous/asynchronous hints) are accepted and dropped.
//!
//! Neither can say discard or flush: the writer leaves those out and reports
//! how many it dropped, like the MSR writer.

use crate::error::TraceError;
use crate::record::{Flags, Op, ProcessName, Record, Sector, SectorCount, TimestampNs};
use crate::text::{fields, next_field, parse_seconds_ns, parse_u64, show, DeviceLock, LineParser};
use crate::{TraceWrite, WriteSummary};
use std::io::Write;
use std::path::PathBuf;

const NS_PER_MS: u64 = 1_000_000;
const DISKSIM_READ_FLAG: u64 = 0x1;
const MQSIM_WRITE_CODE: &[u8] = b"0";
const MQSIM_READ_CODE: &[u8] = b"1";

/// Which simulator's columns a parser or writer speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SimulatorDialect {
    MqSim,
    DiskSim,
}

pub(crate) struct SimulatorParser {
    dialect: SimulatorDialect,
    devices: DeviceLock,
}

impl SimulatorParser {
    pub(crate) fn new(dialect: SimulatorDialect, device: Option<&str>) -> SimulatorParser {
        SimulatorParser { dialect, devices: DeviceLock::new(device) }
    }
}

impl LineParser for SimulatorParser {
    fn parse(&mut self, line: &[u8]) -> Result<Option<Record>, String> {
        let mut columns = fields(line);
        let Some(time) = columns.next() else {
            return Ok(None);
        };
        let timestamp = match self.dialect {
            SimulatorDialect::MqSim => parse_u64(time, "the arrival time (ns)")?,
            SimulatorDialect::DiskSim => parse_milliseconds_ns(time)?,
        };
        let device = next_field(&mut columns, "the device number")?;
        parse_u64(device, "the device number")?;
        let start = parse_u64(next_field(&mut columns, "the start sector")?, "the start sector")?;
        let size = parse_u64(next_field(&mut columns, "the size in sectors")?, "the size in sectors")?;
        let len =
            u32::try_from(size).map_err(|_| format!("size of {size} sectors is longer than a block request can be"))?;
        start.checked_add(size).ok_or_else(|| format!("start sector {start} + size {size} overflows"))?;
        let op = match self.dialect {
            SimulatorDialect::MqSim => {
                parse_mqsim_type(next_field(&mut columns, "the request type (0 write, 1 read)")?)?
            }
            SimulatorDialect::DiskSim => {
                parse_disksim_flags(next_field(&mut columns, "the flags (hex, bit 0 = read)")?)?
            }
        };
        if let Some(extra) = columns.next() {
            return Err(format!("unexpected 6th column `{}`: lines have 5", show(extra)));
        }
        if !self.devices.admit(device)? {
            return Ok(None);
        }
        let record = Record {
            timestamp: TimestampNs(timestamp),
            op,
            flags: Flags::NONE,
            start: Sector(start),
            len: SectorCount(len),
            process: ProcessName::default(),
            stream: None,
        };
        Ok(Some(record))
    }

    fn devices(&self) -> Vec<String> {
        self.devices.devices()
    }
}

fn parse_mqsim_type(field: &[u8]) -> Result<Op, String> {
    match field {
        MQSIM_WRITE_CODE => Ok(Op::Write),
        MQSIM_READ_CODE => Ok(Op::Read),
        other => Err(format!("request type must be 0 (write) or 1 (read), found `{}`", show(other))),
    }
}

fn parse_disksim_flags(field: &[u8]) -> Result<Op, String> {
    let digits = field.strip_prefix(b"0x").or_else(|| field.strip_prefix(b"0X")).unwrap_or(field);
    let bad = || format!("expected the flags (hexadecimal, bit 0 = read), found `{}`", show(field));
    let text = std::str::from_utf8(digits).map_err(|_| bad())?;
    if text.is_empty() || text.len() > 16 || !text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let flags = u64::from_str_radix(text, 16).map_err(|_| bad())?;
    Ok(if flags & DISKSIM_READ_FLAG != 0 { Op::Read } else { Op::Write })
}

/// `12.5` milliseconds → 12 500 000 ns, exactly: a millisecond value read
/// as seconds is a thousand times the nanoseconds, and the first six
/// fraction digits (all a nanosecond resolves) survive the division.
fn parse_milliseconds_ns(field: &[u8]) -> Result<u64, String> {
    parse_seconds_ns(field, "the arrival time")
        .map(|thousand_times| thousand_times / 1_000)
        .map_err(|_| format!("expected the arrival time (decimal milliseconds below 2^64 ps), found `{}`", show(field)))
}

/// Writes an MQSim or DiskSim ASCII trace of device 0. Times start at the
/// trace's first request; DiskSim's are written in milliseconds with six
/// decimals, so nanoseconds survive the round trip.
pub(crate) struct SimulatorWriter<W: Write> {
    output: W,
    path: PathBuf,
    dialect: SimulatorDialect,
    summary: WriteSummary,
}

impl<W: Write> SimulatorWriter<W> {
    pub(crate) fn new(output: W, path: PathBuf, dialect: SimulatorDialect) -> SimulatorWriter<W> {
        SimulatorWriter { output, path, dialect, summary: WriteSummary::default() }
    }
}

impl<W: Write> TraceWrite for SimulatorWriter<W> {
    fn write(&mut self, record: &Record) -> Result<(), TraceError> {
        let is_read = match record.op {
            Op::Read => true,
            Op::Write => false,
            Op::Discard | Op::Flush => {
                self.summary.left_out[record.op.index()] += 1;
                return Ok(());
            }
        };
        let (start, len, ns) = (record.start.0, record.len.0, record.timestamp.0);
        let written = match self.dialect {
            SimulatorDialect::MqSim => writeln!(self.output, "{ns} 0 {start} {len} {}", u8::from(is_read)),
            SimulatorDialect::DiskSim => {
                let (ms, ns_rest) = (ns / NS_PER_MS, ns % NS_PER_MS);
                writeln!(self.output, "{ms}.{ns_rest:06} 0 {start} {len} {}", u8::from(is_read))
            }
        };
        written.map_err(|source| TraceError::io(self.path.clone(), source))?;
        self.summary.written += 1;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<WriteSummary, TraceError> {
        self.output.flush().map_err(|source| TraceError::io(self.path.clone(), source))?;
        Ok(self.summary)
    }
}

/// What a line of five whitespace-separated columns looks like, for format
/// detection: a decimal point in the time column says DiskSim; all-integer
/// columns ending in type 0 or 1 say MQSim. (A DiskSim trace with integer
/// times and flags 0/1 reads the same either way but for the time unit; it
/// is taken as MQSim and needs `--format disksim`.)
pub(crate) fn looks_like(line: &[u8]) -> Option<SimulatorDialect> {
    let columns: Vec<&[u8]> = fields(line).collect();
    let [time, device, start, size, kind] = columns[..] else {
        return None;
    };
    let is_integer = |field: &[u8]| !field.is_empty() && field.iter().all(u8::is_ascii_digit);
    if ![device, start, size].into_iter().all(is_integer) {
        return None;
    }
    if is_integer(time) && matches!(kind, MQSIM_WRITE_CODE | MQSIM_READ_CODE) {
        return Some(SimulatorDialect::MqSim);
    }
    let time_is_decimal = time.contains(&b'.') && parse_milliseconds_ns(time).is_ok();
    (time_is_decimal && parse_disksim_flags(kind).is_ok()).then_some(SimulatorDialect::DiskSim)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(dialect: SimulatorDialect, line: &str) -> Result<Option<Record>, String> {
        SimulatorParser::new(dialect, None).parse(line.as_bytes())
    }

    #[test]
    fn mqsim_lines_parse() {
        let write = parse(SimulatorDialect::MqSim, "4911500 0 2359296 16 0").expect("valid").expect("record");
        assert_eq!(
            (write.timestamp, write.op, write.start, write.len),
            (TimestampNs(4_911_500), Op::Write, Sector(2_359_296), SectorCount(16))
        );
        let read = parse(SimulatorDialect::MqSim, "5000000 0 8 1 1").expect("valid").expect("record");
        assert_eq!(read.op, Op::Read);
        assert_eq!(parse(SimulatorDialect::MqSim, "   "), Ok(None));
    }

    #[test]
    fn disksim_lines_parse() {
        let read = parse(SimulatorDialect::DiskSim, "12.500001 0 2048 8 1").expect("valid").expect("record");
        assert_eq!(
            (read.timestamp, read.op, read.start, read.len),
            (TimestampNs(12_500_001), Op::Read, Sector(2048), SectorCount(8))
        );
        let write = parse(SimulatorDialect::DiskSim, "0.000000 1 7 16 0x8").expect("valid").expect("record");
        assert_eq!(write.op, Op::Write);
        let read_with_hints = parse(SimulatorDialect::DiskSim, "3 0 7 16 ff").expect("valid").expect("record");
        assert_eq!((read_with_hints.op, read_with_hints.timestamp), (Op::Read, TimestampNs(3_000_000)));
    }

    #[test]
    fn malformed_lines_say_what_is_wrong() {
        let mqsim = |line| parse(SimulatorDialect::MqSim, line).unwrap_err();
        assert!(mqsim("1.5 0 8 8 0").contains("arrival time"));
        assert!(mqsim("1 0 8 8 2").contains("0 (write) or 1 (read)"));
        assert!(mqsim("1 0 8 8").contains("request type"));
        assert!(mqsim("1 0 8 8 0 9").contains("6th column"));
        assert!(mqsim("1 0 8 4294967296 0").contains("longer than a block request"));
        assert!(mqsim("1 0 18446744073709551615 8 0").contains("overflows"));
        let disksim = |line| parse(SimulatorDialect::DiskSim, line).unwrap_err();
        assert!(disksim("1e3 0 8 8 0").contains("decimal milliseconds"));
        assert!(disksim("1.0 0 8 8 zz").contains("hexadecimal"));
        assert!(disksim("1.0 x 8 8 0").contains("device number"));
    }

    #[test]
    fn a_second_device_needs_choosing() {
        let mut parser = SimulatorParser::new(SimulatorDialect::MqSim, None);
        parser.parse(b"1 0 8 8 0").expect("first device");
        assert!(parser.parse(b"2 1 8 8 0").unwrap_err().contains("--trace-device"));
        let mut chosen = SimulatorParser::new(SimulatorDialect::MqSim, Some("1"));
        assert_eq!(chosen.parse(b"1 0 8 8 0"), Ok(None));
        assert!(chosen.parse(b"2 1 8 8 0").expect("valid").is_some());
    }

    #[test]
    fn writers_keep_nanoseconds_and_leave_out_what_they_cannot_say() {
        for (dialect, expected) in
            [(SimulatorDialect::MqSim, "12500001 0 64 8 1\n"), (SimulatorDialect::DiskSim, "12.500001 0 64 8 1\n")]
        {
            let mut output = Vec::new();
            let mut writer = Box::new(SimulatorWriter::new(&mut output, PathBuf::from("t"), dialect));
            let read = Record {
                timestamp: TimestampNs(12_500_001),
                op: Op::Read,
                flags: Flags::NONE,
                start: Sector(64),
                len: SectorCount(8),
                process: ProcessName::default(),
                stream: None,
            };
            writer.write(&read).expect("writable");
            writer.write(&Record { op: Op::Discard, ..read }).expect("writable");
            let summary = writer.finish().expect("finishes");
            assert_eq!((summary.written, summary.left_out), (1, [0, 0, 1, 0]));
            assert_eq!(String::from_utf8(output).expect("ascii"), expected);
        }
    }

    #[test]
    fn detection_tells_the_two_apart() {
        assert_eq!(looks_like(b"4911500 0 2359296 16 0"), Some(SimulatorDialect::MqSim));
        assert_eq!(looks_like(b"0.000000 0 2048 8 1"), Some(SimulatorDialect::DiskSim));
        assert_eq!(looks_like(b"0.000000 0 2048 8 1 extra"), None);
        assert_eq!(looks_like(b"5 0 2048 8 7"), None);
    }
}
