//! The open-channel device (Open-Channel SSD 2.0 style): it exposes its
//! geometry — groups (channels), parallel units (PUs), chunks and the
//! minimum write size — and does no FTL work. It only enforces the rules of
//! the specification's chunk model and refuses a violation with a typed
//! [`OpenChannelError`]:
//!
//! * a chunk is written sequentially at its write pointer, in multiples of
//!   `ws_min` pages (OCSSD 2.0 §2.1 "Chunk", vector write rules);
//! * a full (closed) chunk takes no write until it is reset (erase before reuse);
//! * a read must lie below the write pointer;
//! * a reset of a free chunk is refused ("Invalid Reset" status): a host FTL
//!   that resets what it never wrote has lost track of its chunks.
//!
//! Chunks are the flash array's blocks: chunk `c` of PU `p` is block
//! `p * chunks_per_pu + c`, and PU `p` sits in group `p % groups`, so the
//! page-level rules of [`FlashArray`] hold underneath as well.

use crate::device::{DeviceError, FlashArray, Geometry};
use crate::units::{BlockId, Ppn, UnitId};
use serde::Serialize;

/// What the device reports in the Geometry log page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OpenChannelGeometry {
    /// Groups (channels).
    pub groups: u32,
    pub pus_per_group: u32,
    pub chunks_per_pu: u32,
    /// Pages per chunk; a page is the device's logical block (OCSSD "sector").
    pub pages_per_chunk: u32,
    /// Minimum write size in pages.
    pub ws_min_pages: u32,
    pub page_bytes: u32,
}

impl OpenChannelGeometry {
    pub fn pus(&self) -> u32 {
        self.groups * self.pus_per_group
    }
}

/// Chunk state as in the Chunk Information log page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkState {
    Free,
    Open,
    Closed,
}

/// One entry of the Chunk Information log page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ChunkInfo {
    pub state: ChunkState,
    pub write_pointer: u32,
    pub resets: u32,
}

/// A chunk address: a PU and the chunk's index inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChunkAddr {
    pub pu: UnitId,
    pub chunk: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenChannelError {
    #[error("write to chunk {chunk} of PU {pu} at page {page}: the chunk's write pointer is {write_pointer}; chunks are written sequentially")]
    NotAtWritePointer { pu: u32, chunk: u32, page: u32, write_pointer: u32 },
    #[error("write of {pages} pages: writes must be a positive multiple of ws_min = {ws_min} pages")]
    WriteSize { pages: u32, ws_min: u32 },
    #[error("write to chunk {chunk} of PU {pu}: the chunk is closed and must be reset before it is written again")]
    ChunkClosed { pu: u32, chunk: u32 },
    #[error(
        "write of {pages} pages at page {page} runs past the end of chunk {chunk} of PU {pu} ({pages_per_chunk} pages)"
    )]
    BeyondChunk { pu: u32, chunk: u32, page: u32, pages: u32, pages_per_chunk: u32 },
    #[error("read of page {page} of chunk {chunk} of PU {pu}: above the write pointer {write_pointer}")]
    ReadAboveWritePointer { pu: u32, chunk: u32, page: u32, write_pointer: u32 },
    #[error("reset of chunk {chunk} of PU {pu}: the chunk is free (Invalid Reset)")]
    InvalidReset { pu: u32, chunk: u32 },
    #[error("chunk {chunk} of PU {pu} does not exist ({pus} PUs of {chunks_per_pu} chunks)")]
    NoSuchChunk { pu: u32, chunk: u32, pus: u32, chunks_per_pu: u32 },
    #[error("ws_min = {ws_min} pages must be at least 1 and divide the {pages_per_chunk} pages of a chunk")]
    BadWriteSize { ws_min: u32, pages_per_chunk: u32 },
    #[error("flash array: {0}")]
    Flash(#[from] DeviceError),
}

/// The device: chunk states over a [`FlashArray`].
#[derive(Debug, Clone)]
pub struct OpenChannelDevice {
    geometry: OpenChannelGeometry,
    flash: FlashArray,
    states: Vec<ChunkState>,
}

impl OpenChannelDevice {
    pub fn new(geometry: &Geometry, ws_min_pages: u32) -> Result<Self, OpenChannelError> {
        if ws_min_pages == 0 || !geometry.pages_per_block.is_multiple_of(ws_min_pages) {
            return Err(OpenChannelError::BadWriteSize {
                ws_min: ws_min_pages,
                pages_per_chunk: geometry.pages_per_block,
            });
        }
        let exposed = OpenChannelGeometry {
            groups: geometry.channels,
            pus_per_group: geometry.units() / geometry.channels,
            chunks_per_pu: geometry.blocks_per_plane,
            pages_per_chunk: geometry.pages_per_block,
            ws_min_pages,
            page_bytes: geometry.page_size,
        };
        Ok(Self {
            geometry: exposed,
            flash: FlashArray::new(geometry),
            states: vec![ChunkState::Free; geometry.blocks() as usize],
        })
    }

    pub fn geometry(&self) -> &OpenChannelGeometry {
        &self.geometry
    }

    pub fn chunk_info(&self, chunk: ChunkAddr) -> Result<ChunkInfo, OpenChannelError> {
        let block = self.block(chunk)?;
        Ok(ChunkInfo {
            state: self.states[block.index()],
            write_pointer: self.flash.write_pointer(block),
            resets: self.flash.erase_count(block),
        })
    }

    /// Writes `pages` pages starting at `page`, which must be the write pointer.
    pub fn write(&mut self, chunk: ChunkAddr, page: u32, pages: u32) -> Result<(), OpenChannelError> {
        let block = self.block(chunk)?;
        let geometry = self.geometry;
        let write_pointer = self.flash.write_pointer(block);
        if self.states[block.index()] == ChunkState::Closed {
            return Err(OpenChannelError::ChunkClosed { pu: chunk.pu.0, chunk: chunk.chunk });
        }
        if pages == 0 || !pages.is_multiple_of(geometry.ws_min_pages) {
            return Err(OpenChannelError::WriteSize { pages, ws_min: geometry.ws_min_pages });
        }
        if page != write_pointer {
            return Err(OpenChannelError::NotAtWritePointer {
                pu: chunk.pu.0,
                chunk: chunk.chunk,
                page,
                write_pointer,
            });
        }
        if page + pages > geometry.pages_per_chunk {
            return Err(OpenChannelError::BeyondChunk {
                pu: chunk.pu.0,
                chunk: chunk.chunk,
                page,
                pages,
                pages_per_chunk: geometry.pages_per_chunk,
            });
        }
        for offset in 0..pages {
            self.flash.program(self.page_address(block, page + offset))?;
        }
        self.states[block.index()] =
            if page + pages == geometry.pages_per_chunk { ChunkState::Closed } else { ChunkState::Open };
        Ok(())
    }

    pub fn read(&self, chunk: ChunkAddr, page: u32) -> Result<(), OpenChannelError> {
        let block = self.block(chunk)?;
        let write_pointer = self.flash.write_pointer(block);
        if page >= write_pointer {
            return Err(OpenChannelError::ReadAboveWritePointer {
                pu: chunk.pu.0,
                chunk: chunk.chunk,
                page,
                write_pointer,
            });
        }
        Ok(self.flash.read(self.page_address(block, page))?)
    }

    /// Erases the chunk; it becomes free with its write pointer at 0.
    pub fn reset(&mut self, chunk: ChunkAddr) -> Result<(), OpenChannelError> {
        let block = self.block(chunk)?;
        if self.states[block.index()] == ChunkState::Free {
            return Err(OpenChannelError::InvalidReset { pu: chunk.pu.0, chunk: chunk.chunk });
        }
        self.flash.erase(block);
        self.states[block.index()] = ChunkState::Free;
        Ok(())
    }

    /// Resets per chunk, indexed like the flash array's blocks.
    pub fn reset_counts(&self) -> &[u32] {
        self.flash.erase_counts()
    }

    fn block(&self, chunk: ChunkAddr) -> Result<BlockId, OpenChannelError> {
        let geometry = &self.geometry;
        if chunk.pu.0 >= geometry.pus() || chunk.chunk >= geometry.chunks_per_pu {
            return Err(OpenChannelError::NoSuchChunk {
                pu: chunk.pu.0,
                chunk: chunk.chunk,
                pus: geometry.pus(),
                chunks_per_pu: geometry.chunks_per_pu,
            });
        }
        Ok(BlockId(chunk.pu.0 * geometry.chunks_per_pu + chunk.chunk))
    }

    fn page_address(&self, block: BlockId, page: u32) -> Ppn {
        self.flash.geometry().page_address(block, page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigBuilder;

    fn device() -> OpenChannelDevice {
        let (_, geometry) = ConfigBuilder::preset("small").and_then(ConfigBuilder::build).expect("valid preset");
        OpenChannelDevice::new(&geometry, 4).expect("4 divides 64")
    }

    const CHUNK: ChunkAddr = ChunkAddr { pu: UnitId(1), chunk: 3 };

    #[test]
    fn exposes_the_geometry() {
        let geometry = *device().geometry();
        assert_eq!((geometry.groups, geometry.pus_per_group, geometry.chunks_per_pu), (2, 2, 64));
        assert_eq!((geometry.pages_per_chunk, geometry.ws_min_pages), (64, 4));
    }

    #[test]
    fn refuses_writes_off_the_write_pointer() {
        let mut device = device();
        device.write(CHUNK, 0, 4).expect("first unit at the write pointer");
        let skip = device.write(CHUNK, 8, 4);
        assert_eq!(skip, Err(OpenChannelError::NotAtWritePointer { pu: 1, chunk: 3, page: 8, write_pointer: 4 }));
        let rewrite = device.write(CHUNK, 0, 4);
        assert_eq!(rewrite, Err(OpenChannelError::NotAtWritePointer { pu: 1, chunk: 3, page: 0, write_pointer: 4 }));
        assert_eq!(device.write(CHUNK, 4, 2), Err(OpenChannelError::WriteSize { pages: 2, ws_min: 4 }));
        assert_eq!(device.chunk_info(CHUNK).map(|info| info.state), Ok(ChunkState::Open));
    }

    #[test]
    fn refuses_reuse_before_reset() {
        let mut device = device();
        for page in (0..64).step_by(4) {
            device.write(CHUNK, page, 4).expect("sequential");
        }
        assert_eq!(device.chunk_info(CHUNK).map(|info| info.state), Ok(ChunkState::Closed));
        assert_eq!(device.write(CHUNK, 0, 4), Err(OpenChannelError::ChunkClosed { pu: 1, chunk: 3 }));
        device.reset(CHUNK).expect("closed chunks reset");
        assert_eq!(device.reset(CHUNK), Err(OpenChannelError::InvalidReset { pu: 1, chunk: 3 }));
        device.write(CHUNK, 0, 4).expect("a reset chunk is written from page 0");
        assert_eq!(device.chunk_info(CHUNK).map(|info| info.resets), Ok(1));
    }

    #[test]
    fn refuses_reads_above_the_write_pointer_and_unknown_chunks() {
        let mut device = device();
        device.write(CHUNK, 0, 4).expect("sequential");
        assert_eq!(device.read(CHUNK, 3), Ok(()));
        assert!(matches!(device.read(CHUNK, 4), Err(OpenChannelError::ReadAboveWritePointer { .. })));
        let nowhere = ChunkAddr { pu: UnitId(4), chunk: 0 };
        assert!(matches!(device.write(nowhere, 0, 4), Err(OpenChannelError::NoSuchChunk { .. })));
    }
}
