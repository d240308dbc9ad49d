//! nandlab-trace: block traces. The [`Record`] every part of nandlab speaks,
//! nandlab's own compact trace format, and streaming readers (constant
//! memory, one record at a time) for the formats block traces come in:
//! tracefs `block_rq_issue` text, blkparse text, SNIA/MSR Cambridge CSV,
//! UMass/SPC CSV, fio iolog v2/v3 and the MQSim and DiskSim ASCII traces.
//! Writers for the native format, fio iologs, MSR CSV, MQSim and DiskSim.
//! [`open`] tells formats apart by content. [`journal`] infers where a file
//! system's journal lies and when it commits from the requests alone.
//!
//! The file formats are documented in docs/trace-format.md.

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod blkparse;
mod csv;
mod error;
mod fio;
mod header;
pub mod host;
pub mod journal;
mod native;
mod output;
mod record;
mod simulator;
mod summary;
mod text;
mod tracefs;

pub use crate::csv::MsrWriter;
pub use crate::error::TraceError;
pub use crate::fio::{FioVersion, FioWriter};
pub use crate::header::{CaptureInfo, SectorRange, TraceHeader, SECTOR_BYTES_MAX, SECTOR_BYTES_MIN};
pub use crate::native::{NativeReader, NativeWriter};
pub use crate::output::{write_output, write_output_with, Access, OutputFile, OutputPath};
pub use crate::record::{
    Flags, Op, ProcessName, Record, Sector, SectorCount, StreamTag, TimestampNs, TIMESTAMP_NS_MAX,
};
pub use crate::summary::{SizeHistogram, TraceSummary};

use crate::simulator::{SimulatorDialect, SimulatorParser, SimulatorWriter};
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter};
use std::path::Path;

/// The Linux block layer counts in 512-byte sectors whatever the device's
/// logical block size; every text format is converted to these.
pub const LINUX_SECTOR_BYTES: u32 = 512;
const IO_BUFFER_BYTES: usize = 1 << 20;
const DETECT_LINES: usize = 32;
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// A streaming source of records. Iteration stops after the first error.
pub trait TraceRead: Iterator<Item = Result<Record, TraceError>> {
    fn header(&self) -> &TraceHeader;

    /// The devices (as `--trace-device` names them) of the requests read so far:
    /// the one device a trace read without a filter is for, or the devices
    /// a `device` filter skipped (at most 16). Empty for formats that hold
    /// one device and name none (nandlab's own).
    fn devices(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A streaming sink of records. `finish` must be called: it writes trailers
/// and flushes, and reports records the format could not hold.
pub trait TraceWrite {
    fn write(&mut self, record: &Record) -> Result<(), TraceError>;
    fn finish(self: Box<Self>) -> Result<WriteSummary, TraceError>;
}

/// What a writer did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteSummary {
    pub written: u64,
    /// Records left out because the format has no way to say them, by
    /// [`Op::index`] (MSR CSV knows only reads and writes).
    pub left_out: [u64; 4],
}

/// A trace file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// nandlab's own binary format (`.nlt`).
    Native,
    /// tracefs event text (`block:block_rq_issue`).
    Tracefs,
    /// blkparse default text output.
    Blkparse,
    /// SNIA IOTTA / MSR Cambridge CSV.
    Msr,
    /// UMass Trace Repository / SPC CSV.
    Umass,
    /// fio iolog version 2 (reading accepts either version).
    FioV2,
    /// fio iolog version 3 (reading accepts either version).
    FioV3,
    /// MQSim's ASCII trace (`IO_Flow_Trace_Based`).
    MqSim,
    /// DiskSim's ASCII trace (`iotrace_ascii_get_ioreq_event`).
    DiskSim,
}

impl Format {
    pub const ALL: [Format; 9] = [
        Format::Native,
        Format::Tracefs,
        Format::Blkparse,
        Format::Msr,
        Format::Umass,
        Format::FioV2,
        Format::FioV3,
        Format::MqSim,
        Format::DiskSim,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::Tracefs => "tracefs",
            Format::Blkparse => "blkparse",
            Format::Msr => "msr",
            Format::Umass => "umass",
            Format::FioV2 => "fio-v2",
            Format::FioV3 => "fio-v3",
            Format::MqSim => "mqsim",
            Format::DiskSim => "disksim",
        }
    }

    pub fn from_name(name: &str) -> Result<Format, TraceError> {
        let alias = match name {
            "nlt" => "native",
            "spc" => "umass",
            "fio" => "fio-v2",
            other => other,
        };
        Format::ALL.into_iter().find(|format| format.name() == alias).ok_or_else(|| TraceError::UnknownFormatName {
            name: name.to_owned(),
            known: Format::ALL.map(Format::name).join(", "),
        })
    }

    /// The format a file name suggests for writing, if any.
    pub fn from_extension(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()? {
            "nlt" => Some(Format::Native),
            "csv" => Some(Format::Msr),
            "iolog" => Some(Format::FioV2),
            "mqsim" => Some(Format::MqSim),
            "disksim" => Some(Format::DiskSim),
            _ => None,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Reader options.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Keep only this device's requests: `8,0` (tracefs, blkparse),
    /// `host,disk` (MSR), the ASU (UMass), the file name (fio), the device
    /// number (MQSim, DiskSim). Without it a
    /// trace holding two devices is an error.
    pub device: Option<String>,
}

/// Opens a trace for streaming; `format: None` detects it from the content.
/// A gzip-compressed file (as public trace repositories ship them) is
/// decompressed on the fly, whatever its name.
pub fn open(
    path: &Path,
    format: Option<Format>,
    options: &ReadOptions,
) -> Result<Box<dyn TraceRead + Send>, TraceError> {
    let file = File::open(path).map_err(|source| TraceError::io(path, source))?;
    let mut raw = BufReader::with_capacity(IO_BUFFER_BYTES, file);
    if raw.fill_buf().map_err(|source| TraceError::io(path, source))?.starts_with(&GZIP_MAGIC) {
        let decompressed = BufReader::with_capacity(IO_BUFFER_BYTES, flate2::bufread::MultiGzDecoder::new(raw));
        return open_buffered(decompressed, path, format, options);
    }
    open_buffered(raw, path, format, options)
}

fn open_buffered<R: BufRead + Send + 'static>(
    mut input: R,
    path: &Path,
    format: Option<Format>,
    options: &ReadOptions,
) -> Result<Box<dyn TraceRead + Send>, TraceError> {
    let format = match format {
        Some(format) => format,
        None => detect(path, &mut input)?,
    };
    reader_for(format, input, path, options)
}

fn reader_for<R: BufRead + Send + 'static>(
    format: Format,
    input: R,
    path: &Path,
    options: &ReadOptions,
) -> Result<Box<dyn TraceRead + Send>, TraceError> {
    let device = options.device.as_deref();
    let path_buf = path.to_path_buf();
    Ok(match format {
        Format::Native => Box::new(NativeReader::new(input, path_buf)?),
        Format::Tracefs => {
            Box::new(text::TextReader::new(input, path_buf, tracefs::TracefsParser::new(device), format.name()))
        }
        Format::Blkparse => {
            Box::new(text::TextReader::new(input, path_buf, blkparse::BlkparseParser::new(device), format.name()))
        }
        Format::Msr => Box::new(text::TextReader::new(
            input,
            path_buf,
            csv::CsvParser::new(csv::CsvDialect::Msr, device),
            format.name(),
        )),
        Format::Umass => Box::new(text::TextReader::new(
            input,
            path_buf,
            csv::CsvParser::new(csv::CsvDialect::Umass, device),
            format.name(),
        )),
        Format::FioV2 | Format::FioV3 => {
            Box::new(text::TextReader::new(input, path_buf, fio::FioParser::new(device), "fio"))
        }
        Format::MqSim | Format::DiskSim => {
            let dialect = if format == Format::MqSim { SimulatorDialect::MqSim } else { SimulatorDialect::DiskSim };
            Box::new(text::TextReader::new(input, path_buf, SimulatorParser::new(dialect, device), format.name()))
        }
    })
}

/// Reads records from any buffered source (a pipe, a test string).
pub fn read_from<R: BufRead + Send + 'static>(
    input: R,
    name: &Path,
    format: Format,
    options: &ReadOptions,
) -> Result<Box<dyn TraceRead + Send>, TraceError> {
    reader_for(format, input, name, options)
}

/// Creates a trace file; `header` is kept by formats that have one. The
/// file appears under `path` only when [`TraceWrite::finish`] succeeds; until
/// then (and for good if writing fails) an existing file there is untouched.
/// A device or FIFO is written in place ([`OutputPath`]).
pub fn create(path: &Path, format: Format, header: &TraceHeader) -> Result<Box<dyn TraceWrite + Send>, TraceError> {
    create_with(path, format, header, Access::Usual)
}

/// [`create`] with the final mode `access` says.
pub fn create_with(
    path: &Path,
    format: Format,
    header: &TraceHeader,
    access: Access,
) -> Result<Box<dyn TraceWrite + Send>, TraceError> {
    let path_buf = path.to_path_buf();
    header.validate().map_err(|message| TraceError::Unrepresentable {
        path: path_buf.clone(),
        message: format!("header: {message}"),
    })?;
    let (placement, file) = OutputPath::create_with(path, access).map_err(|source| TraceError::io(path, source))?;
    let output = BufWriter::with_capacity(IO_BUFFER_BYTES, file);
    let sector_bytes = header.sector_size_bytes;
    let inner: Box<dyn TraceWrite + Send> = match format {
        Format::Native => Box::new(NativeWriter::new(output, path_buf, header)?),
        Format::Msr => Box::new(MsrWriter::new(output, path_buf, sector_bytes)),
        Format::FioV2 => Box::new(FioWriter::new(output, path_buf, FioVersion::V2, "/dev/nandlab", sector_bytes)?),
        Format::FioV3 => Box::new(FioWriter::new(output, path_buf, FioVersion::V3, "/dev/nandlab", sector_bytes)?),
        Format::MqSim => Box::new(SimulatorWriter::new(output, path_buf, SimulatorDialect::MqSim)),
        Format::DiskSim => Box::new(SimulatorWriter::new(output, path_buf, SimulatorDialect::DiskSim)),
        Format::Tracefs | Format::Blkparse | Format::Umass => {
            return Err(TraceError::NotWritable { path: path.to_path_buf(), format: format.name() })
        }
    };
    Ok(Box::new(PlaceOnFinish { inner, placement }))
}

/// A trace writer whose file is put in place ([`OutputPath::commit`]) once it is finished.
struct PlaceOnFinish {
    inner: Box<dyn TraceWrite + Send>,
    placement: OutputPath,
}

impl TraceWrite for PlaceOnFinish {
    fn write(&mut self, record: &Record) -> Result<(), TraceError> {
        self.inner.write(record)
    }

    fn finish(self: Box<Self>) -> Result<WriteSummary, TraceError> {
        let PlaceOnFinish { inner, placement } = *self;
        let summary = inner.finish()?;
        let target = placement.target().to_path_buf();
        placement.commit().map_err(|source| TraceError::io(target, source))?;
        Ok(summary)
    }
}

/// A record's offset and length in bytes, for the formats that count bytes.
fn byte_extent(record: &Record, sector_bytes: u64) -> Result<(u64, u64), String> {
    let offset = record.start.0.checked_mul(sector_bytes);
    let length = u64::from(record.len.0).checked_mul(sector_bytes);
    let end = offset.zip(length).and_then(|(offset, length)| offset.checked_add(length));
    match (offset, length, end) {
        (Some(offset), Some(length), Some(_)) => Ok((offset, length)),
        _ => Err(format!(
            "request at sector {} of {} sectors ends beyond the 64-bit byte address space",
            record.start.0, record.len.0
        )),
    }
}

/// Tells the format from the first bytes of `input` without consuming them.
pub fn detect(path: &Path, input: &mut impl BufRead) -> Result<Format, TraceError> {
    let head = input.fill_buf().map_err(|source| TraceError::io(path, source))?;
    detect_bytes(head).map_err(|hint| TraceError::UnknownFormat { path: path.to_path_buf(), hint })
}

fn detect_bytes(head: &[u8]) -> Result<Format, String> {
    if head.starts_with(native::MAGIC) {
        return Ok(Format::Native);
    }
    let mut lines = head
        .split(|&byte| byte == b'\n')
        .map(<[u8]>::trim_ascii)
        .filter(|line| !line.is_empty())
        .take(DETECT_LINES)
        .peekable();
    let first = *lines.peek().ok_or("the file is empty")?;
    if first.starts_with(b"fio version 2 iolog") {
        return Ok(Format::FioV2);
    }
    if first.starts_with(b"fio version 3 iolog") {
        return Ok(Format::FioV3);
    }
    let data_lines = lines.filter(|line| !line.starts_with(b"#"));
    let looks_like = |line: &[u8]| -> Option<Format> {
        if memchr::memmem::find(line, b": block_").is_some() {
            return Some(Format::Tracefs);
        }
        if let Some(dialect) = simulator::looks_like(line) {
            return Some(match dialect {
                SimulatorDialect::MqSim => Format::MqSim,
                SimulatorDialect::DiskSim => Format::DiskSim,
            });
        }
        let columns: Vec<&[u8]> = text::fields(line).collect();
        if columns.len() >= 7 && columns[0].contains(&b',') && columns[3].contains(&b'.') {
            return Some(Format::Blkparse);
        }
        let cells: Vec<&[u8]> = line.split(|&byte| byte == b',').map(<[u8]>::trim_ascii).collect();
        match cells.get(3) {
            Some(kind)
                if cells.len() == 7 && (kind.eq_ignore_ascii_case(b"read") || kind.eq_ignore_ascii_case(b"write")) =>
            {
                Some(Format::Msr)
            }
            Some(kind) if cells.len() >= 5 && matches!(*kind, b"r" | b"R" | b"w" | b"W") => Some(Format::Umass),
            _ => None,
        }
    };
    let mut examined = 0;
    for line in data_lines {
        examined += 1;
        if let Some(format) = looks_like(line) {
            return Ok(format);
        }
    }
    let shown = nandlab_quote::quote_bytes(first);
    Err(format!("{examined} lines looked at, the first being `{shown}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_apart_by_content() {
        let cases: [(&[u8], Format); 10] = [
            (b"NLTRACE\0\x01\x00", Format::Native),
            (b"fio version 2 iolog\n/dev/sdb add\n", Format::FioV2),
            (b"fio version 3 iolog\n0 /dev/sdb add\n", Format::FioV3),
            (
                b"# tracer: nop\n#\n dd-1 [001] ..... 1.0: block_rq_issue: 7,0 WS 4096 () 8 + 8 be,0,4 [dd]\n",
                Format::Tracefs,
            ),
            (b"  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]\n", Format::Blkparse),
            (b"128166372003061629,hm,1,Read,3154132992,32768,155547\n", Format::Msr),
            (
                b"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n128166372003061629,hm,1,Write,0,512,1\n",
                Format::Msr,
            ),
            (b"0,20941264,8192,W,0.551706\n", Format::Umass),
            (b"4911500 0 2359296 16 0\n", Format::MqSim),
            (b"0.000000 0 2048 8 1\n", Format::DiskSim),
        ];
        for (head, expected) in cases {
            assert_eq!(detect_bytes(head), Ok(expected), "{}", String::from_utf8_lossy(head));
        }
        assert!(detect_bytes(b"hello, world\n").unwrap_err().contains("hello"));
        assert!(detect_bytes(b"").is_err());
    }

    #[test]
    fn format_names_and_aliases_resolve() {
        for format in Format::ALL {
            assert_eq!(Format::from_name(format.name()).ok(), Some(format));
        }
        assert_eq!(Format::from_name("spc").ok(), Some(Format::Umass));
        assert!(Format::from_name("pcap").unwrap_err().to_string().contains("known: native"));
    }
}
