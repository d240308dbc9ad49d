//! Readers and a writer for the two comma-separated block-trace formats of
//! the public trace repositories:
//!
//! * SNIA IOTTA / MSR Cambridge: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`
//!   with Windows FILETIME timestamps (100 ns ticks), `Read`/`Write`, byte
//!   offsets and sizes;
//! * UMass Trace Repository / SPC: `ASU,LBA,Size,Opcode,Timestamp[,…]` with
//!   LBAs in 512-byte sectors, sizes in bytes, `r`/`w` and seconds.
//!
//! Neither can say discard or flush: the MSR writer leaves those out and
//! reports how many it dropped.

use crate::error::TraceError;
use crate::record::{Flags, Op, ProcessName, Record, TimestampNs};
use crate::text::{byte_range_to_sectors, parse_seconds_ns, parse_u64, show, DeviceLock, LineParser};
use crate::{TraceWrite, WriteSummary};
use std::io::Write;
use std::path::PathBuf;

const MSR_TICK_NS: u64 = 100;
const MSR_HOST: &str = "nandlab";

fn csv_fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&byte| byte == b',').map(<[u8]>::trim_ascii)
}

fn field<'a>(columns: &mut impl Iterator<Item = &'a [u8]>, what: &str) -> Result<&'a [u8], String> {
    columns.next().ok_or_else(|| format!("line ends where the {what} column was expected"))
}

/// Lines that are blank or a column-title row are not records.
fn is_preamble(line: &[u8], title: &[u8]) -> bool {
    let trimmed = line.trim_ascii();
    trimmed.is_empty() || trimmed.len() >= title.len() && trimmed[..title.len()].eq_ignore_ascii_case(title)
}

/// Which of the two CSV layouts a parser reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CsvDialect {
    Msr,
    Umass,
}

pub(crate) struct CsvParser {
    dialect: CsvDialect,
    devices: DeviceLock,
    /// The MSR device name `host,disk`, rebuilt in place for every line.
    device_name: Vec<u8>,
}

impl CsvParser {
    pub(crate) fn new(dialect: CsvDialect, device: Option<&str>) -> CsvParser {
        CsvParser { dialect, devices: DeviceLock::new(device), device_name: Vec::with_capacity(64) }
    }
}

impl LineParser for CsvParser {
    fn parse(&mut self, line: &[u8]) -> Result<Option<Record>, String> {
        match self.dialect {
            CsvDialect::Msr if is_preamble(line, b"timestamp") => Ok(None),
            CsvDialect::Umass if is_preamble(line, b"asu") => Ok(None),
            CsvDialect::Msr => parse_msr(line, &mut self.devices, &mut self.device_name),
            CsvDialect::Umass => parse_umass(line, &mut self.devices),
        }
    }

    fn devices(&self) -> Vec<String> {
        self.devices.devices()
    }
}

/// `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`; `device`
/// is scratch space for the device name.
fn parse_msr(line: &[u8], devices: &mut DeviceLock, device: &mut Vec<u8>) -> Result<Option<Record>, String> {
    let mut columns = csv_fields(line);
    let ticks = parse_u64(field(&mut columns, "Timestamp")?, "the Timestamp (100 ns ticks)")?;
    let host = field(&mut columns, "Hostname")?;
    let disk = field(&mut columns, "DiskNumber")?;
    parse_u64(disk, "the DiskNumber")?;
    let kind = field(&mut columns, "Type")?;
    let op = if kind.eq_ignore_ascii_case(b"read") {
        Op::Read
    } else if kind.eq_ignore_ascii_case(b"write") {
        Op::Write
    } else {
        return Err(format!("Type must be Read or Write, found `{}`", show(kind)));
    };
    let offset = parse_u64(field(&mut columns, "Offset")?, "the Offset (bytes)")?;
    let size = parse_u64(field(&mut columns, "Size")?, "the Size (bytes)")?;
    parse_u64(field(&mut columns, "ResponseTime")?, "the ResponseTime")?;
    if let Some(extra) = columns.next() {
        return Err(format!("unexpected 8th column `{}`: MSR lines have 7", show(extra)));
    }
    device.clear();
    device.extend_from_slice(host);
    device.push(b',');
    device.extend_from_slice(disk);
    if !devices.admit(device)? {
        return Ok(None);
    }
    let (start, len) = byte_range_to_sectors(offset, size)?;
    let timestamp = ticks.checked_mul(MSR_TICK_NS).ok_or("Timestamp is too large")?;
    Ok(Some(Record {
        timestamp: TimestampNs(timestamp),
        op,
        flags: Flags::NONE,
        start,
        len,
        process: ProcessName::from_bytes(host),
        stream: None,
    }))
}

/// `ASU,LBA,Size,Opcode,Timestamp[,…]`
fn parse_umass(line: &[u8], devices: &mut DeviceLock) -> Result<Option<Record>, String> {
    let mut columns = csv_fields(line);
    let asu = field(&mut columns, "ASU")?;
    parse_u64(asu, "the ASU")?;
    let lba = parse_u64(field(&mut columns, "LBA")?, "the LBA (512-byte sectors)")?;
    let size = parse_u64(field(&mut columns, "Size")?, "the Size (bytes)")?;
    let op = match field(&mut columns, "Opcode")? {
        b"r" | b"R" => Op::Read,
        b"w" | b"W" => Op::Write,
        other => return Err(format!("Opcode must be r or w, found `{}`", show(other))),
    };
    let timestamp = parse_seconds_ns(field(&mut columns, "Timestamp")?, "the Timestamp (seconds)")?;
    if !devices.admit(asu)? {
        return Ok(None);
    }
    let offset = lba.checked_mul(u64::from(crate::LINUX_SECTOR_BYTES)).ok_or("LBA is too large")?;
    let (start, len) = byte_range_to_sectors(offset, size)?;
    Ok(Some(Record {
        timestamp: TimestampNs(timestamp),
        op,
        flags: Flags::NONE,
        start,
        len,
        process: ProcessName::default(),
        stream: None,
    }))
}

/// Writes MSR Cambridge CSV. Timestamps start at tick 0 (the original
/// FILETIME epoch is not kept). Host and disk together name the device, so
/// they are constant (`nandlab`, 0) and process names are lost; response
/// times are unknown and written as 0.
pub struct MsrWriter<W: Write> {
    output: W,
    path: PathBuf,
    summary: WriteSummary,
    sector_bytes: u64,
}

impl<W: Write> MsrWriter<W> {
    /// `sector_bytes`: the size of the sectors the records count (the trace
    /// header's); MSR CSV counts bytes.
    pub fn new(output: W, path: PathBuf, sector_bytes: u32) -> MsrWriter<W> {
        MsrWriter { output, path, summary: WriteSummary::default(), sector_bytes: u64::from(sector_bytes) }
    }
}

impl<W: Write> TraceWrite for MsrWriter<W> {
    fn write(&mut self, record: &Record) -> Result<(), TraceError> {
        let kind = match record.op {
            Op::Read => "Read",
            Op::Write => "Write",
            Op::Discard | Op::Flush => {
                self.summary.left_out[record.op.index()] += 1;
                return Ok(());
            }
        };
        let (offset, length) = crate::byte_extent(record, self.sector_bytes)
            .map_err(|message| TraceError::Unrepresentable { path: self.path.clone(), message })?;
        writeln!(self.output, "{},{MSR_HOST},0,{kind},{offset},{length},0", record.timestamp.0 / MSR_TICK_NS)
            .map_err(|source| TraceError::io(self.path.clone(), source))?;
        self.summary.written += 1;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<WriteSummary, TraceError> {
        self.output.flush().map_err(|source| TraceError::io(self.path.clone(), source))?;
        Ok(self.summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Sector, SectorCount};

    #[test]
    fn msr_lines_parse() {
        let mut parser = CsvParser::new(CsvDialect::Msr, None);
        assert_eq!(parser.parse(b"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"), Ok(None));
        let record =
            parser.parse(b"128166372003061629,hm,1,Read,3154132992,32768,155547").expect("valid").expect("record");
        assert_eq!((record.op, record.start, record.len), (Op::Read, Sector(6_160_416), SectorCount(64)));
        assert_eq!(record.timestamp, TimestampNs(12_816_637_200_306_162_900));
        assert_eq!(record.process.as_str(), "hm");
    }

    #[test]
    fn msr_malformed_lines_say_what_is_wrong() {
        let mut parser = CsvParser::new(CsvDialect::Msr, None);
        assert!(parser.parse(b"128166372003061629,hm,1,Trim,3154132992,32768,155547").unwrap_err().contains("Type"));
        assert!(parser.parse(b"128166372003061629,hm,1,Read,3154132992").unwrap_err().contains("Size"));
        assert!(parser.parse(b"12816637200306162x,hm,1,Read,0,512,1").unwrap_err().contains("Timestamp"));
        parser.parse(b"1,hm,1,Read,0,512,1").expect("valid");
        assert!(parser.parse(b"2,hm,2,Read,0,512,1").unwrap_err().contains("device"));
    }

    #[test]
    fn umass_lines_parse() {
        let mut parser = CsvParser::new(CsvDialect::Umass, None);
        let record = parser.parse(b"0,20941264,8192,W,0.551706").expect("valid").expect("record");
        assert_eq!((record.op, record.start, record.len), (Op::Write, Sector(20_941_264), SectorCount(16)));
        assert_eq!(record.timestamp, TimestampNs(551_706_000));
        let read = parser.parse(b"0,303567,3584,r,0.000000,extra").expect("valid").expect("record");
        assert_eq!((read.op, read.len), (Op::Read, SectorCount(7)));
    }

    #[test]
    fn umass_malformed_lines_say_what_is_wrong() {
        let mut parser = CsvParser::new(CsvDialect::Umass, None);
        assert!(parser.parse(b"0,20941264,8192,x,0.5").unwrap_err().contains("Opcode"));
        assert!(parser.parse(b"0,20941264,8192,w").unwrap_err().contains("Timestamp"));
        assert!(parser.parse(b"0,-5,8192,w,0.5").unwrap_err().contains("LBA"));
    }
}
