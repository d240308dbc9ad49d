//! Consistency checker for the FTL's maps, kept apart from the code it checks.
//! Used by the property tests; cheap enough to call after every operation on
//! small devices.

use super::{BlockState, PageFtl, NONE};

impl PageFtl {
    /// Verifies that L2P and P2L are inverse to each other, that every block's
    /// valid count equals the number of P2L entries pointing into it (and every
    /// unit's the sum of its blocks'), that
    /// mapped pages are programmed, and that free blocks are erased.
    pub fn check_consistency(&self) -> Result<(), String> {
        let pages_per_block = self.geometry.pages_per_block as usize;
        for (lpn, &ppn) in self.l2p.iter().enumerate() {
            if ppn != NONE && self.p2l[ppn as usize] as usize != lpn {
                return Err(format!("L2P[{lpn}] = {ppn} but P2L[{ppn}] = {}", self.p2l[ppn as usize]));
            }
        }
        for (block, pages) in self.p2l.chunks(pages_per_block).enumerate() {
            let mut valid = 0;
            for (offset, &lpn) in pages.iter().enumerate() {
                if lpn == NONE {
                    continue;
                }
                let ppn = block * pages_per_block + offset;
                if self.l2p[lpn as usize] as usize != ppn {
                    return Err(format!("P2L[{ppn}] = {lpn} but L2P[{lpn}] = {}", self.l2p[lpn as usize]));
                }
                if self.flash.read(crate::units::Ppn(ppn as u32)).is_err() {
                    return Err(format!("logical page {lpn} maps to unprogrammed page {ppn}"));
                }
                valid += 1;
            }
            if self.valid[block] != valid {
                return Err(format!("block {block}: valid count {} but {valid} live pages", self.valid[block]));
            }
            let block_id = crate::units::BlockId(block as u32);
            if self.state[block] == BlockState::Free && self.flash.write_pointer(block_id) != 0 {
                return Err(format!("free block {block} is not erased"));
            }
        }
        let blocks_per_unit = self.geometry.blocks_per_plane as usize;
        for (unit, blocks) in self.valid.chunks(blocks_per_unit).enumerate() {
            let valid: u32 = blocks.iter().sum();
            if self.unit_valid[unit] != valid {
                return Err(format!("unit {unit}: valid count {} but {valid} in its blocks", self.unit_valid[unit]));
            }
        }
        let free_listed: usize = self.free.iter().map(std::collections::VecDeque::len).sum();
        let free_state = self.state.iter().filter(|&&s| s == BlockState::Free).count();
        if free_listed != free_state {
            return Err(format!("{free_listed} blocks in free lists but {free_state} in the free state"));
        }
        Ok(())
    }

    /// Number of mapped logical pages.
    pub fn mapped_pages(&self) -> usize {
        self.l2p.iter().filter(|&&p| p != NONE).count()
    }
}
