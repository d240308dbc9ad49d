//! nandlab's own trace format (`.nlt`), specified in docs/trace-format.md:
//! a magic, a version, a JSON header, then one variable-length binary
//! record per request — deltas of time and address as LEB128 varints, the
//! process name interned on first use — and an end marker with the record
//! count, so a truncated file is an error rather than a shorter trace.
//! Reading and writing stream with constant memory (plus the table of
//! distinct process names, capped at [`MAX_PROCESS_NAMES`]).

use crate::error::TraceError;
use crate::header::TraceHeader;
use crate::record::{Flags, Op, ProcessName, Record, Sector, SectorCount, StreamTag, TimestampNs};
use crate::{TraceRead, TraceWrite, WriteSummary};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::PathBuf;

pub const MAGIC: &[u8; 8] = b"NLTRACE\0";
pub const VERSION: u16 = 1;
/// A trace with more distinct process names than this is refused: the
/// table must stay small for streaming to stay constant-memory.
pub const MAX_PROCESS_NAMES: usize = 1 << 16;
const MAX_HEADER_BYTES: u32 = 1 << 24;
const END_MARKER: u8 = 0xff;
const STREAM_BIT: u8 = 0x40;
const RESERVED_BIT: u8 = 0x80;
const NEW_NAME: u64 = 0;

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Streams records into a native trace.
pub struct NativeWriter<W: Write> {
    output: W,
    path: PathBuf,
    names: HashMap<ProcessName, u64>,
    previous_timestamp: u64,
    previous_end: u64,
    scratch: Vec<u8>,
    summary: WriteSummary,
    sector_bytes: u32,
}

impl<W: Write> NativeWriter<W> {
    pub fn new(mut output: W, path: PathBuf, header: &TraceHeader) -> Result<NativeWriter<W>, TraceError> {
        header.validate().map_err(|message| TraceError::Unrepresentable {
            path: path.clone(),
            message: format!("header: {message}"),
        })?;
        let json = serde_json::to_vec(header)
            .map_err(|error| TraceError::Unrepresentable { path: path.clone(), message: error.to_string() })?;
        let json_len = u32::try_from(json.len()).ok().filter(|&len| len <= MAX_HEADER_BYTES);
        let json_len = json_len.ok_or_else(|| TraceError::Unrepresentable {
            path: path.clone(),
            message: "trace header is larger than 16 MiB".into(),
        })?;
        let mut preamble = Vec::with_capacity(16 + json.len());
        preamble.extend_from_slice(MAGIC);
        preamble.extend_from_slice(&VERSION.to_le_bytes());
        preamble.extend_from_slice(&0u16.to_le_bytes());
        preamble.extend_from_slice(&json_len.to_le_bytes());
        preamble.extend_from_slice(&json);
        output.write_all(&preamble).map_err(|source| TraceError::io(path.clone(), source))?;
        Ok(NativeWriter {
            output,
            path,
            names: HashMap::new(),
            previous_timestamp: 0,
            previous_end: 0,
            scratch: Vec::with_capacity(64),
            summary: WriteSummary::default(),
            sector_bytes: header.sector_size_bytes,
        })
    }

    fn encode(&mut self, record: &Record) -> Result<(), TraceError> {
        let unrepresentable = |message: String| TraceError::Unrepresentable { path: self.path.clone(), message };
        record.check(self.sector_bytes).map_err(unrepresentable)?;
        if record.timestamp.0 < self.previous_timestamp {
            return Err(unrepresentable(format!(
                "timestamp {} ns lies before the previous record's; records must be in time order",
                record.timestamp.0
            )));
        }
        let out = &mut self.scratch;
        out.clear();
        let stream_bit = if record.stream.is_some() { STREAM_BIT } else { 0 };
        out.push(record.op.index() as u8 | record.flags.bits() << 2 | stream_bit);
        put_varint(out, zigzag(record.timestamp.0.wrapping_sub(self.previous_timestamp) as i64));
        put_varint(out, zigzag(record.start.0.wrapping_sub(self.previous_end) as i64));
        put_varint(out, u64::from(record.len.0));
        match self.names.get(&record.process) {
            Some(&index) => put_varint(out, index),
            None => {
                if self.names.len() >= MAX_PROCESS_NAMES {
                    return Err(TraceError::Unrepresentable {
                        path: self.path.clone(),
                        message: format!("more than {MAX_PROCESS_NAMES} distinct process names"),
                    });
                }
                put_varint(out, NEW_NAME);
                put_varint(out, record.process.as_str().len() as u64);
                out.extend_from_slice(record.process.as_str().as_bytes());
                self.names.insert(record.process, self.names.len() as u64 + 1);
            }
        }
        if let Some(StreamTag(tag)) = record.stream {
            out.push(tag);
        }
        self.previous_timestamp = record.timestamp.0;
        self.previous_end = record.end().0;
        Ok(())
    }
}

impl<W: Write> TraceWrite for NativeWriter<W> {
    fn write(&mut self, record: &Record) -> Result<(), TraceError> {
        self.encode(record)?;
        self.output.write_all(&self.scratch).map_err(|source| TraceError::io(self.path.clone(), source))?;
        self.summary.written += 1;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<WriteSummary, TraceError> {
        let mut trailer = vec![END_MARKER];
        put_varint(&mut trailer, self.summary.written);
        self.output
            .write_all(&trailer)
            .and_then(|()| self.output.flush())
            .map_err(|source| TraceError::io(self.path.clone(), source))?;
        Ok(self.summary)
    }
}

/// A byte reader with its own buffer: the decoder reads single bytes in its
/// inner loop, and `BufReader` through `Read::read` would cost a call each.
struct ByteSource<R> {
    input: R,
    buffer: Box<[u8]>,
    position: usize,
    filled: usize,
    consumed_before: u64,
}

impl<R: Read> ByteSource<R> {
    fn new(input: R) -> ByteSource<R> {
        ByteSource { input, buffer: vec![0; 1 << 18].into_boxed_slice(), position: 0, filled: 0, consumed_before: 0 }
    }

    fn offset(&self) -> u64 {
        self.consumed_before + self.position as u64
    }

    /// `Ok(None)` at the end of the input.
    #[inline]
    fn byte(&mut self) -> std::io::Result<Option<u8>> {
        if self.position == self.filled {
            self.consumed_before += self.filled as u64;
            self.position = 0;
            self.filled = loop {
                match self.input.read(&mut self.buffer) {
                    Ok(read) => break read,
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(error) => return Err(error),
                }
            };
            if self.filled == 0 {
                return Ok(None);
            }
        }
        let byte = self.buffer[self.position];
        self.position += 1;
        Ok(Some(byte))
    }
}

/// Streams records out of a native trace.
pub struct NativeReader<R> {
    source: ByteSource<R>,
    path: PathBuf,
    header: TraceHeader,
    names: Vec<ProcessName>,
    previous_timestamp: u64,
    previous_end: u64,
    records: u64,
    done: bool,
}

impl<R: Read> NativeReader<R> {
    pub fn new(input: R, path: PathBuf) -> Result<NativeReader<R>, TraceError> {
        let mut source = ByteSource::new(input);
        let mut preamble = [0u8; 16];
        for (index, slot) in preamble.iter_mut().enumerate() {
            *slot = source.byte().map_err(|error| TraceError::io(path.clone(), error))?.ok_or_else(|| {
                TraceError::Corrupt {
                    path: path.clone(),
                    offset: index as u64,
                    message: "file ends inside the 16-byte preamble".into(),
                }
            })?;
        }
        let corrupt = |offset: u64, message: String| TraceError::Corrupt { path: path.clone(), offset, message };
        if &preamble[..8] != MAGIC {
            return Err(corrupt(0, "not a nandlab trace (bad magic)".into()));
        }
        let version = u16::from_le_bytes([preamble[8], preamble[9]]);
        if version != VERSION {
            return Err(corrupt(8, format!("trace format version {version}; this nandlab reads version {VERSION}")));
        }
        let header_len = u32::from_le_bytes([preamble[12], preamble[13], preamble[14], preamble[15]]);
        if header_len > MAX_HEADER_BYTES {
            return Err(corrupt(12, format!("header length {header_len} exceeds 16 MiB")));
        }
        let mut json = Vec::with_capacity(header_len as usize);
        for _ in 0..header_len {
            let byte = source.byte().map_err(|error| TraceError::io(path.clone(), error))?;
            json.push(byte.ok_or_else(|| corrupt(source.offset(), "file ends inside the header".into()))?);
        }
        let header: TraceHeader =
            serde_json::from_slice(&json).map_err(|error| corrupt(16, format!("header is not valid JSON: {error}")))?;
        header.validate().map_err(|message| corrupt(16, format!("header: {message}")))?;
        Ok(NativeReader {
            source,
            path,
            header,
            names: Vec::new(),
            previous_timestamp: 0,
            previous_end: 0,
            records: 0,
            done: false,
        })
    }

    fn corrupt(&self, message: impl Into<String>) -> TraceError {
        TraceError::Corrupt { path: self.path.clone(), offset: self.source.offset(), message: message.into() }
    }

    fn byte(&mut self) -> Result<u8, TraceError> {
        match self.source.byte() {
            Ok(Some(byte)) => Ok(byte),
            Ok(None) => Err(self.corrupt(format!(
                "file ends after {} records without the end marker: the trace is truncated",
                self.records
            ))),
            Err(error) => Err(TraceError::io(self.path.clone(), error)),
        }
    }

    fn varint(&mut self) -> Result<u64, TraceError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.corrupt("varint longer than 10 bytes"))
    }

    fn process(&mut self) -> Result<ProcessName, TraceError> {
        let reference = self.varint()?;
        if reference != NEW_NAME {
            let index = usize::try_from(reference - 1).unwrap_or(usize::MAX);
            return self
                .names
                .get(index)
                .copied()
                .ok_or_else(|| self.corrupt(format!("process name #{reference} was never defined")));
        }
        let len = self.varint()?;
        if len > ProcessName::CAPACITY as u64 || self.names.len() >= MAX_PROCESS_NAMES {
            return Err(self.corrupt("process name too long, or too many process names"));
        }
        let mut bytes = [0u8; ProcessName::CAPACITY];
        for slot in bytes.iter_mut().take(len as usize) {
            *slot = self.byte()?;
        }
        let name =
            std::str::from_utf8(&bytes[..len as usize]).map_err(|_| self.corrupt("process name is not UTF-8"))?;
        let name = ProcessName::new(name);
        self.names.push(name);
        Ok(name)
    }

    fn finish(&mut self) -> Result<(), TraceError> {
        let count = self.varint()?;
        if count != self.records {
            return Err(self.corrupt(format!("end marker says {count} records, the file holds {}", self.records)));
        }
        match self.source.byte() {
            Ok(None) => Ok(()),
            Ok(Some(_)) => Err(self.corrupt("bytes after the end marker")),
            Err(error) => Err(TraceError::io(self.path.clone(), error)),
        }
    }

    fn decode(&mut self) -> Result<Option<Record>, TraceError> {
        let kind = self.byte()?;
        if kind == END_MARKER {
            self.finish()?;
            return Ok(None);
        }
        if kind & RESERVED_BIT != 0 {
            return Err(self.corrupt(format!("record kind byte {kind:#04x} has the reserved bit set")));
        }
        let op = Op::from_index(kind & 0x03).ok_or_else(|| self.corrupt("bad operation"))?;
        let flags = Flags::from_bits((kind >> 2) & 0x0f).ok_or_else(|| self.corrupt("bad flags"))?;
        // Deltas are modulo 2^64 (see the writer), so wrapping decodes them.
        let timestamp = self.previous_timestamp.wrapping_add(unzigzag(self.varint()?) as u64);
        if timestamp < self.previous_timestamp {
            let previous = self.previous_timestamp;
            return Err(self.corrupt(format!("timestamp {timestamp} ns lies before the previous request's {previous} ns; the trace is not in time order")));
        }
        let start = self.previous_end.wrapping_add(unzigzag(self.varint()?) as u64);
        let len = self.varint()?;
        let len = u32::try_from(len).map_err(|_| self.corrupt(format!("length {len} does not fit in 32 bits")))?;
        let process = self.process()?;
        let stream = if kind & STREAM_BIT != 0 { Some(StreamTag(self.byte()?)) } else { None };
        let record = Record {
            timestamp: TimestampNs(timestamp),
            op,
            flags,
            start: Sector(start),
            len: SectorCount(len),
            process,
            stream,
        };
        record.check(self.header.sector_size_bytes).map_err(|message| self.corrupt(message))?;
        self.previous_timestamp = timestamp;
        self.previous_end = record.end().0;
        self.records += 1;
        Ok(Some(record))
    }
}

impl<R: Read> Iterator for NativeReader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let decoded = self.decode();
        if !matches!(decoded, Ok(Some(_))) {
            self.done = true;
        }
        decoded.transpose()
    }
}

impl<R: Read> TraceRead for NativeReader<R> {
    fn header(&self) -> &TraceHeader {
        &self.header
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::SectorRange;

    fn sample_records() -> Vec<Record> {
        let record = |timestamp, op, flags, start, len, process: &str, stream| Record {
            timestamp: TimestampNs(timestamp),
            op,
            flags,
            start: Sector(start),
            len: SectorCount(len),
            process: ProcessName::new(process),
            stream,
        };
        vec![
            record(0, Op::Write, Flags::SYNC, 24_578, 2560, "dd", None),
            record(5, Op::Write, Flags::SYNC.with(Flags::META), 229_378, 2, "jbd2/loop0-8", None),
            record(5, Op::Flush, Flags::PREFLUSH, 0, 0, "kworker/0:0H", None),
            record(7, Op::Read, Flags::NONE, 8, 8, "dd", Some(StreamTag(3))),
            record(crate::TIMESTAMP_NS_MAX, Op::Discard, Flags::NONE, u64::MAX / 512 - 10, 10, "", None),
        ]
    }

    fn encode_finished(records: &[Record], header: &TraceHeader) -> Vec<u8> {
        let mut output = Vec::new();
        let mut writer = Box::new(NativeWriter::new(&mut output, "mem".into(), header).expect("header encodes"));
        for record in records {
            writer.write(record).expect("record encodes");
        }
        writer.finish().expect("finishes");
        output
    }

    #[test]
    fn records_and_header_survive_a_round_trip() {
        let header = TraceHeader {
            journal: vec![SectorRange { start: Sector(229_376), len: 32_768 }],
            device_size_bytes: Some(1 << 30),
            ..TraceHeader::default()
        };
        let records = sample_records();
        let bytes = encode_finished(&records, &header);
        let reader = NativeReader::new(bytes.as_slice(), "mem".into()).expect("valid preamble");
        assert_eq!(reader.header(), &header);
        let decoded: Vec<Record> = reader.collect::<Result<_, _>>().expect("valid trace");
        assert_eq!(decoded, records);
    }

    #[test]
    fn truncation_and_corruption_are_errors() {
        let bytes = encode_finished(&sample_records(), &TraceHeader::default());
        let truncated = &bytes[..bytes.len() - 2];
        let result: Result<Vec<Record>, TraceError> =
            NativeReader::new(truncated, "t.nlt".into()).expect("preamble intact").collect();
        let message = result.unwrap_err().to_string();
        assert!(message.starts_with("t.nlt: byte") && message.contains("truncated"), "{message}");

        let mut bad_magic = bytes.clone();
        bad_magic[0] = b'X';
        assert!(NativeReader::new(bad_magic.as_slice(), "t.nlt".into())
            .err()
            .expect("refused")
            .to_string()
            .contains("magic"));

        let mut future = bytes;
        future[8] = 9;
        assert!(NativeReader::new(future.as_slice(), "t.nlt".into())
            .err()
            .expect("refused")
            .to_string()
            .contains("version 9"));
    }
}
