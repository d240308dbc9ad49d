//! The device side of DISCARD (`ftl.discard`), and the DFTL-like mode that
//! makes mapping updates cost flash writes: DFTL (Gupta, Kim and Urgaonkar,
//! "DFTL: a flash translation layer employing demand-based selective caching
//! of page-level address mappings", ASPLOS 2009) keeps the page map in flash
//! translation pages and caches a subset of them in the controller's SRAM.
//!
//! nandlab's reading (docs/configuration.md, docs/delay-d.md):
//! * The cache holds whole translation pages (`ftl.map_cache_fraction` of
//!   the map's, at least one, least recently used out), each of
//!   `page_size / 4` entries. It is the one mapping-cache model: in timed
//!   mode a DISCARD waits for the translation pages it missed (read) and
//!   the dirty ones it evicted (written back) on their dies.
//!   DFTL's cached mapping table holds single entries; whole pages are the
//!   granularity at which a dirty entry costs a write-back, which is what
//!   this mode is for.
//! * A host write or a DISCARD that changes an entry uses its translation
//!   page: on a miss it is read from flash (if it was ever written); the
//!   page becomes dirty; evicting a dirty page writes it back — a
//!   translation-page write, into its own open block per unit.
//! * GC moving a data page changes its entry: a cached page just becomes
//!   dirty; otherwise, as in DFTL's batch update, the translation page is
//!   read, updated and written once after the GC step, for all the moved
//!   entries it holds.
//! * Translation pages live at hidden logical pages past the host's, so GC
//!   copies them like data (counted apart as `translation_gc_copies`); the
//!   global translation directory (where each translation page is) stays in
//!   SRAM and costs nothing.
//! * A read only looks its entry up (a miss reads the translation page).

use super::check::Checker;
use super::{FlashOpKind, FtlConfig, FtlError, Invariant, InvariantError, PageFtl, NONE};
use crate::device::Geometry;
use crate::error::ConfigError;
use crate::ftl::map_cache::MapCache;
use crate::units::{Lpn, UnitId};
use nandlab_convert::saturating;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet};

/// What the device does with a DISCARD (`ftl.discard`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiscardHandling {
    /// The pages are unmapped at once, at no flash cost (a RAM-resident map).
    #[default]
    Exact,
    /// The command completes and changes nothing: FEMU's black-box SSD until its TRIM support of July 2025
    /// (`ftl_thread` answers a DSM with `lat = 0`; docs/delay-d.md).
    Ignored,
    /// DFTL-like: the map lives in flash translation pages with an LRU cache
    /// of `ftl.map_cache_fraction` of them; mapping updates (writes, DISCARDs,
    /// GC moves) dirty pages that cost a write when evicted.
    Dftl,
}

/// A sixteenth of the map: on a 4 GiB device of 4 KiB pages, 64 of its
/// 1,024 translation pages (256 MiB mapped). An assumption, not a value
/// from the papers; a fraction, so that a small device's cache is small too.
pub(super) fn default_map_cache_fraction() -> f64 {
    1.0 / 16.0
}

/// Translation pages the controller caches: `ftl.map_cache_fraction` of
/// the map's, rounded up, at least one; none outside the DFTL mode (the
/// whole map is in RAM).
pub fn map_cache_pages(geometry: &Geometry, config: &FtlConfig) -> u32 {
    if config.discard != DiscardHandling::Dftl {
        return 0;
    }
    let map_pages = geometry.logical_pages.div_ceil(entries_per_page(geometry));
    // A fraction in (0, 1] of a u32 count.
    let cached = saturating::<u32>((f64::from(map_pages) * config.map_cache_fraction).ceil());
    cached.clamp(1, map_pages.max(1))
}

/// Checks the `ftl.discard` keys.
pub(super) fn validate(config: &FtlConfig) -> Result<(), ConfigError> {
    let fraction = config.map_cache_fraction;
    if !(fraction.is_finite() && fraction > 0.0 && fraction <= 1.0) {
        return Err(ConfigError::new(
            "ftl.map_cache_fraction",
            format!("{fraction} is not a fraction in (0, 1] of the map's translation pages (e.g. 0.0625)"),
        ));
    }
    if config.discard != DiscardHandling::Exact && config.kind != super::LayerKind::Page {
        return Err(ConfigError::new(
            "ftl.discard",
            "applies to the device-side page FTL (ftl.kind = \"page\"); the open-channel device maps in the host",
        ));
    }
    Ok(())
}

/// Mapping entries per translation page: 4-byte physical page numbers.
fn entries_per_page(geometry: &Geometry) -> u32 {
    (geometry.page_size / 4).max(1)
}

/// Translation pages the DFTL mode keeps beyond the host's logical pages.
pub(super) fn translation_pages(geometry: &Geometry, config: &FtlConfig) -> u32 {
    match config.discard {
        DiscardHandling::Dftl => geometry.logical_pages.div_ceil(entries_per_page(geometry)),
        DiscardHandling::Exact | DiscardHandling::Ignored => 0,
    }
}

/// The DFTL mode's state: which translation pages are cached, which of
/// those are dirty, and which uncached ones GC changed.
#[derive(Debug, Clone)]
pub(super) struct DemandMap {
    cache: MapCache,
    dirty: HashSet<u32>,
    moved: BTreeSet<u32>,
    entries_per_page: u32,
}

impl DemandMap {
    pub(super) fn new(geometry: &Geometry, config: &FtlConfig) -> Option<Self> {
        (config.discard == DiscardHandling::Dftl).then(|| Self {
            cache: MapCache::new(map_cache_pages(geometry, config)),
            dirty: HashSet::new(),
            moved: BTreeSet::new(),
            entries_per_page: entries_per_page(geometry),
        })
    }

    fn page_of(&self, lpn: Lpn) -> u32 {
        lpn.0 / self.entries_per_page
    }

    /// Between calls every translation page GC changed was written back,
    /// the dirty pages are cached, and the cache is within its capacity.
    pub(super) fn check(&self, check: Checker) -> Result<(), InvariantError> {
        check.ensure(self.moved.is_empty(), Invariant::MapCache, || {
            format!("{} translation pages GC changed are not written back", self.moved.len())
        })?;
        check.ensure(self.cache.is_within_capacity(), Invariant::MapCache, || {
            "the map cache holds more pages than its capacity".to_string()
        })?;
        let uncached = self.dirty.iter().filter(|&&page| !self.cache.contains(u64::from(page))).min();
        check.ensure(uncached.is_none(), Invariant::MapCache, || {
            format!("dirty translation page {uncached:?} is not cached")
        })
    }
}

impl PageFtl {
    /// The hidden logical page holding translation page `page`.
    fn translation_lpn(&self, page: u32) -> Lpn {
        Lpn(self.geometry.logical_pages + page)
    }

    /// Brings the translation page of `lpn` into the cache, reading it on a
    /// miss and writing back a dirty page it evicts; `dirty`: the caller
    /// changes the entry. Without DFTL's cache, nothing (checked inline, so
    /// the other modes pay one branch per page).
    #[inline]
    pub(super) fn use_mapping(&mut self, lpn: Lpn, dirty: bool) -> Result<(), FtlError> {
        if self.demand.is_none() {
            return Ok(());
        }
        self.use_cached_mapping(lpn, dirty)
    }

    fn use_cached_mapping(&mut self, lpn: Lpn, dirty: bool) -> Result<(), FtlError> {
        let Some(map) = self.demand.as_mut() else { return Ok(()) };
        let page = map.page_of(lpn);
        let access = map.cache.access(u64::from(page));
        if access.cached {
            self.counters.map_cache_hits += 1;
        } else {
            self.counters.map_cache_misses += 1;
        }
        if dirty {
            map.dirty.insert(page);
            map.moved.remove(&page);
        }
        // The cache holds translation page numbers, which are u32.
        let evicted = access.evicted.map(|evicted| evicted as u32).filter(|evicted| map.dirty.remove(evicted));
        if !access.cached {
            self.read_translation(page);
        }
        if let Some(evicted) = evicted {
            self.write_translation(evicted)?;
        }
        Ok(())
    }

    /// GC moved the data page of `lpn` (nothing to do for a translation
    /// page: the directory that locates those is in SRAM). Only DFTL's
    /// mode has translation pages and a cache, so without it: nothing.
    #[inline]
    pub(super) fn mapping_moved(&mut self, lpn: Lpn) {
        if self.demand.is_some() {
            self.cached_mapping_moved(lpn);
        }
    }

    fn cached_mapping_moved(&mut self, lpn: Lpn) {
        if lpn.0 >= self.geometry.logical_pages {
            self.counters.translation_gc_copies += 1;
            return;
        }
        let Some(map) = self.demand.as_mut() else { return };
        let page = map.page_of(lpn);
        if map.cache.contains(u64::from(page)) {
            map.dirty.insert(page);
        } else {
            map.moved.insert(page);
        }
    }

    /// Writes back the uncached translation pages GC changed (DFTL's batch
    /// update), each read and written once. Their writes may collect again
    /// and move more entries; a device whose GC keeps changing more pages
    /// than it frees cannot keep up, which is reported as full rather than
    /// looping on.
    #[inline]
    pub(super) fn write_back_moved(&mut self) -> Result<(), FtlError> {
        if self.demand.as_ref().is_none_or(|map| map.moved.is_empty()) {
            return Ok(());
        }
        self.write_back_moved_pages()
    }

    fn write_back_moved_pages(&mut self) -> Result<(), FtlError> {
        let mut budget = self.geometry.physical_pages();
        while let Some(page) = self.demand.as_mut().and_then(|map| map.moved.pop_first()) {
            budget = budget.checked_sub(1).ok_or(FtlError::OutOfSpace { unit: 0 })?;
            self.read_translation(page);
            self.write_translation(page)?;
        }
        Ok(())
    }

    fn read_translation(&mut self, page: u32) {
        let ppn = self.l2p[self.translation_lpn(page).index()];
        if ppn == NONE {
            return; // Never written: every entry is unmapped.
        }
        let unit = self.geometry.unit_of_block(self.geometry.block_of_page(crate::units::Ppn(ppn)));
        self.record(FlashOpKind::Read, unit, false);
        self.counters.translation_pages_read += 1;
        self.counters.flash_pages_read += 1;
    }

    fn write_translation(&mut self, page: u32) -> Result<(), FtlError> {
        let lpn = self.translation_lpn(page);
        let old = self.l2p[lpn.index()];
        if old != NONE {
            self.invalidate(crate::units::Ppn(old));
        }
        let unit: UnitId = self.advance_unit();
        self.program_next(self.translation_slot(), unit, lpn)?;
        self.counters.translation_pages_written += 1;
        self.collect_while_short(unit)
    }

    /// The open-block slot of translation pages: after the host streams and GC.
    pub(super) fn translation_slot(&self) -> usize {
        self.config.streams as usize + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceConfig;
    use crate::ftl::TranslationLayer;
    use crate::units::StreamId;

    /// 4 units of 32 blocks of 64 pages of 4 KiB, 25 % spare: 6,554 logical
    /// pages in 7 translation pages of 1,024 entries.
    fn geometry() -> Geometry {
        let config = DeviceConfig {
            channels: 2,
            chips_per_channel: 2,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 32,
            pages_per_block: 64,
            page_size: 4096,
            over_provisioning: Some(0.25),
            logical_pages: None,
            pe_cycles: 3000,
        };
        Geometry::from_config(&config).expect("valid geometry")
    }

    /// A page FTL on [`geometry`] caching `map_cache_fraction` of its 7 translation pages.
    fn ftl(discard: DiscardHandling, map_cache_fraction: f64) -> PageFtl {
        let config = FtlConfig { discard, map_cache_fraction, ..FtlConfig::default() };
        PageFtl::new(&geometry(), &config, 1).expect("valid FTL")
    }

    /// Fills the device, then overwrites pages spread over every translation
    /// page (a stride coprime with the capacity) and trims every fourth page.
    fn age(ftl: &mut PageFtl) {
        let pages = ftl.geometry().logical_pages;
        for lpn in 0..pages {
            ftl.write(Lpn(lpn), StreamId(0)).expect("fill");
        }
        for step in 0..3 * pages {
            let lpn = (step * 1_031) % pages;
            ftl.write(Lpn(lpn), StreamId(0)).expect("overwrite");
            if step % 4 == 0 {
                ftl.trim(Lpn((lpn + 7) % pages), 1).expect("trim");
            }
        }
    }

    #[test]
    fn dftl_pays_translation_writes_and_collects_translation_pages_like_data() {
        // A quarter of 7 translation pages: 2 cached.
        let mut dftl = ftl(DiscardHandling::Dftl, 0.25);
        age(&mut dftl);
        let counters = dftl.counters().clone();
        assert!(counters.translation_pages_written > 100, "{counters:?}");
        assert!(counters.translation_pages_read > 0, "{counters:?}");
        assert!(counters.translation_gc_copies > 0, "translation pages were copied by GC: {counters:?}");
        assert_eq!(
            counters.flash_pages_programmed,
            counters.host_pages_written + counters.gc_page_copies + counters.translation_pages_written,
            "every program is a host page, a GC copy or a translation write"
        );
        assert!(counters.map_cache_misses > 0 && counters.map_cache_hits > 0, "{counters:?}");
        let mut whole_map = ftl(DiscardHandling::Dftl, 1.0);
        age(&mut whole_map);
        assert_eq!(whole_map.counters().translation_pages_written, 0, "a cache holding every page never evicts");
        let mut exact = ftl(DiscardHandling::Exact, 0.25);
        age(&mut exact);
        assert_eq!(exact.counters().translation_pages_written, 0);
        assert!(counters.gc_page_copies > exact.counters().gc_page_copies, "translation pages cost GC copies too");
    }

    #[test]
    fn ignored_discards_change_no_mapping() {
        let mut ignored = ftl(DiscardHandling::Ignored, 0.1);
        let mut exact = ftl(DiscardHandling::Exact, 0.1);
        for layer in [&mut ignored, &mut exact] {
            for lpn in 0..64 {
                layer.write(Lpn(lpn), StreamId(0)).expect("write");
            }
            layer.trim(Lpn(0), 32).expect("trim");
        }
        assert!(ignored.lookup(Lpn(0)).is_some(), "ignored: still mapped");
        assert_eq!(exact.lookup(Lpn(0)), None);
        assert_eq!(ignored.counters().host_pages_trimmed, 32, "the command is still counted as received");
        let mut no_trims = ftl(DiscardHandling::Exact, 0.1);
        let mut aged_ignored = ftl(DiscardHandling::Ignored, 0.1);
        age(&mut aged_ignored);
        let pages = no_trims.geometry().logical_pages;
        for lpn in 0..pages {
            no_trims.write(Lpn(lpn), StreamId(0)).expect("fill");
        }
        for step in 0..3 * pages {
            no_trims.write(Lpn((step * 1_031) % pages), StreamId(0)).expect("overwrite");
        }
        assert_eq!(aged_ignored.counters().gc_page_copies, no_trims.counters().gc_page_copies);
    }

    #[test]
    fn the_keys_are_checked_by_name() {
        for fraction in [0.0, 1.5, f64::NAN, 12.5] {
            let bad =
                FtlConfig { discard: DiscardHandling::Dftl, map_cache_fraction: fraction, ..FtlConfig::default() };
            assert_eq!(bad.validate(&geometry()).expect_err("not a fraction").key, "ftl.map_cache_fraction");
        }
        let open_channel = FtlConfig {
            discard: DiscardHandling::Ignored,
            kind: super::super::LayerKind::OpenChannel,
            ..FtlConfig::default()
        };
        assert_eq!(open_channel.validate(&geometry()).expect_err("page FTL only").key, "ftl.discard");
        let error = crate::ConfigBuilder::preset("small")
            .and_then(|mut builder| builder.set("ftl.discard=\"lazy\"").map(|_| builder))
            .and_then(crate::ConfigBuilder::build)
            .expect_err("unknown mode");
        assert_eq!(error.key, "ftl.discard");
        assert!(error.reason.contains("dftl"), "{error}");
    }

    /// The default cache is a share of the map, so a small device's is
    /// small too: on 512 MiB (128 translation pages) it caches 8 of them,
    /// and the DFTL mode writes translation pages where `exact` writes none.
    #[test]
    fn the_default_cache_on_a_512_mib_device_is_a_sixteenth_of_its_map() {
        let device =
            crate::ConfigBuilder::preset("small").and_then(crate::ConfigBuilder::build).expect("small").0.device;
        let device = device.fitted_to(512 << 20).expect("fits");
        let geometry = Geometry::from_config(&device).expect("valid geometry");
        assert_eq!(geometry.logical_pages, 131_072);
        let config = FtlConfig { discard: DiscardHandling::Dftl, ..FtlConfig::default() };
        assert_eq!(map_cache_pages(&geometry, &config), 8);
        let mut dftl = PageFtl::new(&geometry, &config, 1).expect("valid FTL");
        let pages = geometry.logical_pages;
        // Written twice in order, a trim every eighth page: each
        // translation page is evicted dirty before its turn comes again.
        for step in 0..2 * pages {
            let lpn = step % pages;
            dftl.write(Lpn(lpn), StreamId(0)).expect("write");
            if step % 8 == 0 {
                dftl.trim(Lpn((lpn + 7) % pages), 1).expect("trim");
            }
        }
        let counters = dftl.counters();
        assert!(counters.translation_pages_written > 0, "{counters:?}");
        assert!(counters.map_cache_misses > 0, "{counters:?}");
    }

    #[test]
    fn the_checker_names_a_broken_map_cache() {
        let mut dftl = ftl(DiscardHandling::Dftl, 0.25);
        age(&mut dftl);
        dftl.check_invariants().expect("holds after aging");
        let broken = |corrupt: &dyn Fn(&mut DemandMap)| {
            let mut corrupted = dftl.clone();
            corrupt(corrupted.demand.as_mut().expect("the DFTL mode"));
            corrupted.check_invariants().expect_err("corrupted").invariant
        };
        assert_eq!(broken(&|map| _ = map.moved.insert(0)), Invariant::MapCache);
        assert_eq!(broken(&|map| _ = map.dirty.insert(u32::MAX)), Invariant::MapCache);
    }
}
