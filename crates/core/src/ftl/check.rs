//! Invariant checking for every translation layer, kept apart from the code
//! it checks: the checks the page-mapped layers share (maps, valid counts, free
//! lists), the page FTL's own checks, and [`Checked`], a layer that runs
//! [`TranslationLayer::check_invariants`] after every call or every request
//! it forwards (the property tests and the pipeline matrix use it). Each
//! check walks the whole state: cheap enough on small devices.

use super::{BlockState, FlashOp, FtlError, Invariant, InvariantError, PageFtl, TranslationLayer, NONE};
use crate::device::{FlashArray, Geometry};
use crate::metrics::Counters;
use crate::units::{BlockId, Lpn, Ppn, SimNs, StreamId, UnitId};
use std::collections::VecDeque;

/// Builds the errors of one layer's checks.
#[derive(Clone, Copy)]
pub(crate) struct Checker(pub(crate) &'static str);

impl Checker {
    /// `Ok` when `holds`, else the error naming `invariant`, with the detail
    /// formatted only then.
    #[inline]
    pub(crate) fn ensure(
        self,
        holds: bool,
        invariant: Invariant,
        detail: impl FnOnce() -> String,
    ) -> Result<(), InvariantError> {
        if holds {
            return Ok(());
        }
        Err(InvariantError { layer: self.0, invariant, detail: detail() })
    }
}

/// The page maps a page-mapped layer keeps: L2P (logical pages, `NONE` when
/// unmapped), P2L (physical pages, `NONE` when invalid) and the valid count
/// per block.
pub(crate) struct PageMaps<'a> {
    pub(crate) l2p: &'a [u32],
    pub(crate) p2l: &'a [u32],
    pub(crate) valid: &'a [u32],
}

impl PageMaps<'_> {
    /// L2P and P2L are inverse to each other, mapped pages are programmed,
    /// and every block's valid count is its live pages (at most a block's worth).
    pub(crate) fn check(&self, check: Checker, flash: &FlashArray) -> Result<(), InvariantError> {
        for (lpn, &ppn) in self.l2p.iter().enumerate() {
            if ppn == NONE {
                continue;
            }
            let reverse = self.p2l.get(ppn as usize).copied();
            check.ensure(reverse == Some(index_u32(lpn)), Invariant::MapsAgree, || {
                format!("L2P[{lpn}] = {ppn} but P2L[{ppn}] = {reverse:?}")
            })?;
            check.ensure(flash.read(Ppn(ppn)).is_ok(), Invariant::MappedProgrammed, || {
                format!("logical page {lpn} maps to unprogrammed page {ppn}")
            })?;
        }
        let pages_per_block = flash.geometry().pages_per_block as usize;
        for (block, pages) in self.p2l.chunks(pages_per_block).enumerate() {
            let mut live = 0;
            for (offset, &lpn) in pages.iter().enumerate() {
                if lpn == NONE {
                    continue;
                }
                let ppn = block * pages_per_block + offset;
                let forward = self.l2p.get(lpn as usize).copied();
                check.ensure(forward == Some(index_u32(ppn)), Invariant::MapsAgree, || {
                    format!("P2L[{ppn}] = {lpn} but L2P[{lpn}] = {forward:?}")
                })?;
                live += 1;
            }
            check.ensure(self.valid[block] == live, Invariant::ValidCounts, || {
                format!("block {block}: valid count {} but {live} live pages", self.valid[block])
            })?;
        }
        Ok(())
    }
}

/// Each unit's free list holds distinct blocks of that unit in the free
/// state (`is_free`), erased and empty, and together they hold every free
/// block.
pub(crate) fn check_free_lists<'a>(
    check: Checker,
    flash: &FlashArray,
    free: impl Iterator<Item = &'a VecDeque<u32>>,
    is_free: impl Fn(usize) -> bool,
) -> Result<(), InvariantError> {
    let geometry = flash.geometry();
    let mut listed = vec![false; geometry.blocks() as usize];
    for (unit, blocks) in free.enumerate() {
        for &block in blocks {
            let in_unit = geometry.unit_of_block(BlockId(block)).index() == unit;
            let once = !std::mem::replace(&mut listed[block as usize], true);
            check.ensure(in_unit && once && is_free(block as usize), Invariant::BlockAccounting, || {
                format!("unit {unit}'s free list holds block {block} (in its unit: {in_unit}, listed once: {once})")
            })?;
            check.ensure(flash.write_pointer(BlockId(block)) == 0, Invariant::FreeErased, || {
                format!("free block {block} is not erased")
            })?;
        }
    }
    let free_state = (0..listed.len()).filter(|&block| is_free(block)).count();
    let listed = listed.iter().filter(|&&listed| listed).count();
    check.ensure(listed == free_state, Invariant::BlockAccounting, || {
        format!("{listed} blocks in free lists but {free_state} in the free state")
    })
}

/// The open blocks a layer names (one per write point, `None` when the
/// point has none) are distinct, each in the open state (`is_open`) and in
/// the unit of its write point (when the point has one), and they are all
/// the open blocks there are.
pub(crate) fn check_open_blocks(
    check: Checker,
    geometry: &Geometry,
    points: impl Iterator<Item = (Option<UnitId>, u32)>,
    is_open: impl Fn(usize) -> bool,
) -> Result<(), InvariantError> {
    let mut named = vec![false; geometry.blocks() as usize];
    let mut count = 0;
    for (unit, block) in points.filter(|&(_, block)| block != NONE) {
        let in_unit = unit.is_none_or(|unit| geometry.unit_of_block(BlockId(block)) == unit);
        let once = named.get(block as usize).is_some_and(|named| !named);
        check.ensure(in_unit && once && is_open(block as usize), Invariant::OpenBlocks, || {
            format!("a write point of unit {unit:?} names block {block} (in its unit: {in_unit}, once: {once})")
        })?;
        named[block as usize] = true;
        count += 1;
    }
    let open = (0..named.len()).filter(|&block| is_open(block)).count();
    check.ensure(open == count, Invariant::OpenBlocks, || format!("{open} blocks open but {count} write points"))
}

/// A block in the sealed state (`is_sealed`) is full.
pub(crate) fn check_sealed_full(
    check: Checker,
    flash: &FlashArray,
    is_sealed: impl Fn(usize) -> bool,
) -> Result<(), InvariantError> {
    for block in (0..flash.geometry().blocks()).filter(|&block| is_sealed(block as usize)) {
        check.ensure(flash.is_full(BlockId(block)), Invariant::OpenBlocks, || {
            format!("sealed block {block} is not full")
        })?;
    }
    Ok(())
}

/// `index` as a page number: the geometry keeps page counts within u32.
fn index_u32(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

impl PageFtl {
    /// The page FTL's invariants (see [`TranslationLayer::check_invariants`]).
    pub(super) fn check_page_ftl(&self) -> Result<(), InvariantError> {
        let check = Checker("page FTL");
        PageMaps { l2p: &self.l2p, p2l: &self.p2l, valid: &self.valid }.check(check, &self.flash)?;
        let blocks_per_unit = self.geometry.blocks_per_plane as usize;
        for (unit, blocks) in self.valid.chunks(blocks_per_unit).enumerate() {
            let live: u32 = blocks.iter().sum();
            check.ensure(self.unit_valid[unit] == live, Invariant::ValidCounts, || {
                format!("unit {unit}: valid count {} but {live} in its blocks", self.unit_valid[unit])
            })?;
        }
        let state = |block: usize| self.state[block];
        check_free_lists(check, &self.flash, self.free.iter(), |block| state(block) == BlockState::Free)?;
        for block in (0..self.state.len()).filter(|&block| state(block) == BlockState::Free) {
            check.ensure(self.valid[block] == 0, Invariant::BlockAccounting, || {
                format!("free block {block} has {} valid pages", self.valid[block])
            })?;
        }
        let units = self.units as usize;
        let points =
            self.open.iter().enumerate().map(|(index, &block)| (Some(UnitId(index_u32(index % units))), block));
        check_open_blocks(check, &self.geometry, points, |block| state(block) == BlockState::Open)?;
        check_sealed_full(check, &self.flash, |block| state(block) == BlockState::Sealed)?;
        self.check_write_points(check)?;
        self.check_map_cache(check)
    }

    /// Stream rules: a unit's open count is its write points in use, GC
    /// copies have no block of their own when they go beside host writes,
    /// and only the DFTL mode has translation pages (and an open block for them).
    fn check_write_points(&self, check: Checker) -> Result<(), InvariantError> {
        let units = self.units as usize;
        for unit in 0..units {
            let in_use = self.open.iter().skip(unit).step_by(units).filter(|&&block| block != NONE).count();
            check.ensure(self.unit_open[unit] as usize == in_use, Invariant::OpenBlocks, || {
                format!("unit {unit}: {} open blocks counted but {in_use} write points in use", self.unit_open[unit])
            })?;
        }
        let slot_used = |slot: usize| self.open[slot * units..(slot + 1) * units].iter().any(|&block| block != NONE);
        let gc_slot = self.config.streams as usize;
        check.ensure(
            self.config.gc_copies == super::GcCopies::OwnBlock || !slot_used(gc_slot),
            Invariant::OpenBlocks,
            || "GC copies go to the host block, yet GC has an open block".to_string(),
        )?;
        let translation = &self.l2p[self.geometry.logical_pages as usize..];
        check.ensure(
            self.demand.is_some() || (!slot_used(self.translation_slot()) && translation.is_empty()),
            Invariant::OpenBlocks,
            || "translation pages outside the DFTL mode".to_string(),
        )
    }

    fn check_map_cache(&self, check: Checker) -> Result<(), InvariantError> {
        let Some(map) = &self.demand else { return Ok(()) };
        map.check(check)
    }

    /// Number of mapped logical pages.
    pub fn mapped_pages(&self) -> usize {
        self.l2p.iter().filter(|&&p| p != NONE).count()
    }
}

/// When [`Checked`] checks the layer's invariants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckAfter {
    /// After every call that changes the layer: a broken invariant fails
    /// the very call that broke it (property tests on tiny devices).
    EveryCall,
    /// Before the first call of each host request (after
    /// [`TranslationLayer::count_request`]), so after every request: cheap
    /// enough for whole runs through the driver; the state after the last
    /// request is checked by an explicit [`TranslationLayer::check_invariants`].
    EveryRequest,
}

/// A translation layer that forwards every call to `L` and checks its
/// invariants ([`CheckAfter`] says when): a call that finds one broken fails
/// with [`FtlError::Invariant`] naming it. For tests and `verify` builds; it
/// changes nothing else (the same operations, recorded the same way).
#[derive(Debug, Clone)]
pub struct Checked<L> {
    /// Boxed, so that a layer enum can hold a checked one of itself.
    inner: Box<L>,
    after: CheckAfter,
    /// A request began and its first call has not come yet.
    request_began: bool,
}

impl<L: TranslationLayer> Checked<L> {
    pub fn new(inner: L, after: CheckAfter) -> Self {
        Self { inner: Box::new(inner), after, request_began: false }
    }

    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The layer itself, for tests that break an invariant on purpose.
    pub fn inner_mut(&mut self) -> &mut L {
        &mut self.inner
    }

    /// Forwards one call that may change the layer, checking before it
    /// when it is the first of a request, or after it, as configured.
    fn forward<T>(&mut self, call: impl FnOnce(&mut L) -> Result<T, FtlError>) -> Result<T, FtlError> {
        if std::mem::take(&mut self.request_began) {
            self.inner.check_invariants()?;
        }
        let value = call(&mut self.inner)?;
        if self.after == CheckAfter::EveryCall {
            self.inner.check_invariants()?;
        }
        Ok(value)
    }
}

impl<L: TranslationLayer> TranslationLayer for Checked<L> {
    fn geometry(&self) -> &Geometry {
        self.inner.geometry()
    }

    fn counters(&self) -> &Counters {
        self.inner.counters()
    }

    fn erase_counts(&self) -> &[u32] {
        self.inner.erase_counts()
    }

    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }

    fn count_request(&mut self) {
        self.request_began = self.after == CheckAfter::EveryRequest;
        self.inner.count_request();
    }

    fn write(&mut self, lpn: Lpn, stream: StreamId) -> Result<(), FtlError> {
        self.forward(|inner| inner.write(lpn, stream))
    }

    fn read(&mut self, lpn: Lpn) -> Result<(), FtlError> {
        self.forward(|inner| inner.read(lpn))
    }

    fn trim(&mut self, first: Lpn, pages: u32) -> Result<(), FtlError> {
        self.forward(|inner| inner.trim(first, pages))
    }

    fn flush(&mut self) -> Result<(), FtlError> {
        self.forward(|inner| inner.flush())
    }

    fn is_mapped(&self, lpn: Lpn) -> bool {
        self.inner.is_mapped(lpn)
    }

    fn free_blocks(&self, unit: UnitId) -> u32 {
        self.inner.free_blocks(unit)
    }

    fn collect_one(&mut self, unit: UnitId) -> Result<bool, FtlError> {
        self.forward(|inner| inner.collect_one(unit))
    }

    fn advance(&mut self, now: SimNs) -> Result<(), FtlError> {
        self.forward(|inner| inner.advance(now))
    }

    fn follows_time(&self) -> bool {
        self.inner.follows_time()
    }

    fn set_recording(&mut self, on: bool) {
        self.inner.set_recording(on);
    }

    fn recorded(&self) -> &[FlashOp] {
        self.inner.recorded()
    }

    fn clear_recorded(&mut self) {
        self.inner.clear_recorded();
    }

    fn check_invariants(&self) -> Result<(), InvariantError> {
        self.inner.check_invariants()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigBuilder;
    use crate::ftl::{DiscardHandling, FtlConfig};
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// A page FTL on the small preset, filled, then aged by two device
    /// writes of uniform random overwrites in two streams, and a few trims
    /// (GC ran).
    fn aged(discard: DiscardHandling) -> PageFtl {
        let (_, geometry) = ConfigBuilder::preset("small").and_then(ConfigBuilder::build).expect("valid preset");
        let config = FtlConfig { discard, map_cache_fraction: 0.25, streams: 2, ..FtlConfig::default() };
        let mut ftl = PageFtl::new(&geometry, &config, 3).expect("valid FTL");
        let pages = geometry.logical_pages;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for step in 0..3 * pages {
            let lpn = if step < pages { step } else { rng.random_range(0..pages) };
            ftl.write(Lpn(lpn), StreamId(u8::from(step % 5 == 0))).expect("room");
            if step % 64 == 0 {
                ftl.trim(Lpn(rng.random_range(0..pages)), 1).expect("in range");
            }
        }
        assert!(ftl.counters().gc_page_copies > 0, "GC ran");
        ftl
    }

    fn broken(ftl: &PageFtl, corrupt: impl FnOnce(&mut PageFtl)) -> Invariant {
        let mut corrupted = ftl.clone();
        corrupt(&mut corrupted);
        corrupted.check_invariants().expect_err("corrupted").invariant
    }

    #[test]
    fn the_page_ftl_checker_names_what_a_corruption_breaks() {
        let ftl = aged(DiscardHandling::Exact);
        ftl.check_invariants().expect("holds after aging");
        let mapped = ftl.l2p.iter().position(|&ppn| ppn != NONE).expect("a mapped page");
        let ppn = ftl.l2p[mapped] as usize;
        assert_eq!(broken(&ftl, |ftl| ftl.l2p[mapped] = NONE), Invariant::MapsAgree);
        let block = ppn / ftl.geometry.pages_per_block as usize;
        assert_eq!(broken(&ftl, |ftl| ftl.valid[block] += 1), Invariant::ValidCounts);
        assert_eq!(broken(&ftl, |ftl| ftl.unit_valid[0] -= 1), Invariant::ValidCounts);
        assert_eq!(broken(&ftl, |ftl| ftl.free[1].push_back(0)), Invariant::BlockAccounting);
        let open = ftl.open.iter().position(|&block| block != NONE).expect("an open block");
        assert_eq!(broken(&ftl, |ftl| ftl.open[open] = NONE), Invariant::OpenBlocks);
        assert_eq!(broken(&ftl, |ftl| ftl.unit_open[0] += 1), Invariant::OpenBlocks);
    }

    /// The wrapper forwards every call and fails the first one after which
    /// an invariant no longer holds, naming it.
    #[test]
    fn checked_fails_the_call_after_which_an_invariant_breaks() {
        let mut checked = Checked::new(aged(DiscardHandling::Exact), CheckAfter::EveryCall);
        for lpn in 0..64 {
            checked.write(Lpn(lpn), StreamId(0)).expect("the invariants hold");
        }
        let sealed = checked.inner().state.iter().position(|&state| state == BlockState::Sealed).expect("sealed");
        checked.inner_mut().valid[sealed] += 1;
        let error = checked.read(Lpn(0)).expect_err("the corruption is found after the next call");
        assert!(matches!(&error, FtlError::Invariant(broken) if broken.invariant == Invariant::ValidCounts), "{error}");
        assert!(error.to_string().contains("page FTL: invariant valid-counts broken"), "{error}");
        let mut per_request = Checked::new(checked.inner().clone(), CheckAfter::EveryRequest);
        per_request.read(Lpn(0)).expect("not checked before a request began");
        per_request.count_request();
        let error = per_request.read(Lpn(0)).expect_err("checked at the request's first call");
        assert!(matches!(&error, FtlError::Invariant(broken) if broken.invariant == Invariant::ValidCounts), "{error}");
    }
}
