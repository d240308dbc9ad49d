//! The flash array: per-block write pointers and erase counts. It refuses what
//! real NAND cannot do — programming a page out of order within a block,
//! programming a written page before its block is erased, reading a page never
//! programmed — so a buggy FTL fails loudly instead of producing silent garbage.

use crate::device::Geometry;
use crate::units::{BlockId, Ppn};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    #[error("page {page} of block {block} programmed out of order: the block's next page is {expected}")]
    OutOfOrderProgram { block: u32, page: u32, expected: u32 },
    #[error("block {block} is full: it must be erased before it is programmed again")]
    ProgramFullBlock { block: u32 },
    #[error("page {page} of block {block} read before it was programmed")]
    ReadUnwritten { block: u32, page: u32 },
    #[error("physical page {0} is beyond the device")]
    OutOfRange(u32),
}

/// Physical state of every block. Memory is a few bytes per block, nothing per page.
#[derive(Debug, Clone)]
pub struct FlashArray {
    geometry: Geometry,
    next_page: Vec<u32>,
    erase_count: Vec<u32>,
}

impl FlashArray {
    pub fn new(geometry: &Geometry) -> Self {
        let blocks = geometry.blocks() as usize;
        Self { geometry: *geometry, next_page: vec![0; blocks], erase_count: vec![0; blocks] }
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// Programs `page`, which must be the next free page of its block.
    pub fn program(&mut self, page: Ppn) -> Result<(), DeviceError> {
        let block = self.block_index(page)?;
        let in_block = self.geometry.page_in_block(page);
        let expected = self.next_page[block];
        if expected >= self.geometry.pages_per_block {
            return Err(DeviceError::ProgramFullBlock { block: self.geometry.block_of_page(page).0 });
        }
        if in_block != expected {
            return Err(DeviceError::OutOfOrderProgram {
                block: self.geometry.block_of_page(page).0,
                page: in_block,
                expected,
            });
        }
        self.next_page[block] = expected + 1;
        Ok(())
    }

    /// Programs the next free page of `block` and returns it: the one page
    /// a block may be programmed at, so what can go wrong is a full block.
    #[inline]
    pub fn program_next(&mut self, block: BlockId) -> Result<Ppn, DeviceError> {
        self.program_run(block, 1)
    }

    /// Programs the next `pages` free pages of `block` in order and returns
    /// the first; refuses a run longer than the block's free pages.
    #[inline]
    pub fn program_run(&mut self, block: BlockId, pages: u32) -> Result<Ppn, DeviceError> {
        let next = &mut self.next_page[block.index()];
        if pages > self.geometry.pages_per_block - *next {
            return Err(DeviceError::ProgramFullBlock { block: block.0 });
        }
        let page = self.geometry.page_address(block, *next);
        *next += pages;
        Ok(page)
    }

    /// Checks that `page` holds programmed data.
    pub fn read(&self, page: Ppn) -> Result<(), DeviceError> {
        let block = self.block_index(page)?;
        let in_block = self.geometry.page_in_block(page);
        if in_block >= self.next_page[block] {
            return Err(DeviceError::ReadUnwritten { block: self.geometry.block_of_page(page).0, page: in_block });
        }
        Ok(())
    }

    pub fn erase(&mut self, block: BlockId) {
        self.next_page[block.index()] = 0;
        self.erase_count[block.index()] += 1;
    }

    /// The page the next program of `block` must target.
    pub fn write_pointer(&self, block: BlockId) -> u32 {
        self.next_page[block.index()]
    }

    pub fn is_full(&self, block: BlockId) -> bool {
        self.next_page[block.index()] == self.geometry.pages_per_block
    }

    pub fn erase_count(&self, block: BlockId) -> u32 {
        self.erase_count[block.index()]
    }

    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    /// Heap bytes held by the array.
    pub fn memory_bytes(&self) -> usize {
        (self.next_page.capacity() + self.erase_count.capacity()) * std::mem::size_of::<u32>()
    }

    fn block_index(&self, page: Ppn) -> Result<usize, DeviceError> {
        if page.0 >= self.geometry.physical_pages() {
            return Err(DeviceError::OutOfRange(page.0));
        }
        Ok(self.geometry.block_of_page(page).index())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigBuilder;

    fn flash() -> FlashArray {
        let (_, geometry) = ConfigBuilder::preset("small").and_then(ConfigBuilder::build).expect("valid");
        FlashArray::new(&geometry)
    }

    #[test]
    fn refuses_out_of_order_and_unerased_programs() {
        let mut flash = flash();
        let pages = flash.geometry().pages_per_block;
        assert_eq!(flash.program(Ppn(1)), Err(DeviceError::OutOfOrderProgram { block: 0, page: 1, expected: 0 }));
        for page in 0..pages {
            flash.program(Ppn(page)).expect("in order");
        }
        assert_eq!(flash.program(Ppn(0)), Err(DeviceError::ProgramFullBlock { block: 0 }));
        flash.erase(BlockId(0));
        assert_eq!(flash.erase_count(BlockId(0)), 1);
        flash.program(Ppn(0)).expect("erased block takes its first page");
    }

    #[test]
    fn programs_the_next_page_until_the_block_is_full() {
        let mut flash = flash();
        let pages = flash.geometry().pages_per_block;
        flash.program(Ppn(pages)).expect("first page of block 1");
        assert_eq!(flash.program_next(BlockId(1)), Ok(Ppn(pages + 1)));
        for page in 2..pages {
            assert_eq!(flash.program_next(BlockId(1)), Ok(Ppn(pages + page)));
        }
        assert_eq!(flash.program_next(BlockId(1)), Err(DeviceError::ProgramFullBlock { block: 1 }));
        assert_eq!(flash.program(Ppn(2 * pages - 1)), Err(DeviceError::ProgramFullBlock { block: 1 }));
        assert_eq!(flash.program_run(BlockId(2), pages - 1), Ok(Ppn(2 * pages)));
        assert_eq!(flash.program_run(BlockId(2), 2), Err(DeviceError::ProgramFullBlock { block: 2 }));
        assert_eq!(flash.program_run(BlockId(2), 1), Ok(Ppn(3 * pages - 1)));
    }

    #[test]
    fn refuses_reads_of_unwritten_pages() {
        let mut flash = flash();
        assert_eq!(flash.read(Ppn(0)), Err(DeviceError::ReadUnwritten { block: 0, page: 0 }));
        flash.program(Ppn(0)).expect("in order");
        assert_eq!(flash.read(Ppn(0)), Ok(()));
        assert!(matches!(flash.read(Ppn(u32::MAX - 1)), Err(DeviceError::OutOfRange(_))));
    }
}
