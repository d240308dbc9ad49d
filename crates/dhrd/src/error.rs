//! The one error type of the DHRD library: every failure names what was being done and to which file.

use std::path::PathBuf;

/// Errors of the DHRD device library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DhrdError {
    /// An I/O call on the backing store failed.
    #[error("backing store {path}: {action} failed: {source}")]
    Backing {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// Another process holds the backing store open as a DHRD.
    #[error("backing store {path} is in use by another DHRD process (flock failed)")]
    BackingInUse { path: PathBuf },
    /// The backing store's size does not match the requested device size.
    #[error(
        "backing store {path} is {actual_bytes} bytes but the device size is {expected_bytes} bytes; \
         pass the matching --size or a different backing file"
    )]
    SizeMismatch { path: PathBuf, actual_bytes: u64, expected_bytes: u64 },
    /// The file system holding a new or sparse backing store cannot reserve the device size.
    #[error(
        "backing store {path}: cannot reserve {needed_bytes} bytes, the file system has {available_bytes} \
         bytes free; choose a smaller --size or another file system, or pass --sparse to take the risk \
         of writes failing with ENOSPC later"
    )]
    NoSpace { path: PathBuf, needed_bytes: u64, available_bytes: u64 },
    /// A configuration value is unusable.
    #[error("invalid DHRD configuration: {key} = {value}: {reason}")]
    Config { key: &'static str, value: String, reason: &'static str },
    /// A byte size such as `4GiB` could not be parsed.
    #[error("invalid byte size {text:?}: {reason} (examples: 4096, 64KiB, 1M, 4GiB)")]
    ByteSize { text: String, reason: &'static str },
    /// A request reaches past the end of the device.
    #[error("range {offset}..{end} is outside the device (size {size_bytes} bytes)")]
    OutOfRange { offset: u64, end: u128, size_bytes: u64 },
    /// `verify_mirror` found the RAM image and the backing store disagree.
    #[error("mirror mismatch at byte {offset}: RAM image has {ram:#04x}, backing store has {backing:#04x}")]
    MirrorMismatch { offset: u64, ram: u8, backing: u8 },
    /// A durability mode name was not recognised.
    #[error("unknown durability mode {0:?} (expected direct, dsync or write-back)")]
    UnknownDurability(String),
}

pub type Result<T, E = DhrdError> = std::result::Result<T, E>;
