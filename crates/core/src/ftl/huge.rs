//! Maps that ask the kernel for transparent huge pages. On a large device
//! the L2P and P2L maps take tens of MiB and every host write and GC copy
//! touches them at random: with 4 KiB pages nearly every such access also
//! misses the TLB (a page walk, doubly costly under virtualisation), with
//! 2 MiB pages the whole map needs a few dozen TLB entries. Where the kernel
//! leaves huge pages to `madvise` (a common default), a program must ask.
//! The contents are the same either way; only the speed differs.

/// Smallest map worth the request (the kernel backs only whole 2 MiB pages).
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// A vector of `len` copies of `value`, its buffer advised for huge pages
/// before it is first touched (Linux; elsewhere a plain vector).
pub fn map_of(len: usize, value: u32) -> Vec<u32> {
    let mut map = Vec::with_capacity(len);
    advise_huge_pages(&map);
    map.resize(len, value);
    map
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(map: &Vec<u32>) {
    let bytes = map.capacity() * std::mem::size_of::<u32>();
    if bytes < 2 * HUGE_PAGE_BYTES {
        return;
    }
    // madvise wants a page-aligned range: the whole huge pages inside the buffer.
    let start = map.as_ptr() as usize;
    let aligned = start.next_multiple_of(HUGE_PAGE_BYTES);
    let length = (start + bytes - aligned) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
    // SAFETY: the range lies inside the vector's own allocation (aligned up
    // from its start, rounded down before its end); MADV_HUGEPAGE changes
    // how the kernel backs the pages, never their contents, and a refusal
    // (an older kernel, huge pages off) is harmless, so the result is ignored.
    #[allow(unsafe_code)]
    unsafe {
        libc::madvise(aligned as *mut libc::c_void, length, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_: &Vec<u32>) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_the_value_everywhere_at_any_size() {
        for len in [0, 1, 1000, 3 * HUGE_PAGE_BYTES / 4 + 17] {
            let map = map_of(len, u32::MAX);
            assert_eq!(map.len(), len);
            assert!(map.iter().all(|&entry| entry == u32::MAX));
        }
    }
}
