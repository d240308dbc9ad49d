//! The block-device boundary the NBD and FUSE front ends serve: the DHRD (see [`crate::dhrd`]) or
//! the emulated SSD (`nandlab emulate`).

use std::io;
use std::path::Path;
use std::time::Instant;

/// Why a block-device request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlockError {
    /// The range does not lie inside the device; nothing was done.
    #[error("bytes {offset}..{end} lie past the end of the {size_bytes}-byte device")]
    OutOfRange { offset: u64, end: u128, size_bytes: u64 },
    /// The device's storage failed; the OS error, when there is one, says how.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl BlockError {
    /// The OS error number (ENOSPC, EIO, ...; EIO when the failure has none); `None` when the range
    /// was out of bounds, which each protocol answers its own way.
    #[must_use]
    pub fn errno(&self) -> Option<i32> {
        match self {
            BlockError::OutOfRange { .. } => None,
            BlockError::Io(err) => Some(err.raw_os_error().unwrap_or(EIO)),
        }
    }
}

/// EIO (asm-generic/errno-base.h): what a failure without an OS error reports.
const EIO: i32 = 5;

/// What the serving daemon adds to a device's statistics.
#[derive(Clone, Copy, Debug)]
pub struct DaemonInfo {
    pub pid: u32,
    /// A stop was asked for and waits for the disk's users to let go.
    pub stop_requested: bool,
}

/// A block device served to clients over NBD or as FUSE's `DIR/disk`.
///
/// Contract: offsets and lengths are in bytes; a range that does not lie inside
/// [`Self::size_bytes`] is refused with [`BlockError::OutOfRange`] and changes nothing. Calls may
/// come from several threads at once. A write or discard is acknowledged when it returns; with `fua`
/// it is durable by then; [`Self::flush`] makes every acknowledged write durable. A discarded range reads
/// as zeros until written again.
pub trait BlockDevice: Send + Sync + 'static {
    fn size_bytes(&self) -> u64;
    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<(), BlockError>;
    /// Reads `len` bytes and hands them to `consume` (a device may lend its own memory).
    fn read_with(&self, offset: u64, len: usize, consume: &mut dyn FnMut(&[u8])) -> Result<(), BlockError> {
        let mut buffer = vec![0; len];
        self.read_at(offset, &mut buffer)?;
        consume(&buffer);
        Ok(())
    }
    fn write_at(&self, offset: u64, data: &[u8], fua: bool) -> Result<(), BlockError>;
    fn discard(&self, offset: u64, len: u64, fua: bool) -> Result<(), BlockError>;
    fn flush(&self) -> Result<(), BlockError>;
    /// The file whose mode and owner the device's users get (FUSE reports them for `DIR/disk`, and
    /// chmod/chown change it); `None`: the daemon's user, mode 0600.
    fn backing_path(&self) -> Option<&Path> {
        None
    }
    /// The text of `DIR/stats`.
    fn stats_text(&self, daemon: DaemonInfo) -> String;
    /// The same device taking requests without a thread waiting on each, when it can hold several
    /// at once (the NBD server then reads a connection's requests straight into it); `None`: the
    /// server calls the methods above, one request thread per request in flight.
    fn queueing(&self) -> Option<&dyn QueueingDevice> {
        None
    }
}

/// What a request to a [`QueueingDevice`] asks.
#[derive(Debug)]
pub enum Command {
    /// Read `len` bytes; the completion carries them.
    Read {
        len: usize,
    },
    Write {
        data: Vec<u8>,
        fua: bool,
    },
    Discard {
        len: u64,
        fua: bool,
    },
    Flush,
}

/// A request handed to a [`QueueingDevice`].
#[derive(Debug)]
pub struct Submission {
    /// Where it starts, in bytes (0 for a flush).
    pub offset: u64,
    pub command: Command,
    /// When the server read it off the wire: the time the client's request waited in the server
    /// before the device took it counts from here ([`QueueingDevice::answered`]).
    pub received: Instant,
}

/// How a queued request is answered: called once, from any thread (the device's, or the
/// submitter's before `submit` returns), with a read's data (empty for the other commands) or
/// why it failed.
pub type Completion = Box<dyn FnOnce(Result<Vec<u8>, BlockError>) + Send>;

/// A block device that holds several requests at once and answers each when it completes, in
/// any order, without a thread waiting for it.
///
/// Contract: as [`BlockDevice`]'s methods for the same command (ranges, durability, zeros after a
/// discard), and besides: a request takes effect on the data in the order submitted (a read
/// submitted after a write on one thread reads what it wrote), whenever it is answered; `done`
/// is called exactly once for every submission, also when the device stops with requests
/// in flight; [`Self::answered`] is told when the reply left, so the device can report what
/// the client waited.
pub trait QueueingDevice: Send + Sync {
    fn submit(&self, submission: Submission, done: Completion);
    /// The reply to a request of `command`'s kind submitted with `received` has been sent.
    fn answered(&self, kind: CommandKind, received: Instant);
}

/// Which command a request was, without its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    Read,
    Write,
    Discard,
    Flush,
}

impl Command {
    #[must_use]
    pub fn kind(&self) -> CommandKind {
        match self {
            Command::Read { .. } => CommandKind::Read,
            Command::Write { .. } => CommandKind::Write,
            Command::Discard { .. } => CommandKind::Discard,
            Command::Flush => CommandKind::Flush,
        }
    }
}
