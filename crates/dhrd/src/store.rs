//! The boundary between the device and its durable copy: one small trait, so tests can put a
//! simulated disk (one that loses power) where the backing file normally is.

use std::path::Path;

use crate::error::Result;

/// The durable store under a DHRD: the paper's SSD (section 3.1).
///
/// Contract (what `Device` relies on for its durability promise):
/// - `size_bytes` never changes; every range passed in lies inside `0..size_bytes`.
/// - `read` returns, for each byte, what the latest `write` or `zero` put there, durable or not.
/// - `write` and `zero` either succeed for the whole range or return an error; after an error the
///   range may hold any mix of old and new sectors.
/// - If the device's `Durability` acknowledges durably (the store was opened for it), the data of a
///   `write` or `zero` is on durable media when the call returns `Ok`; otherwise it is durable once a
///   later `sync` returns `Ok`.
/// - `sync` returns `Ok` only once everything written before it is on durable media.
/// - Calls arrive from many threads at once. The device never issues overlapping writes
///   concurrently (writes are ordered per chunk), but reads may overlap writes.
pub trait BackingStore: Send + Sync {
    /// Where the durable copy lives, for messages and for the owner and mode a front end shows.
    fn path(&self) -> &Path;
    fn size_bytes(&self) -> u64;
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// `read` into a page-aligned buffer (the initialization copier), which lets a store bypass its
    /// cache.
    fn read_aligned(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.read(offset, buf)
    }
    fn write(&self, offset: u64, data: &[u8]) -> Result<()>;
    /// Makes the range read as zeros (DISCARD, WRITE ZEROES).
    fn zero(&self, offset: u64, len: u64) -> Result<()>;
    fn sync(&self) -> Result<()>;
    /// True when block-aligned I/O bypasses the page cache (reported in the statistics).
    fn bypasses_page_cache(&self) -> bool {
        false
    }
}
