//! Address and unit types shared by every layer. Distinct types keep a logical
//! page number from being used where a physical one is meant.

use serde::{Deserialize, Serialize};

/// Logical page number: the host's address space in flash-page units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Lpn(pub u32);

/// Physical page number: `block * pages_per_block + page_in_block`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Ppn(pub u32);

/// Physical erase block, numbered across the whole device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BlockId(pub u32);

/// A parallel unit (one plane of one die): the granularity at which the FTL
/// stripes writes and reclaims blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct UnitId(pub u32);

/// Placement hint carried by every write. The FTL keeps one open block per
/// stream and parallel unit, so data of different streams never share a block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StreamId(pub u8);

/// Simulated time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SimNs(pub u64);

impl Lpn {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl Ppn {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl BlockId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl UnitId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl StreamId {
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}
