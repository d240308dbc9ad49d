//! The machinery every line-oriented format shares: a streaming reader that
//! hands one line at a time to a format's parser and turns its complaints into
//! errors naming file and line, plus the small field parsers those formats
//! have in common (integers, decimal seconds, `rwbs` strings, byte ranges).

use crate::error::TraceError;
use crate::header::TraceHeader;
use crate::record::{Flags, Op, Record, Sector, SectorCount, TimestampNs};
use crate::TraceRead;
use std::io::BufRead;
use std::path::PathBuf;

/// Longest line a text trace may have. Real block-trace lines are under 200
/// bytes; the cap keeps a file without line breaks (or a decompressed run of
/// zeros) from being read into memory whole.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// One text format's line grammar.
pub(crate) trait LineParser {
    /// Parses one line (terminator stripped). `Ok(None)` skips it (comments,
    /// events of no interest). The record's timestamp is absolute in the
    /// format's own clock; the reader rebases it to the first record.
    fn parse(&mut self, line: &[u8]) -> Result<Option<Record>, String>;

    /// True once the parser has seen the start of a trailer (e.g. blkparse's
    /// summary) after which no more records follow.
    fn finished(&self) -> bool {
        false
    }

    /// The devices of the requests parsed so far ([`crate::TraceRead::devices`]).
    fn devices(&self) -> Vec<String>;
}

/// A streaming reader over a line-oriented trace: one reused line buffer,
/// constant memory whatever the trace length.
pub(crate) struct TextReader<R, P> {
    input: R,
    path: PathBuf,
    parser: P,
    header: TraceHeader,
    line: Vec<u8>,
    line_number: u64,
    origin_ns: Option<u64>,
    previous_ns: u64,
    done: bool,
}

impl<R: BufRead, P: LineParser> TextReader<R, P> {
    pub(crate) fn new(input: R, path: PathBuf, parser: P, source_format: &str) -> Self {
        let header = TraceHeader { source_format: Some(source_format.to_owned()), ..TraceHeader::default() };
        TextReader {
            input,
            path,
            parser,
            header,
            line: Vec::with_capacity(256),
            line_number: 0,
            origin_ns: None,
            previous_ns: 0,
            done: false,
        }
    }

    fn malformed(&mut self, message: String) -> TraceError {
        self.done = true;
        TraceError::Malformed { path: self.path.clone(), line: self.line_number, message }
    }

    /// Makes the timestamp relative to the first record's, refusing one
    /// earlier than the record before it.
    fn rebase(&mut self, mut record: Record) -> Result<Record, TraceError> {
        let origin = *self.origin_ns.get_or_insert(record.timestamp.0);
        if record.timestamp.0 < self.previous_ns {
            let message = format!(
                "timestamp {} ns lies before the previous request's {} ns; the trace is not in time order",
                record.timestamp.0, self.previous_ns
            );
            return Err(self.malformed(message));
        }
        self.previous_ns = record.timestamp.0;
        match record.timestamp.0.checked_sub(origin) {
            Some(relative) => {
                record.timestamp = TimestampNs(relative);
                record.check(self.header.sector_size_bytes).map_err(|message| self.malformed(message))?;
                Ok(record)
            }
            None => Err(self.malformed(format!(
                "timestamp {} ns lies before the trace's first request ({origin} ns); the trace is not in time order",
                record.timestamp.0
            ))),
        }
    }

    fn read_error(&mut self, source: std::io::Error) -> TraceError {
        self.done = true;
        TraceError::io(self.path.clone(), source)
    }

    /// Parses the next line where it lies in the input's buffer, without
    /// copying it, when the buffer holds all of it (the common case: one
    /// refill holds thousands of lines). `Ok(None)` leaves the line to
    /// [`Self::read_line`]: it straddles a refill, is too long, is the last
    /// one without a line break, or the read was interrupted.
    fn parse_buffered_line(&mut self) -> Result<Option<Result<Option<Record>, String>>, TraceError> {
        let available = match self.input.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => return Ok(None),
            Err(source) => return Err(self.read_error(source)),
        };
        let Some(taken) = memchr::memchr(b'\n', available).map(|newline| newline + 1) else {
            return Ok(None);
        };
        if taken > MAX_LINE_BYTES {
            return Ok(None);
        }
        let parsed = self.parser.parse(trim_line_end(&available[..taken]));
        self.input.consume(taken);
        self.line_number += 1;
        Ok(Some(parsed))
    }

    /// Reads one line into `self.line`, at most [`MAX_LINE_BYTES`] of it;
    /// `Ok(false)` at the end of the input.
    fn read_line(&mut self) -> Result<bool, TraceError> {
        self.line.clear();
        loop {
            let available = match self.input.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => return Err(self.read_error(source)),
            };
            if available.is_empty() {
                return Ok(!self.line.is_empty());
            }
            let (taken, complete) = match memchr::memchr(b'\n', available) {
                Some(newline) => (newline + 1, true),
                None => (available.len(), false),
            };
            let room = MAX_LINE_BYTES + 1 - self.line.len();
            self.line.extend_from_slice(&available[..taken.min(room)]);
            self.input.consume(taken);
            if self.line.len() > MAX_LINE_BYTES {
                self.line_number += 1;
                let message = format!("line is longer than {MAX_LINE_BYTES} bytes: `{}`", show(&self.line));
                return Err(self.malformed(message));
            }
            if complete {
                return Ok(true);
            }
        }
    }
}

impl<R: BufRead, P: LineParser> Iterator for TextReader<R, P> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done && !self.parser.finished() {
            let parsed = match self.parse_buffered_line() {
                Ok(Some(parsed)) => parsed,
                Ok(None) => match self.read_line() {
                    Ok(false) => return None,
                    Ok(true) => {
                        self.line_number += 1;
                        self.parser.parse(trim_line_end(&self.line))
                    }
                    Err(error) => return Some(Err(error)),
                },
                Err(error) => return Some(Err(error)),
            };
            match parsed {
                Ok(Some(record)) => return Some(self.rebase(record)),
                Ok(None) => {}
                Err(message) => return Some(Err(self.malformed(message))),
            }
        }
        None
    }
}

impl<R: BufRead, P: LineParser> TraceRead for TextReader<R, P> {
    fn header(&self) -> &TraceHeader {
        &self.header
    }

    fn devices(&self) -> Vec<String> {
        self.parser.devices()
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &line[..end]
}

/// A field or line as an error message quotes it ([`nandlab_quote::quote_bytes`]).
pub(crate) fn show(field: &[u8]) -> String {
    nandlab_quote::quote_bytes(field)
}

pub(crate) fn parse_u64(field: &[u8], what: &str) -> Result<u64, String> {
    let not_integer = || format!("expected {what} (an unsigned integer), found `{}`", show(field));
    if field.is_empty() || field.len() > U64_MAX_DIGITS.len() {
        return Err(not_integer());
    }
    let mut value: u64 = 0;
    for &byte in field {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return Err(not_integer());
        }
        // Cannot wrap below 20 digits (10^19 - 1 < 2^64); 20 are checked below.
        value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
    }
    // Digit strings of equal length compare as their numbers do.
    if field.len() == U64_MAX_DIGITS.len() && field > U64_MAX_DIGITS {
        return Err(format!("{what} `{}` does not fit in 64 bits", show(field)));
    }
    Ok(value)
}

/// `u64::MAX` in decimal: the longest and largest field [`parse_u64`] takes.
const U64_MAX_DIGITS: &[u8] = b"18446744073709551615";

/// `12.000345` seconds → nanoseconds, exactly (no floating point); any
/// number of fraction digits, extra digits beyond nanoseconds are dropped.
pub(crate) fn parse_seconds_ns(field: &[u8], what: &str) -> Result<u64, String> {
    let (whole, fraction) = match memchr::memchr(b'.', field) {
        Some(dot) => (&field[..dot], &field[dot + 1..]),
        None => (field, &b""[..]),
    };
    let bad = || format!("expected {what} (decimal seconds), found `{}`", show(field));
    let seconds = if whole.is_empty() { 0 } else { parse_u64(whole, what).map_err(|_| bad())? };
    let mut nanos: u64 = 0;
    for position in 0..9 {
        let digit = match fraction.get(position) {
            Some(&byte) if byte.is_ascii_digit() => u64::from(byte - b'0'),
            Some(_) => return Err(bad()),
            None => 0,
        };
        nanos = nanos * 10 + digit;
    }
    if fraction.iter().skip(9).any(|byte| !byte.is_ascii_digit()) || (whole.is_empty() && fraction.is_empty()) {
        return Err(bad());
    }
    seconds
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(nanos))
        .ok_or_else(|| format!("{what} `{}` is too large", show(field)))
}

/// Decodes the block layer's `rwbs` string (`blk_fill_rwbs`): an optional
/// leading `F` (preflush), the operation (`W`, `R`, `D`, `F` flush, `N`
/// none), then `F` (FUA), `A` (readahead), `S` (sync), `M` (metadata), `E`
/// (secure erase). A preflush with no data (`FN`, or an empty `FWS` from
/// older kernels) is a flush.
pub(crate) fn parse_rwbs(field: &[u8], len: SectorCount) -> Result<(Op, Flags), String> {
    let bad = |why: &str| format!("bad rwbs `{}`: {why}", show(field));
    let mut flags = Flags::NONE;
    let mut rest = field;
    if rest.len() >= 2 && rest[0] == b'F' && matches!(rest[1], b'W' | b'R' | b'D' | b'F' | b'N') {
        flags = flags.with(Flags::PREFLUSH);
        rest = &rest[1..];
    }
    let (&op_letter, modifiers) = rest.split_first().ok_or_else(|| bad("empty"))?;
    let mut op = match op_letter {
        b'W' => Op::Write,
        b'R' => Op::Read,
        b'D' => Op::Discard,
        b'F' => Op::Flush,
        b'N' if flags.contains(Flags::PREFLUSH) => Op::Flush,
        _ => return Err(bad("no read, write, discard or flush operation")),
    };
    for &letter in modifiers {
        flags = flags.with(match letter {
            b'F' => Flags::FUA,
            b'S' => Flags::SYNC,
            b'M' => Flags::META,
            b'A' => Flags::NONE,
            b'E' if op == Op::Discard => Flags::NONE,
            _ => return Err(bad("unknown flag letter")),
        });
    }
    if op == Op::Write && len.0 == 0 && flags.contains(Flags::PREFLUSH) {
        op = Op::Flush;
    }
    Ok((op, flags))
}

/// A byte range → the sectors it touches: the start rounded down, the end
/// rounded up, so an unaligned request still covers every sector it changes.
pub(crate) fn byte_range_to_sectors(offset: u64, bytes: u64) -> Result<(Sector, SectorCount), String> {
    let sector = u64::from(crate::LINUX_SECTOR_BYTES);
    let end = offset.checked_add(bytes).ok_or_else(|| format!("offset {offset} + size {bytes} overflows"))?;
    let start = offset / sector;
    let len = end.div_ceil(sector) - start;
    let len =
        u32::try_from(len).map_err(|_| format!("request of {bytes} bytes is longer than a block request can be"))?;
    Ok((Sector(start), SectorCount(len)))
}

/// Keeps one trace file to one device: records of the device asked for (or
/// of the first device seen) pass, others are skipped when a device was
/// asked for and are an error otherwise — mixing two devices' addresses
/// would silently corrupt a replay.
#[derive(Default)]
pub(crate) struct DeviceLock {
    wanted: Option<Vec<u8>>,
    first: Option<Vec<u8>>,
    /// Devices whose requests the wanted device's filter skipped (the first
    /// [`DEVICES_LISTED_MAX`]), to say what a filter that matched nothing
    /// could have chosen.
    skipped: Vec<Vec<u8>>,
}

/// Most distinct devices a reader lists ([`crate::TraceRead::devices`]).
pub const DEVICES_LISTED_MAX: usize = 16;

impl DeviceLock {
    pub(crate) fn new(wanted: Option<&str>) -> DeviceLock {
        DeviceLock { wanted: wanted.map(|device| device.as_bytes().to_vec()), first: None, skipped: Vec::new() }
    }

    /// `Ok(true)` if the record of `device` belongs in the trace.
    pub(crate) fn admit(&mut self, device: &[u8]) -> Result<bool, String> {
        if let Some(wanted) = &self.wanted {
            if wanted.as_slice() == device {
                return Ok(true);
            }
            if self.skipped.len() < DEVICES_LISTED_MAX && !self.skipped.iter().any(|seen| seen.as_slice() == device) {
                self.skipped.push(device.to_vec());
            }
            return Ok(false);
        }
        match &self.first {
            None => {
                self.first = Some(device.to_vec());
                Ok(true)
            }
            Some(first) if first.as_slice() == device => Ok(true),
            Some(first) => Err(format!(
                "request for device `{}`, but the trace so far was for `{}`; pick one with --trace-device",
                show(device),
                show(first)
            )),
        }
    }

    /// The devices of the requests read so far: without a wanted device the
    /// one the trace is for; with one, those its filter skipped.
    pub(crate) fn devices(&self) -> Vec<String> {
        self.first.iter().chain(&self.skipped).map(|device| show(device)).collect()
    }
}

/// Splits a line into whitespace-separated fields without allocating.
pub(crate) fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|byte| byte.is_ascii_whitespace()).filter(|field| !field.is_empty())
}

/// The next field or an error naming what was missing.
pub(crate) fn next_field<'a>(fields: &mut impl Iterator<Item = &'a [u8]>, what: &str) -> Result<&'a [u8], String> {
    fields.next().ok_or_else(|| format!("line ends where {what} was expected"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rwbs_strings_of_real_kernels_decode() {
        let one = SectorCount(8);
        let zero = SectorCount(0);
        assert_eq!(parse_rwbs(b"WS", one), Ok((Op::Write, Flags::SYNC)));
        assert_eq!(parse_rwbs(b"FF", zero), Ok((Op::Flush, Flags::PREFLUSH)));
        assert_eq!(parse_rwbs(b"FN", zero), Ok((Op::Flush, Flags::PREFLUSH)));
        assert_eq!(parse_rwbs(b"FWS", zero), Ok((Op::Flush, Flags::PREFLUSH.with(Flags::SYNC))));
        assert_eq!(
            parse_rwbs(b"FWFSM", one),
            Ok((Op::Write, Flags::PREFLUSH.with(Flags::FUA).with(Flags::SYNC).with(Flags::META)))
        );
        assert_eq!(parse_rwbs(b"RAM", one), Ok((Op::Read, Flags::META)));
        assert_eq!(parse_rwbs(b"DE", one), Ok((Op::Discard, Flags::NONE)));
        assert!(parse_rwbs(b"N", zero).is_err());
        assert!(parse_rwbs(b"WX", one).is_err());
        assert!(parse_rwbs(b"", one).is_err());
    }

    #[test]
    fn integers_up_to_u64_max_parse_and_larger_ones_are_refused() {
        assert_eq!(parse_u64(b"0", "n"), Ok(0));
        assert_eq!(parse_u64(b"9999999999999999999", "n"), Ok(9_999_999_999_999_999_999));
        assert_eq!(parse_u64(b"18446744073709551615", "n"), Ok(u64::MAX));
        assert_eq!(parse_u64(b"00000000000000000042", "n"), Ok(42));
        for too_large in ["18446744073709551616", "20000000000000000000", "99999999999999999999"] {
            assert!(parse_u64(too_large.as_bytes(), "n").unwrap_err().contains("does not fit in 64 bits"));
        }
        for not_integer in ["", "-1", "1x", "184467440737095516150", "1844674407370955161x"] {
            assert!(
                parse_u64(not_integer.as_bytes(), "n").unwrap_err().contains("an unsigned integer"),
                "{not_integer}"
            );
        }
    }

    /// The lines a reader with an input buffer of `capacity` bytes yields:
    /// parsed where they lie in the buffer, or copied out when they
    /// straddle a refill.
    fn read_with_buffer(trace: &[u8], capacity: usize) -> Vec<Result<Record, TraceError>> {
        let parser = crate::simulator::SimulatorParser::new(crate::simulator::SimulatorDialect::MqSim, None);
        let input = std::io::BufReader::with_capacity(capacity, trace);
        TextReader::new(input, PathBuf::from("t.mqsim"), parser, "mqsim").collect()
    }

    #[test]
    fn records_and_errors_do_not_depend_on_where_the_buffer_ends() {
        let trace = b"10 0 8 8 0\r\n\n20 0 16 8 1\n30 0 24 8 0\n40 0 x 8 0\n50 0 32 8 0";
        let expected = read_with_buffer(trace, 4096);
        assert_eq!(expected.len(), 4, "three records, then the malformed line ends the trace");
        let times: Vec<u64> = expected[..3].iter().map(|record| record.as_ref().expect("valid").timestamp.0).collect();
        assert_eq!(times, [0, 10, 20]);
        let error = expected[3].as_ref().expect_err("malformed").to_string();
        assert!(error.contains("t.mqsim:5:") && error.contains("start sector"), "{error}");
        for capacity in [1, 3, 7, 11, 12, 13] {
            let records = read_with_buffer(trace, capacity);
            assert_eq!(records.len(), expected.len(), "capacity {capacity}");
            for (record, wanted) in records.iter().zip(&expected) {
                match (record, wanted) {
                    (Ok(record), Ok(wanted)) => assert_eq!(record, wanted, "capacity {capacity}"),
                    (Err(error), Err(wanted)) => assert_eq!(error.to_string(), wanted.to_string()),
                    _ => panic!("capacity {capacity}: {record:?} where {wanted:?}"),
                }
            }
        }
        let last_without_break = read_with_buffer(b"10 0 8 8 0\n20 0 16 8 1", 4096);
        assert_eq!(last_without_break.len(), 2);
        assert!(last_without_break.iter().all(Result::is_ok));
    }

    #[test]
    fn decimal_seconds_are_exact() {
        assert_eq!(parse_seconds_ns(b"4039.405294", "t"), Ok(4_039_405_294_000));
        assert_eq!(parse_seconds_ns(b"0.000000001", "t"), Ok(1));
        assert_eq!(parse_seconds_ns(b"7", "t"), Ok(7_000_000_000));
        assert!(parse_seconds_ns(b"1.2x", "t").is_err());
        assert!(parse_seconds_ns(b".", "t").is_err());
    }

    #[test]
    fn unaligned_byte_ranges_cover_every_touched_sector() {
        assert_eq!(byte_range_to_sectors(4096, 4096), Ok((Sector(8), SectorCount(8))));
        assert_eq!(byte_range_to_sectors(100, 500), Ok((Sector(0), SectorCount(2))));
    }

    #[test]
    fn a_second_device_is_an_error_unless_one_was_chosen() {
        let mut lock = DeviceLock::new(None);
        assert_eq!(lock.admit(b"8,0"), Ok(true));
        assert!(lock.admit(b"8,16").is_err());
        let mut chosen = DeviceLock::new(Some("8,16"));
        assert_eq!(chosen.admit(b"8,0"), Ok(false));
        assert_eq!(chosen.admit(b"8,16"), Ok(true));
        assert_eq!(chosen.admit(b"8,0"), Ok(false));
        assert_eq!(chosen.admit(b"7,0"), Ok(false));
        assert_eq!(chosen.devices(), ["8,0", "7,0"], "the skipped devices, each once");
        assert_eq!(lock.devices(), ["8,0"]);
    }
}
