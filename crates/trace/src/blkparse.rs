//! Reader for blkparse's default text output, e.g.
//!
//! ```text
//!   8,0    3       11     0.009507758   697  D  WS 223490 + 8 [kjournald]
//!   8,0    1       12     0.009513224  1234  D  FN [jbd2/sda1-8]
//! ```
//!
//! Columns: `dev cpu sequence seconds pid action rwbs [sector + len] [comm]`.
//! Only `D` (issued to the driver) actions become records, matching tracefs'
//! `block_rq_issue`; the other actions (Q, G, I, M, C, P, U, …) are the same
//! request at other stages and are skipped. The per-CPU summary blkparse
//! prints at the end ends the trace.

use crate::record::{ProcessName, Record, Sector, SectorCount, TimestampNs};
use crate::text::{fields, next_field, parse_rwbs, parse_seconds_ns, parse_u64, DeviceLock, LineParser};

pub(crate) struct BlkparseParser {
    devices: DeviceLock,
    in_summary: bool,
}

impl BlkparseParser {
    pub(crate) fn new(device: Option<&str>) -> BlkparseParser {
        BlkparseParser { devices: DeviceLock::new(device), in_summary: false }
    }
}

impl LineParser for BlkparseParser {
    fn parse(&mut self, line: &[u8]) -> Result<Option<Record>, String> {
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            return Ok(None);
        }
        if trimmed.starts_with(b"CPU") || trimmed.starts_with(b"Total (") {
            self.in_summary = true;
            return Ok(None);
        }
        let mut columns = fields(trimmed);
        let device = next_field(&mut columns, "the device (major,minor)")?;
        if !device.contains(&b',') {
            return Err(format!(
                "expected a device `major,minor` in the first column, found `{}`",
                crate::text::show(device)
            ));
        }
        parse_u64(next_field(&mut columns, "the CPU")?, "the CPU")?;
        parse_u64(next_field(&mut columns, "the sequence number")?, "the sequence number")?;
        let timestamp_ns = parse_seconds_ns(next_field(&mut columns, "the time")?, "the time")?;
        parse_u64(next_field(&mut columns, "the pid")?, "the pid")?;
        let action = next_field(&mut columns, "the action")?;
        let rwbs = next_field(&mut columns, "the rwbs flags")?;
        if action != b"D" || rwbs == b"N" {
            return Ok(None);
        }
        let (start, len, comm) = parse_address_and_comm(trimmed, &mut columns)?;
        if !self.devices.admit(device)? {
            return Ok(None);
        }
        let (op, flags) = parse_rwbs(rwbs, len)?;
        Ok(Some(Record {
            timestamp: TimestampNs(timestamp_ns),
            op,
            flags,
            start,
            len,
            process: ProcessName::from_bytes(comm),
            stream: None,
        }))
    }

    fn finished(&self) -> bool {
        self.in_summary
    }

    fn devices(&self) -> Vec<String> {
        self.devices.devices()
    }
}

/// `223490 + 8 [comm]`, or just `[comm]` for a flush without data.
fn parse_address_and_comm<'a>(
    line: &'a [u8],
    columns: &mut impl Iterator<Item = &'a [u8]>,
) -> Result<(Sector, SectorCount, &'a [u8]), String> {
    let comm_open = memchr::memchr(b'[', line).ok_or("no `[comm]` process name")?;
    let comm_close = memchr::memrchr(b']', line).filter(|&end| end > comm_open).ok_or("`[comm]` is not closed")?;
    let comm = &line[comm_open + 1..comm_close];
    let first = next_field(columns, "`sector + length` or `[comm]`")?;
    if first.starts_with(b"[") {
        return Ok((Sector(0), SectorCount(0), comm));
    }
    let start = parse_u64(first, "the start sector")?;
    if next_field(columns, "`+`")? != b"+" {
        return Err("expected `sector + length`".into());
    }
    let len = parse_u64(next_field(columns, "the length in sectors")?, "the length in sectors")?;
    let len = u32::try_from(len).map_err(|_| format!("length {len} sectors does not fit in 32 bits"))?;
    Ok((Sector(start), SectorCount(len), comm))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Flags, Op};

    #[test]
    fn issue_lines_parse_and_other_actions_are_skipped() {
        let mut parser = BlkparseParser::new(None);
        let record = parser
            .parse(b"  8,0    3       11     0.009507758   697  D  WS 223490 + 8 [kjournald]")
            .expect("valid")
            .expect("D action");
        assert_eq!(
            (record.op, record.flags, record.start, record.len),
            (Op::Write, Flags::SYNC, Sector(223_490), SectorCount(8))
        );
        assert_eq!(record.timestamp, TimestampNs(9_507_758));
        assert_eq!(record.process.as_str(), "kjournald");
        let flush = parser
            .parse(b"  8,0    1       12     0.009513224  1234  D  FN [jbd2/sda1-8]")
            .expect("valid")
            .expect("D action");
        assert_eq!((flush.op, flush.len), (Op::Flush, SectorCount(0)));
        assert_eq!(parser.parse(b"  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]"), Ok(None));
        assert_eq!(parser.parse(b"  8,0    0        5     0.000248350     0  C   R 1572152 + 8 [0]"), Ok(None));
        assert_eq!(parser.parse(b"CPU0 (8,0):"), Ok(None));
        assert!(parser.finished());
    }

    #[test]
    fn malformed_lines_say_what_is_wrong() {
        let mut parser = BlkparseParser::new(None);
        assert!(parser
            .parse(b"  8,0    3       11     0.0095x   697  D  WS 223490 + 8 [k]")
            .unwrap_err()
            .contains("time"));
        assert!(parser.parse(b"  8,0    3       11     0.1   697  D  WS 223490 + [k]").unwrap_err().contains("length"));
        assert!(parser.parse(b"  8,0    3       11     0.1   697  D  WS 223490 + 8 k").unwrap_err().contains("comm"));
        assert!(parser.parse(b"hello").unwrap_err().contains("device"));
    }
}
