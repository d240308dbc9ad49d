//! The trace header: what a trace says about the device it was recorded on,
//! how it was captured, and where the file system keeps its journal.

use crate::record::{Sector, SectorCount};
use serde::{Deserialize, Serialize};

/// A contiguous run of sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectorRange {
    pub start: Sector,
    pub len: u64,
}

impl SectorRange {
    /// One past the last sector; saturates (a validated header's ranges
    /// never need to: [`TraceHeader::validate`] refuses those that would).
    pub fn end(&self) -> Sector {
        Sector(self.start.0.saturating_add(self.len))
    }

    /// Does `[start, start + len)` overlap this range?
    pub fn overlaps(&self, start: Sector, len: SectorCount) -> bool {
        start.0 < self.end().0 && self.start.0 < start.0.saturating_add(u64::from(len.0))
    }
}

/// Smallest and largest sector size a trace may declare. Block devices have
/// logical blocks of 512 bytes to 64 KiB, always a power of two; anything
/// else would silently mis-scale every address of the trace.
pub const SECTOR_BYTES_MIN: u32 = 512;
pub const SECTOR_BYTES_MAX: u32 = 65_536;

/// How a trace was captured by `nandlab capture`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CaptureInfo {
    /// File-system type given to mkfs, e.g. `ext4`.
    pub file_system: String,
    /// The mkfs command line that made the file system.
    pub mkfs_command: Vec<String>,
    /// The options mkfs was given, defaults included (`mkfs_command`
    /// without the program and the device), e.g. `-b 4096` for ext4.
    /// Empty in traces captured before it was recorded.
    pub mkfs_options: Vec<String>,
    /// Options passed to `mount -o`.
    pub mount_options: String,
    /// File-system block size in bytes, when known.
    pub block_size_bytes: Option<u32>,
    /// The workload command that ran in the mounted file system.
    pub command: Vec<String>,
    /// Exit status of the workload command (`None` if killed by a signal).
    pub command_exit_code: Option<i32>,
    /// `uname -r` of the capturing kernel.
    pub kernel: String,
    /// The tracefs events that were recorded.
    pub events: Vec<String>,
    /// Events the kernel dropped because the trace buffer overflowed; a
    /// non-zero count means the trace is incomplete.
    pub events_lost: u64,
    /// Capture start, seconds since the Unix epoch.
    pub started_unix_s: u64,
    /// Version of nandlab that captured the trace.
    pub tool_version: String,
}

/// Everything a trace knows beyond its records. Serialized as JSON in the
/// native format; text formats yield a header with only the sector size set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TraceHeader {
    /// Bytes per sector; record addresses and lengths count these.
    pub sector_size_bytes: u32,
    /// Size of the traced device, when known.
    pub device_size_bytes: Option<u64>,
    /// Format the records were originally read from, e.g. `tracefs`.
    pub source_format: Option<String>,
    pub capture: Option<CaptureInfo>,
    /// Where the file system's journal lives (ext4: the extents of the
    /// journal inode), empty when unknown. Writes into it are journal writes.
    pub journal: Vec<SectorRange>,
    /// How the traced device had been aged before the first record, when
    /// the writer knows: a `precondition.kind` name (`none` for a fresh
    /// device, `random-fill`). An emulated session's recording says so, and
    /// a replay ages the same way unless its configuration names a kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aging: Option<String>,
}

impl Default for TraceHeader {
    fn default() -> TraceHeader {
        TraceHeader {
            sector_size_bytes: crate::LINUX_SECTOR_BYTES,
            device_size_bytes: None,
            source_format: None,
            capture: None,
            journal: Vec::new(),
            aging: None,
        }
    }
}

impl TraceHeader {
    /// Checks what the rest of nandlab relies on: a sector size that is a
    /// power of two in [`SECTOR_BYTES_MIN`]..=[`SECTOR_BYTES_MAX`], and
    /// journal ranges whose end, in bytes, fits in 64 bits.
    pub fn validate(&self) -> Result<(), String> {
        let size = self.sector_size_bytes;
        if !(SECTOR_BYTES_MIN..=SECTOR_BYTES_MAX).contains(&size) || !size.is_power_of_two() {
            return Err(format!(
                "sector_size_bytes {size} is not a power of two between {SECTOR_BYTES_MIN} and {SECTOR_BYTES_MAX}"
            ));
        }
        for range in &self.journal {
            let end_bytes = range.start.0.checked_add(range.len).and_then(|end| end.checked_mul(u64::from(size)));
            if end_bytes.is_none() {
                return Err(format!(
                    "journal range {} + {} sectors ends beyond the 64-bit byte address space",
                    range.start.0, range.len
                ));
            }
        }
        Ok(())
    }

    /// Does a request touch the file system's journal?
    pub fn is_journal(&self, start: Sector, len: SectorCount) -> bool {
        self.journal.iter().any(|range| range.overlaps(start, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_header_from_before_mkfs_options_were_recorded_still_reads() {
        let older = r#"{"sector_size_bytes":512,"capture":{"file_system":"ext4","mkfs_command":["mkfs.ext4","/dev/loop0"],
            "mount_options":"discard","block_size_bytes":1024}}"#;
        let header: TraceHeader = serde_json::from_str(older).expect("reads");
        let capture = header.capture.expect("capture info");
        assert!(capture.mkfs_options.is_empty());
        assert_eq!(capture.mount_options, "discard");
    }
}
