//! The block-trace record: one block request as a host issued it, in the
//! device's sector address space. Every reader produces it, every writer and
//! the replay stage consume it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Start address of a request, in sectors of the trace header's sector size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Sector(pub u64);

/// Length of a request in sectors. The block layer's `nr_sector` is 32 bits
/// wide, so no single request can be longer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SectorCount(pub u32);

/// Time of a request in nanoseconds since the trace's first request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TimestampNs(pub u64);

/// Placement or classification tag a request carries (a write-stream hint,
/// or a class assigned by a classifier). Matches the FTL's stream numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StreamTag(pub u8);

/// What a request asks the device to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
    /// DISCARD / TRIM (secure erase is recorded as a discard).
    Discard,
    /// An empty cache flush (REQ_OP_FLUSH); its length is zero.
    Flush,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::Read, Op::Write, Op::Discard, Op::Flush];

    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Discard => "discard",
            Op::Flush => "flush",
        }
    }

    /// Dense index for per-operation tables; the inverse of [`Op::from_index`].
    pub fn index(self) -> usize {
        match self {
            Op::Read => 0,
            Op::Write => 1,
            Op::Discard => 2,
            Op::Flush => 3,
        }
    }

    pub fn from_index(index: u8) -> Option<Op> {
        Op::ALL.get(usize::from(index)).copied()
    }
}

/// Request flags, as the block layer's `rwbs` string shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Flags(u8);

impl Flags {
    /// REQ_SYNC (`S`).
    pub const SYNC: Flags = Flags(1);
    /// REQ_FUA (`F` after the operation).
    pub const FUA: Flags = Flags(2);
    /// REQ_PREFLUSH (`F` before the operation).
    pub const PREFLUSH: Flags = Flags(4);
    /// REQ_META (`M`): file-system metadata.
    pub const META: Flags = Flags(8);
    pub const NONE: Flags = Flags(0);
    const ALL_BITS: u8 = 0x0f;

    pub fn bits(self) -> u8 {
        self.0
    }

    /// `None` if `bits` has a bit no flag uses.
    pub fn from_bits(bits: u8) -> Option<Flags> {
        (bits & !Self::ALL_BITS == 0).then_some(Flags(bits))
    }

    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    #[must_use]
    pub fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

impl fmt::Display for Flags {
    /// The flags in `rwbs` letters, e.g. `SM`; `-` for none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("-");
        }
        for (flag, letter) in [(Flags::PREFLUSH, 'P'), (Flags::FUA, 'F'), (Flags::SYNC, 'S'), (Flags::META, 'M')] {
            if self.contains(flag) {
                write!(f, "{letter}")?;
            }
        }
        Ok(())
    }
}

/// Name of the process that issued a request (the kernel's `comm`, at most
/// 15 bytes; other formats' host names). Stored inline so a record is `Copy`
/// and parsing allocates nothing; names longer than [`ProcessName::CAPACITY`]
/// bytes are cut at a character boundary. Empty means unknown.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ProcessName {
    len: u8,
    bytes: [u8; ProcessName::CAPACITY],
}

impl ProcessName {
    pub const CAPACITY: usize = 31;

    pub fn new(name: &str) -> ProcessName {
        let mut end = name.len().min(Self::CAPACITY);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0; Self::CAPACITY];
        bytes[..end].copy_from_slice(&name.as_bytes()[..end]);
        ProcessName { len: end as u8, bytes }
    }

    /// From raw bytes of a trace line; invalid UTF-8 is replaced.
    pub fn from_bytes(raw: &[u8]) -> ProcessName {
        match std::str::from_utf8(raw) {
            Ok(name) => ProcessName::new(name),
            Err(_) => ProcessName::new(&String::from_utf8_lossy(raw)),
        }
    }

    pub fn as_str(&self) -> &str {
        // Constructed only from `&str` cut at a character boundary.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The name without a kernel thread's instance suffix: `jbd2/loop0-8` →
    /// `jbd2`, `kworker/1:1H` → `kworker`.
    pub fn base(&self) -> &str {
        let name = self.as_str();
        name.split('/').next().unwrap_or(name)
    }

    /// Whether [`ProcessName::base`] is `base` (which holds no `/`),
    /// comparing bytes: asked of every write a trace replays.
    pub fn has_base(&self, base: &str) -> bool {
        let name = &self.bytes[..usize::from(self.len)];
        name.strip_prefix(base.as_bytes()).is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
    }
}

impl fmt::Debug for ProcessName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for ProcessName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One block request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub timestamp: TimestampNs,
    pub op: Op,
    pub flags: Flags,
    pub start: Sector,
    /// Zero for flushes.
    pub len: SectorCount,
    pub process: ProcessName,
    pub stream: Option<StreamTag>,
}

/// Latest timestamp a record may carry, relative to the trace's first
/// request: 2^62 ns, about 146 years. Simulated time adds latencies to it,
/// and this leaves them room without overflow.
pub const TIMESTAMP_NS_MAX: u64 = 1 << 62;

impl Record {
    /// One past the last sector; saturates (a checked record never needs to).
    pub fn end(&self) -> Sector {
        Sector(self.start.0.saturating_add(u64::from(self.len.0)))
    }

    /// What every reader guarantees of the records it yields: the request's
    /// end, in bytes of `sector_bytes`-byte sectors, fits in 64 bits (so any
    /// rescaling to smaller sectors cannot wrap) and its timestamp is at most
    /// [`TIMESTAMP_NS_MAX`]; only a flush has no sectors.
    pub fn check(&self, sector_bytes: u32) -> Result<(), String> {
        let end_bytes =
            self.start.0.checked_add(u64::from(self.len.0)).and_then(|end| end.checked_mul(u64::from(sector_bytes)));
        if end_bytes.is_none() {
            return Err(format!(
                "request at sector {} of {} sectors ends beyond the 64-bit byte address space",
                self.start.0, self.len.0
            ));
        }
        if self.len.0 == 0 && self.op != Op::Flush {
            return Err(format!("a {} of 0 sectors: only flushes are empty", self.op.name()));
        }
        if self.timestamp.0 > TIMESTAMP_NS_MAX {
            return Err(format!(
                "timestamp {} ns is later than the supported {TIMESTAMP_NS_MAX} ns (146 years)",
                self.timestamp.0
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_names_are_cut_at_a_character_boundary() {
        let long = "é".repeat(20); // 40 bytes
        let name = ProcessName::new(&long);
        assert_eq!(name.as_str(), "é".repeat(15));
        assert_eq!(ProcessName::new("jbd2/loop0-8").base(), "jbd2");
        for name in ["jbd2/loop0-8", "jbd2", "jbd", "jbd2x/1", "", "kworker/1:1H", "jbd2x"] {
            let name = ProcessName::new(name);
            assert_eq!(name.has_base("jbd2"), name.base() == "jbd2", "{name:?}");
        }
    }

    #[test]
    fn flags_reject_unknown_bits() {
        assert_eq!(Flags::from_bits(0x10), None);
        let flags = Flags::SYNC.with(Flags::META);
        assert!(flags.contains(Flags::META) && !flags.contains(Flags::FUA));
        assert_eq!(flags.to_string(), "SM");
    }
}
