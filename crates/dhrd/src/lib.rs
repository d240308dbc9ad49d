//! nandlab-dhrd: the Durable Hybrid RAM Disk of Lee et al. (paper 001, sections 3 and 4) as a
//! library. A RAM image serves every read; every write goes to a durable backing store and to RAM
//! and is acknowledged only when durable; after any crash the next `Device::open` recovers from the
//! backing store alone, serving requests at once while a background copier refills RAM chunk by
//! chunk (fast initialization, section 3.3). `Device::read_at` is the direct byte read (section 3.4).
//! Mechanism, durability modes and measurements: docs/dhrd.md.

mod aligned;
mod backing;
pub mod bench;
mod chunk;
mod config;
mod device;
mod error;
mod stats;
mod store;

pub use chunk::ChunkState;
pub use config::{parse_byte_size, DeviceConfig, Durability, BLOCK_BYTES};
pub use device::Device;
pub use error::{DhrdError, Result};
pub use stats::{InitProgress, LatencySummary, StatsSnapshot};
pub use store::BackingStore;
