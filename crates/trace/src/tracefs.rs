//! Reader for tracefs event text: what `/sys/kernel/tracing/trace` or
//! `trace_pipe` print for the `block:block_rq_issue` event, e.g.
//!
//! ```text
//!   jbd2/loop0-8-7570  [000] .....  4039.414861: block_rq_issue: 7,0 WSM 1024 () 229378 + 2 be,0,3 [jbd2/loop0-8]
//! ```
//!
//! The payload follows the event's print format: `dev rwbs bytes (cmd)
//! sector + nr_sector [ioprio] [comm]` (the ioprio column appeared in Linux
//! 6.x). Other block events (`block_rq_complete`, `block_bio_queue`, …) are
//! skipped; a line that is no block event at all, or a `LOST EVENTS` marker,
//! is an error — a trace with holes would replay wrongly without a word.

use crate::record::{ProcessName, Record, Sector, SectorCount, TimestampNs};
use crate::text::{fields, next_field, parse_rwbs, parse_seconds_ns, parse_u64, show, DeviceLock, LineParser};
use memchr::memmem;

const ISSUE_EVENT: &[u8] = b"block_rq_issue";

pub(crate) struct TracefsParser {
    devices: DeviceLock,
    event_marker: memmem::Finder<'static>,
}

impl TracefsParser {
    pub(crate) fn new(device: Option<&str>) -> TracefsParser {
        TracefsParser { devices: DeviceLock::new(device), event_marker: memmem::Finder::new(b": block_") }
    }
}

impl LineParser for TracefsParser {
    fn parse(&mut self, line: &[u8]) -> Result<Option<Record>, String> {
        let trimmed = line.trim_ascii_start();
        if trimmed.is_empty() || trimmed[0] == b'#' {
            return Ok(None);
        }
        if memmem::find(line, b"LOST").is_some() && memmem::find(line, b"EVENTS]").is_some() {
            return Err("the kernel dropped events here (trace buffer overrun): the trace is incomplete".into());
        }
        let Some(marker) = self.event_marker.find(line) else {
            return Err(format!("not a tracefs block event line: `{}`", show(line)));
        };
        let timestamp_field = line[..marker].rsplit(|byte| byte.is_ascii_whitespace()).next().unwrap_or_default();
        let event_and_payload = &line[marker + 2..];
        let name_end = memchr::memchr(b':', event_and_payload).ok_or("event name is not followed by `:`")?;
        if &event_and_payload[..name_end] != ISSUE_EVENT {
            return Ok(None);
        }
        let timestamp_ns = parse_seconds_ns(timestamp_field, "a timestamp before the event name")?;
        let payload = &event_and_payload[name_end + 1..];
        parse_issue_payload(payload, timestamp_ns, &mut self.devices)
    }

    fn devices(&self) -> Vec<String> {
        self.devices.devices()
    }
}

/// `7,0 WS 1310720 () 24578 + 2560 be,0,4 [dd]`
fn parse_issue_payload(payload: &[u8], timestamp_ns: u64, devices: &mut DeviceLock) -> Result<Option<Record>, String> {
    let open = memchr::memchr(b'(', payload).ok_or("no `(cmd)` field in the block_rq_issue payload")?;
    let close = open + memchr::memchr(b')', &payload[open..]).ok_or("`(cmd)` field is not closed")?;
    let mut head = fields(&payload[..open]);
    let device = next_field(&mut head, "the device (major,minor)")?;
    let rwbs = next_field(&mut head, "the rwbs flags")?;
    parse_u64(next_field(&mut head, "the byte count")?, "the byte count")?;
    let tail = &payload[close + 1..];
    let comm_open = memchr::memchr(b'[', tail).ok_or("no `[comm]` process name")?;
    let comm_close = memchr::memrchr(b']', tail).filter(|&end| end > comm_open).ok_or("`[comm]` is not closed")?;
    let mut address = fields(&tail[..comm_open]);
    let start = parse_u64(next_field(&mut address, "the start sector")?, "the start sector")?;
    if next_field(&mut address, "`+`")? != b"+" {
        return Err("expected `sector + length`".into());
    }
    let len = parse_u64(next_field(&mut address, "the length in sectors")?, "the length in sectors")?;
    let len = SectorCount(u32::try_from(len).map_err(|_| format!("length {len} sectors does not fit in 32 bits"))?);
    if !devices.admit(device)? {
        return Ok(None);
    }
    let (op, flags) = parse_rwbs(rwbs, len)?;
    Ok(Some(Record {
        timestamp: TimestampNs(timestamp_ns),
        op,
        flags,
        start: Sector(start),
        len,
        process: ProcessName::from_bytes(&tail[comm_open + 1..comm_close]),
        stream: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Flags, Op};

    fn parse(line: &str) -> Result<Option<Record>, String> {
        TracefsParser::new(None).parse(line.as_bytes())
    }

    #[test]
    fn issue_lines_of_linux_6_and_older_kernels_parse() {
        let record = parse("    jbd2/loop0-8-7570    [000] .....  4039.414861: block_rq_issue: 7,0 WSM 1024 () 229378 + 2 be,0,3 [jbd2/loop0-8]")
            .expect("valid line")
            .expect("an issue event");
        assert_eq!(record.timestamp, TimestampNs(4_039_414_861_000));
        assert_eq!((record.op, record.flags), (Op::Write, Flags::SYNC.with(Flags::META)));
        assert_eq!((record.start, record.len), (Sector(229_378), SectorCount(2)));
        assert_eq!(record.process.as_str(), "jbd2/loop0-8");

        let old = parse("  kworker/0:1H-123 [000] d..1 12.5: block_rq_issue: 8,0 FF 0 () 0 + 0 [kworker/0:1H]")
            .expect("valid")
            .expect("event");
        assert_eq!((old.op, old.flags, old.len), (Op::Flush, Flags::PREFLUSH, SectorCount(0)));

        let discard = parse("kworker/1:1H-44 [001] ..... 4039.469758: block_rq_issue: 7,0 D 2097152 () 24578 + 4096 be,0,4 [kworker/1:1H]")
            .expect("valid")
            .expect("event");
        assert_eq!((discard.op, discard.len), (Op::Discard, SectorCount(4096)));
    }

    #[test]
    fn comments_and_other_block_events_are_skipped() {
        assert_eq!(parse("# tracer: nop"), Ok(None));
        assert_eq!(parse(""), Ok(None));
        assert_eq!(parse("dd-1 [001] ..... 1.0: block_rq_complete: 7,0 WS () 24578 + 2560 be,0,4 [0]"), Ok(None));
    }

    #[test]
    fn malformed_lines_say_what_is_wrong() {
        let missing_len = parse("dd-1 [001] ..... 1.0: block_rq_issue: 7,0 WS 4096 () 24578 + [dd]").unwrap_err();
        assert!(missing_len.contains("length"), "{missing_len}");
        let bad_sector = parse("dd-1 [001] ..... 1.0: block_rq_issue: 7,0 WS 4096 () 24x78 + 8 [dd]").unwrap_err();
        assert!(bad_sector.contains("start sector"), "{bad_sector}");
        assert!(parse("hello world").unwrap_err().contains("not a tracefs block event"));
        assert!(parse("CPU:1 [LOST 42 EVENTS]").unwrap_err().contains("dropped"));
        assert!(parse("dd-1 [001] ..... 1.0: block_rq_issue: 7,0 WQ 4096 () 8 + 8 [dd]").unwrap_err().contains("rwbs"));
    }
}
