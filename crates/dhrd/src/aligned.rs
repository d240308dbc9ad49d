//! Page-aligned byte buffers without `unsafe`: over-allocate and slice at the first aligned address.
//! O_DIRECT needs aligned memory; the RAM image chunks use these so the copier reads straight into them.

pub(crate) const DIRECT_ALIGN: usize = 4096;

pub(crate) struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// A buffer of length 0 that allocates nothing (a chunk before the copier reaches it).
    pub(crate) fn empty() -> AlignedBuf {
        AlignedBuf { storage: Vec::new(), start: 0, len: 0 }
    }

    /// A zero-filled buffer; large ones come from `calloc`/`mmap`, so untouched pages cost no RAM.
    pub(crate) fn zeroed(len: usize) -> AlignedBuf {
        let storage = vec![0u8; len + DIRECT_ALIGN];
        let start = storage.as_ptr().align_offset(DIRECT_ALIGN);
        debug_assert!(start < DIRECT_ALIGN);
        AlignedBuf { storage, start, len }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

/// True when `offset` and `len` are multiples of the O_DIRECT alignment.
pub(crate) fn is_direct_aligned(offset: u64, len: usize) -> bool {
    offset.is_multiple_of(DIRECT_ALIGN as u64) && len.is_multiple_of(DIRECT_ALIGN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_sized() {
        for len in [0, 1, 4096, 100_000] {
            let buf = AlignedBuf::zeroed(len);
            assert_eq!(buf.as_slice().len(), len);
            assert_eq!(buf.as_slice().as_ptr() as usize % DIRECT_ALIGN, 0);
            assert!(buf.as_slice().iter().all(|&b| b == 0));
        }
    }
}
