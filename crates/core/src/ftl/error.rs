//! The errors of the translation layers: the page-mapped FTL's (and the layers
//! built on it), the host-level FTL's (`host::pblk`), which the page FTL's
//! error carries, and the broken invariant, by name, that the checks report
//! (`ftl/check.rs`). They live on the translation layers' floor, below the
//! host stages that run the layers.

use crate::device::open_channel::OpenChannelError;
use crate::device::DeviceError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FtlError {
    #[error("logical page {lpn} is beyond the logical capacity of {logical_pages} pages")]
    LpnOutOfRange { lpn: u64, logical_pages: u32 },
    #[error("stream {stream} does not exist: the FTL is configured with {streams} streams (ftl.streams)")]
    UnknownStream { stream: u8, streams: u32 },
    #[error("parallel unit {unit} has no free block and nothing to reclaim: the device is full")]
    OutOfSpace { unit: u32 },
    #[error("flash rule violated: {0}")]
    Device(#[from] DeviceError),
    #[error("host-level FTL: {0}")]
    HostFtl(#[from] PblkError),
    #[error("partition {partition} needs more than the {blocks} blocks admission control reserved for it")]
    PartitionFull { partition: u32, blocks: u32 },
    #[error("task {task} belongs to no partition: admission control did not admit it")]
    UnadmittedTask { task: u64 },
    #[error(
        "read of logical page {lpn}, which holds no data (never written or trimmed; ftl.unmapped_reads = \"error\")"
    )]
    UnmappedRead { lpn: u64 },
    #[error("{0}")]
    Invariant(#[from] InvariantError),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PblkError {
    #[error("logical page {lpn} is beyond the logical capacity of {logical_pages} pages")]
    LpnOutOfRange { lpn: u64, logical_pages: u32 },
    #[error("no free line and nothing to reclaim: the device is full ({lines} lines)")]
    OutOfSpace { lines: u32 },
    #[error("open-channel device refused a command: {0}")]
    Device(#[from] OpenChannelError),
}

/// The invariants a layer's [`TranslationLayer::check_invariants`](super::TranslationLayer::check_invariants) checks,
/// by name (not every layer has every one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Invariant {
    /// The forward map (logical to physical) and the reverse map (physical
    /// to logical, or a line's LBA list) are inverse to each other.
    MapsAgree,
    /// A logical page holding data maps to a programmed page of a block in use.
    MappedProgrammed,
    /// Each block's (line's, unit's) valid count equals the pages the maps say are live in it.
    ValidCounts,
    /// Free, open and sealed blocks add up to the geometry: every block is
    /// in exactly one state, the free lists hold exactly the free blocks of
    /// their unit, and a free block holds no data.
    BlockAccounting,
    /// A free block is erased (a pblk free line's chunks are erased or marked for reset).
    FreeErased,
    /// Every open write point (stream × unit, chip, partition lane, line per
    /// class) names a distinct block in the open state in its own unit, and
    /// no other block is open; a sealed block is full.
    OpenBlocks,
    /// Telomere's placement: a partition holds the blocks it owns, within
    /// its budget, its stripe's open blocks are on distinct chips, and a
    /// block's expiry covers the data in it.
    Placement,
    /// pblk's write buffer: each buffered page is one slot, on one queue,
    /// and a queue holds less than one write unit between calls.
    WriteBuffer,
    /// Garbage collection under way: at most one victim per chip (line), in
    /// the victim state, with no live page behind its cursor.
    Victims,
    /// The DFTL mode's map cache: dirty translation pages are cached, the
    /// cache is within its capacity, and no GC-moved entry waits between calls.
    MapCache,
}

impl std::fmt::Display for Invariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Invariant::MapsAgree => "maps-agree",
            Invariant::MappedProgrammed => "mapped-programmed",
            Invariant::ValidCounts => "valid-counts",
            Invariant::BlockAccounting => "block-accounting",
            Invariant::FreeErased => "free-erased",
            Invariant::OpenBlocks => "open-blocks",
            Invariant::Placement => "placement",
            Invariant::WriteBuffer => "write-buffer",
            Invariant::Victims => "victims",
            Invariant::MapCache => "map-cache",
        };
        f.write_str(name)
    }
}

/// A broken invariant: which layer, which invariant, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{layer}: invariant {invariant} broken: {detail}")]
pub struct InvariantError {
    pub layer: &'static str,
    pub invariant: Invariant,
    pub detail: String,
}
