//! Cache prefetch hints. On a large device the maps are far bigger than the
//! caches, so each host write starts with two dependent cache misses (L2P,
//! then P2L of the old page) and each GC copy with one (L2P of the copied
//! page). Hinting them a few operations ahead overlaps those misses.

/// Asks the CPU to bring `slice[index]` into cache; does nothing when the
/// target has no prefetch instruction. The index is not checked: a prefetch
/// of an address outside the slice is harmless (it never faults), merely
/// useless, so the hot loops pay no bounds test for a hint.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let address: *const i8 = slice.as_ptr().wrapping_add(index).cast();
        // SAFETY: PREFETCHT0 is a hint: it never faults (whatever the
        // address), reads nothing into program state and writes nothing.
        #[allow(unsafe_code)]
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, index);
}
