//! Device configuration: backing store, size, chunk size, durability mode, copier rate; byte-size parsing.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::{DhrdError, Result};

/// Alignment the device promises for sizes and that O_DIRECT needs for offsets, lengths and buffers.
pub const BLOCK_BYTES: u64 = 4096;

/// How a write reaches durable media before it is acknowledged (see docs/dhrd.md, "Durability").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Block-aligned writes go through an `O_DIRECT | O_DSYNC` descriptor (no page-cache copy of the
    /// backing file, durable on return); unaligned writes fall back to `O_DSYNC`. Default.
    Direct,
    /// Every write uses an `O_DSYNC` descriptor: durable on return, backing file also cached.
    Dsync,
    /// Plain buffered writes, made durable only by `flush` (fsync/FUA). Acknowledged writes survive a
    /// killed process (they are in the kernel page cache) but not a power loss before the next flush.
    WriteBack,
}

impl Durability {
    /// True when an acknowledged write is on durable media without waiting for a flush.
    #[must_use]
    pub fn acknowledges_durably(self) -> bool {
        !matches!(self, Durability::WriteBack)
    }
}

impl FromStr for Durability {
    type Err = DhrdError;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "direct" => Ok(Durability::Direct),
            "dsync" => Ok(Durability::Dsync),
            "write-back" | "writeback" => Ok(Durability::WriteBack),
            other => Err(DhrdError::UnknownDurability(other.to_owned())),
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Durability::Direct => "direct",
            Durability::Dsync => "dsync",
            Durability::WriteBack => "write-back",
        })
    }
}

/// Everything needed to open a DHRD.
#[derive(Clone, Debug)]
pub struct DeviceConfig {
    /// Regular file (created 0600 if missing) or block device holding the durable copy.
    pub backing_path: PathBuf,
    /// Device size; `None` takes the size of an existing backing store.
    pub size_bytes: Option<u64>,
    /// Unit of fast initialization and of per-chunk locking (paper section 3.3.1 "chunk").
    pub chunk_bytes: u64,
    pub durability: Durability,
    /// Upper bound on the background copier's read rate; `None` copies as fast as the store allows.
    pub copy_rate_bytes_per_s: Option<u64>,
    /// Leave a regular backing file sparse: no space is reserved at open and discards punch holes.
    /// Off by default: the whole size is allocated at open (or the open fails with `NoSpace`), so a
    /// full file system cannot fail writes later.
    pub sparse: bool,
}

impl DeviceConfig {
    /// Defaults: 1 MiB chunks, `Direct` durability, unthrottled copier, space reserved.
    #[must_use]
    pub fn new(backing_path: impl Into<PathBuf>, size_bytes: Option<u64>) -> Self {
        DeviceConfig {
            backing_path: backing_path.into(),
            size_bytes,
            chunk_bytes: 1 << 20,
            durability: Durability::Direct,
            copy_rate_bytes_per_s: None,
            sparse: false,
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let chunk = self.chunk_bytes;
        if !chunk.is_power_of_two() || !(BLOCK_BYTES..=(1 << 30)).contains(&chunk) {
            return Err(DhrdError::Config {
                key: "chunk_bytes",
                value: chunk.to_string(),
                reason: "must be a power of two between 4 KiB and 1 GiB",
            });
        }
        if let Some(size) = self.size_bytes {
            validate_size(size)?;
        }
        if self.copy_rate_bytes_per_s == Some(0) {
            return Err(DhrdError::Config {
                key: "copy_rate_bytes_per_s",
                value: "0".into(),
                reason: "must be positive (omit it for an unthrottled copier)",
            });
        }
        Ok(())
    }
}

pub(crate) fn validate_size(size: u64) -> Result<()> {
    if size == 0 || !size.is_multiple_of(BLOCK_BYTES) {
        return Err(DhrdError::Config {
            key: "size_bytes",
            value: size.to_string(),
            reason: "must be a positive multiple of 4096",
        });
    }
    Ok(())
}

/// Parses `4096`, `64K`, `64KiB`, `1M`, `4GiB`, `1T` (binary multiples) and `64KB`, `1MB`, `1GB`
/// (decimal multiples).
pub fn parse_byte_size(text: &str) -> Result<u64> {
    nandlab_quote::parse_byte_size(text).map_err(|reason| DhrdError::ByteSize { text: text.to_owned(), reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durability_names_round_trip() {
        for mode in [Durability::Direct, Durability::Dsync, Durability::WriteBack] {
            assert_eq!(mode.to_string().parse::<Durability>().ok(), Some(mode));
        }
        assert!("fast".parse::<Durability>().is_err());
    }
}
