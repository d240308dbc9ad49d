//! The page-mapped FTL: L2P and P2L maps, per-block valid counts, one open
//! block per (stream, parallel unit), and garbage collection with a pluggable
//! victim policy. It learns logical addresses only from what it wrote, and it
//! talks to the flash only through [`FlashArray`], which enforces flash rules.

pub mod analytic;
pub(crate) mod check;
pub mod dftl;
mod huge;
mod layer;
mod prefetch;
mod shared;
pub mod telomere;
mod victim;
pub mod wao_gc;

pub use check::{CheckAfter, Checked, Invariant, InvariantError};
pub use dftl::{map_cache_pages, DiscardHandling};
pub use huge::map_of;
pub use layer::{Recorder, TranslationLayer};
pub use victim::VictimPolicy;

use crate::config::ConfigError;
use crate::device::wear::{take_free_block, WearLeveling, WearModel};
use crate::device::{DeviceError, FlashArray, Geometry};
use crate::metrics::Counters;
use crate::units::{BlockId, Lpn, Ppn, StreamId, UnitId};
use prefetch::prefetch;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use victim::{BlockView, VictimIndex};

/// Marks an unmapped logical page in L2P and an invalid physical page in P2L.
const NONE: u32 = u32::MAX;

/// Most candidates `d-choices` may sample per victim choice: every GC
/// samples this many blocks, and beyond a few hundred the policy is greedy.
pub const D_CHOICES_MAX: u32 = 1024;

/// The `[ftl]` configuration section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FtlConfig {
    /// Which translation layer maps logical pages onto the flash.
    #[serde(default)]
    pub kind: LayerKind,
    #[serde(default)]
    pub gc_policy: VictimPolicy,
    /// Candidates sampled by the `d-choices` policy.
    #[serde(default = "default_d_choices")]
    pub d_choices: u32,
    /// Garbage collection runs in a parallel unit while it has fewer free
    /// blocks than this. At least 2: one free block is always kept for GC copies.
    #[serde(default = "default_gc_threshold")]
    pub gc_threshold_blocks: u32,
    /// Number of host streams (placement hints 0..streams).
    #[serde(default = "default_streams")]
    pub streams: u32,
    /// Which free block a unit opens next (a simple wear-leveling hook).
    #[serde(default)]
    pub free_block_order: FreeBlockOrder,
    /// Where garbage collection writes the valid pages it copies.
    #[serde(default)]
    pub gc_copies: GcCopies,
    /// What a read of a page that holds no data (never written, or trimmed) does.
    #[serde(default)]
    pub unmapped_reads: UnmappedReads,
    /// Which parallel unit a host write goes to.
    #[serde(default)]
    pub allocation: Allocation,
    /// What the device does with a DISCARD: `exact`, `ignored` or `dftl`.
    #[serde(default)]
    pub discard: DiscardHandling,
    /// The controller's mapping cache, as a fraction of the map's
    /// translation pages (at least one page): `discard = "dftl"` keeps the
    /// rest in flash, and every mapping update and DISCARD goes through it.
    #[serde(default = "dftl::default_map_cache_fraction")]
    pub map_cache_fraction: f64,
}

/// Which parallel unit a host write goes to (`ftl.allocation`). Garbage
/// collection copies stay in the victim's unit either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Allocation {
    /// The next unit in turn, whatever the page (dynamic allocation): full
    /// parallelism for any pattern, but a page rewritten after a number of
    /// writes that is not a multiple of the units moves to another unit, so
    /// a periodic pattern can pile valid data up in some units.
    #[default]
    RoundRobin,
    /// Unit = logical page mod units (MQSim's static allocation): every unit
    /// holds exactly its share of the logical space, whatever the pattern.
    Static,
}

/// The translation layers a run can use (`ftl.kind`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LayerKind {
    /// The device-side page-mapped FTL (`[ftl]` keys).
    #[default]
    Page,
    /// An open-channel device under the pblk-like host FTL (`[pblk]` keys;
    /// `ftl.gc_policy` and the free-block keys do not apply).
    OpenChannel,
    /// WAO-GC (Zhang et al., RTAS'15), Telomere's real-time baseline:
    /// partial GC steps of at most ⌊t_e / (t_r + t_w)⌋ copies after each
    /// write (from `[timing]`'s latencies), collection below
    /// `ftl.gc_threshold_blocks` free blocks per chip.
    WaoGc,
    /// Telomere's lifetime-aware placement FTL. It needs the partitions an
    /// admission test planned, so only `nandlab admit … --simulate` and the
    /// Telomere experiments build it; a configuration cannot name it alone.
    Telomere,
}

/// What a read of a page holding no data does. Real devices return zeros
/// (or a deterministic pattern) from the controller without touching the
/// flash, so such reads cost nothing in the timing model and are counted
/// apart (`unmapped_reads`, `unmapped_read_pages`) rather than as device
/// throughput.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnmappedReads {
    /// Answered with zeros by the controller, counted apart.
    #[default]
    Zeros,
    /// The run stops with an error naming the page: for workloads that must
    /// read only what they wrote (a replay on a device aged wrongly shows up).
    Error,
}

fn default_d_choices() -> u32 {
    10
}
fn default_gc_threshold() -> u32 {
    2
}
fn default_streams() -> u32 {
    8
}

impl Default for FtlConfig {
    fn default() -> Self {
        Self {
            kind: LayerKind::default(),
            gc_policy: VictimPolicy::default(),
            d_choices: default_d_choices(),
            gc_threshold_blocks: default_gc_threshold(),
            streams: default_streams(),
            free_block_order: FreeBlockOrder::default(),
            gc_copies: GcCopies::default(),
            unmapped_reads: UnmappedReads::default(),
            allocation: Allocation::default(),
            discard: DiscardHandling::default(),
            map_cache_fraction: dftl::default_map_cache_fraction(),
        }
    }
}

impl FtlConfig {
    pub fn validate(&self, geometry: &Geometry) -> Result<(), ConfigError> {
        if self.gc_threshold_blocks < 2 {
            return Err(ConfigError::new(
                "ftl.gc_threshold_blocks",
                "must be at least 2: one free block per unit is kept for GC copies",
            ));
        }
        if self.streams == 0 || self.streams > 255 {
            return Err(ConfigError::new("ftl.streams", "must be between 1 and 255"));
        }
        dftl::validate(self)?;
        // A used stream and the GC stream each hold an open block in every
        // unit; streams that are never written cost nothing.
        let reserved = u64::from(self.gc_threshold_blocks) + 2 + self.translation_open_blocks();
        if reserved >= u64::from(geometry.blocks_per_plane) {
            // Blame the key the user most likely set: a raised threshold, else the geometry.
            let key = if self.gc_threshold_blocks > FtlConfig::default().gc_threshold_blocks {
                "ftl.gc_threshold_blocks"
            } else {
                "device.blocks_per_plane"
            };
            return Err(ConfigError::new(
                key,
                format!(
                    "{} blocks per plane leave nothing to write to: one host stream, the GC stream and \
                     {} reserve blocks need {reserved}",
                    geometry.blocks_per_plane, self.gc_threshold_blocks
                ),
            ));
        }
        if self.gc_policy == VictimPolicy::DChoices && !(1..=D_CHOICES_MAX).contains(&self.d_choices) {
            return Err(ConfigError::new(
                "ftl.d_choices",
                format!("{} is not between 1 and {D_CHOICES_MAX}", self.d_choices),
            ));
        }
        Ok(())
    }

    /// For workloads that write the whole logical space (the synthetic ones
    /// precondition by filling it) in `host_streams` streams: beyond the
    /// blocks the logical data fill, a unit needs the GC reserve, an open
    /// block per host stream and one for GC, and one more so GC finds a
    /// victim with an invalid page; with less, the first GC finds the device
    /// full. (Telomere's placement FTL needs no spare and does not ask.)
    pub fn validate_for_full_device(&self, geometry: &Geometry, host_streams: u32) -> Result<(), ConfigError> {
        let unit_pages = u64::from(geometry.units()) * u64::from(geometry.pages_per_block);
        let stored_pages = u64::from(geometry.logical_pages) + u64::from(dftl::translation_pages(geometry, self));
        let data_blocks = stored_pages.div_ceil(unit_pages);
        let spare = u64::from(geometry.blocks_per_plane).saturating_sub(data_blocks);
        let host_streams = host_streams.max(1);
        let needed = u64::from(self.gc_threshold_blocks) + u64::from(host_streams) + 1 + self.translation_open_blocks();
        if spare <= needed {
            return Err(ConfigError::new(
                "device.over_provisioning",
                format!(
                    "leaves {spare} spare blocks per plane; a device that gets full needs more than {needed} \
                     (ftl.gc_threshold_blocks = {} reserve blocks, an open block for each of the {host_streams} \
                     host streams written (workload.stream, job.NAME.stream, or host.classifier's classes) and one for GC): raise it, \
                     or device.blocks_per_plane, or write fewer streams",
                    self.gc_threshold_blocks
                ),
            ));
        }
        Ok(())
    }

    /// The DFTL mode's translation pages have an open block of their own per unit.
    fn translation_open_blocks(&self) -> u64 {
        u64::from(self.discard == DiscardHandling::Dftl)
    }
}

/// Order in which a unit's free blocks are opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FreeBlockOrder {
    /// First erased, first reused (no wear-leveling).
    #[default]
    Fifo,
    /// The free block with the fewest erases (dynamic wear-leveling).
    LeastWorn,
    /// The free block with the lowest RBER under the wear model set with
    /// [`PageFtl::set_wear_model`] (Telomere Section 6.2's RBER-balancing);
    /// without a model, the fewest erases.
    LowestRber,
}

/// Where garbage collection writes the valid pages it copies (`ftl.gc_copies`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcCopies {
    /// A GC open block of their own per unit: copied (cold) data is kept
    /// apart from host writes.
    #[default]
    OwnBlock,
    /// The open block of host stream 0 in the victim's unit, beside incoming
    /// writes: Telomere Section 6.2's page-map FTL, whose "valid pages of a
    /// victim block [are] written to the same block as incoming write
    /// requests, regardless of data hotness" (WAO-GC's constraint).
    HostBlock,
}

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
    HostFtl(#[from] crate::host::pblk::PblkError),
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

/// A flash operation the FTL performed, recorded for the timing model when
/// recording is on (see [`TranslationLayer::set_recording`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlashOp {
    pub kind: FlashOpKind,
    pub unit: UnitId,
    /// Issued by garbage collection rather than by a host request.
    pub gc: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlashOpKind {
    Read,
    Program,
    Erase,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockState {
    Free,
    Open,
    Sealed,
}

/// A page-mapped FTL over one flash array.
#[derive(Debug, Clone)]
pub struct PageFtl {
    geometry: Geometry,
    config: FtlConfig,
    flash: FlashArray,
    l2p: Vec<u32>,
    p2l: Vec<u32>,
    valid: Vec<u32>,
    state: Vec<BlockState>,
    sealed_at: Vec<u64>,
    free: Vec<VecDeque<u32>>,
    /// Open block per (slot, unit); slots are the host streams, then GC.
    open: Vec<u32>,
    victims: VictimIndex,
    next_unit: u32,
    counters: Counters,
    rng: Xoshiro256PlusPlus,
    /// Flash operations since the last drain, when recording is on.
    recorder: Recorder,
    /// Per-block RBER parameters for `FreeBlockOrder::LowestRber`.
    wear: Option<WearModel>,
    /// The cached translation pages of `ftl.discard = "dftl"`.
    demand: Option<dftl::DemandMap>,
    /// Parallel units (the geometry's product, kept for the hot path).
    units: u32,
    /// Valid pages per unit (GC copies stay in their unit, so only host and
    /// translation-page writes and invalidations change them).
    unit_valid: Vec<u32>,
    /// Open blocks per unit (host streams, GC, translation pages).
    unit_open: Vec<u32>,
    /// Most valid pages each unit may hold and still always reclaim its
    /// reserve (see [`PageFtl::valid_limit`]); round-robin allocation passes
    /// over a unit at its limit.
    unit_valid_limit: Vec<u32>,
}

impl PageFtl {
    pub fn new(geometry: &Geometry, config: &FtlConfig, seed: u64) -> Result<Self, ConfigError> {
        config.validate(geometry)?;
        let units = geometry.units();
        let blocks = geometry.blocks();
        let free = (0..units)
            .map(|unit| {
                let first = geometry.first_block_of_unit(UnitId(unit)).0;
                (first..first + geometry.blocks_per_plane).collect()
            })
            .collect();
        Ok(Self {
            geometry: *geometry,
            config: config.clone(),
            flash: FlashArray::new(geometry),
            l2p: huge::map_of((geometry.logical_pages + dftl::translation_pages(geometry, config)) as usize, NONE),
            p2l: huge::map_of(geometry.physical_pages() as usize, NONE),
            valid: vec![0; blocks as usize],
            state: vec![BlockState::Free; blocks as usize],
            sealed_at: vec![0; blocks as usize],
            free,
            // Host streams, GC, and the DFTL mode's translation pages.
            open: vec![NONE; (config.streams as usize + 2) * units as usize],
            victims: VictimIndex::new(config.gc_policy, config.d_choices, units, blocks, geometry.pages_per_block),
            next_unit: 0,
            counters: Counters::new(config.streams as usize),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            recorder: Recorder::default(),
            wear: None,
            demand: dftl::DemandMap::new(geometry, config),
            units,
            unit_valid: vec![0; units as usize],
            unit_open: vec![0; units as usize],
            unit_valid_limit: vec![0; units as usize],
        }
        .with_valid_limits())
    }

    fn with_valid_limits(mut self) -> Self {
        for unit in 0..self.units {
            self.unit_valid_limit[unit as usize] = self.valid_limit(UnitId(unit));
        }
        self
    }

    /// Most valid pages `unit` may hold so that garbage collection can always
    /// restore its reserve of `gc_threshold_blocks` free blocks: room for the
    /// reserve, the unit's open blocks, a GC block and one block more. Then,
    /// while the unit is short (fewer free blocks than the reserve), its
    /// sealed blocks hold at least two blocks' worth of invalid pages, so the
    /// greediest victim always frees more than its copies take.
    fn valid_limit(&self, unit: UnitId) -> u32 {
        let kept = u64::from(self.config.gc_threshold_blocks) + u64::from(self.unit_open[unit.index()]) + 2;
        let blocks = u64::from(self.geometry.blocks_per_plane).saturating_sub(kept);
        u32::try_from(blocks * u64::from(self.geometry.pages_per_block)).unwrap_or(u32::MAX)
    }

    /// Counts a block of `unit` opened (`true`) or sealed, and moves the unit's valid-page limit.
    fn count_open_block(&mut self, unit: UnitId, opened: bool) {
        let open = &mut self.unit_open[unit.index()];
        verify!(opened || *open > 0, "{unit:?} seals a block with none open");
        *open = if opened { *open + 1 } else { *open - 1 };
        self.unit_valid_limit[unit.index()] = self.valid_limit(unit);
    }

    /// Sets the per-block RBER model that `FreeBlockOrder::LowestRber` ranks by.
    pub fn set_wear_model(&mut self, model: WearModel) {
        self.wear = Some(model);
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    pub fn flash(&self) -> &FlashArray {
        &self.flash
    }

    /// The flash operations recorded since the last drain, moved out.
    pub fn drain_recorded(&mut self) -> impl Iterator<Item = FlashOp> + '_ {
        self.recorder.drain()
    }

    #[inline]
    fn record(&mut self, kind: FlashOpKind, unit: UnitId, gc: bool) {
        self.recorder.record(kind, unit, gc);
    }

    /// Free blocks of `unit` (the timing model's cleaning watermarks compare
    /// against it).
    pub fn free_blocks(&self, unit: UnitId) -> u32 {
        // A unit has at most `blocks_per_plane` (a u32) blocks.
        #[allow(clippy::cast_possible_truncation)]
        let free = self.free[unit.index()].len() as u32;
        free
    }

    /// One background garbage-collection step in `unit`, for the timing
    /// model's idle-time cleaning: reclaims one victim if a sealed block has
    /// invalid pages. Returns whether a block was reclaimed. Call it only
    /// while the unit has at least `gc_threshold_blocks` free blocks, so the
    /// copies have room.
    pub fn collect_one(&mut self, unit: UnitId) -> Result<bool, FtlError> {
        match self.collect(unit) {
            Ok(()) => Ok(true),
            Err(FtlError::OutOfSpace { .. }) => Ok(false),
            Err(other) => Err(other),
        }
    }

    /// Counts one host request (of any type) for per-request statistics.
    pub fn count_request(&mut self) {
        self.counters.requests += 1;
    }

    /// Writes one logical page with a placement hint, then reclaims space in
    /// the unit written if it ran short of free blocks.
    pub fn write(&mut self, lpn: Lpn, stream: StreamId) -> Result<Ppn, FtlError> {
        self.check_lpn(lpn)?;
        if u32::from(stream.0) >= self.config.streams {
            return Err(FtlError::UnknownStream { stream: stream.0, streams: self.config.streams });
        }
        let old = self.l2p[lpn.index()];
        if old != NONE {
            self.invalidate(Ppn(old));
        }
        let unit = match self.config.allocation {
            Allocation::RoundRobin => self.next_unit_with_room(),
            Allocation::Static => UnitId(lpn.0 % self.units),
        };
        let ppn = self.program_next(stream.index(), unit, lpn)?;
        self.counters.host_pages_written += 1;
        self.counters.stream_host_pages_written[stream.index()] += 1;
        self.use_mapping(lpn, true)?;
        self.collect_while_short(unit)?;
        self.write_back_moved()?;
        Ok(ppn)
    }

    /// Reads one logical page: the physical page holding it, or `None` if the
    /// page holds no data.
    pub fn read(&mut self, lpn: Lpn) -> Result<Option<Ppn>, FtlError> {
        self.check_lpn(lpn)?;
        self.use_mapping(lpn, false)?;
        let ppn = self.l2p[lpn.index()];
        if ppn == NONE {
            if self.config.unmapped_reads == UnmappedReads::Error {
                return Err(FtlError::UnmappedRead { lpn: u64::from(lpn.0) });
            }
            self.counters.unmapped_reads += 1;
            return Ok(None);
        }
        self.flash.read(Ppn(ppn))?;
        self.record(FlashOpKind::Read, self.geometry.unit_of_block(self.geometry.block_of_page(Ppn(ppn))), false);
        self.counters.host_pages_read += 1;
        self.counters.flash_pages_read += 1;
        Ok(Some(Ppn(ppn)))
    }

    /// DISCARD/TRIM: the pages become invalid and are never copied by GC.
    pub fn trim(&mut self, first: Lpn, pages: u32) -> Result<(), FtlError> {
        if pages == 0 {
            return Ok(());
        }
        self.check_lpn(Lpn(first.0.saturating_add(pages - 1)))?;
        self.counters.host_pages_trimmed += u64::from(pages);
        if self.config.discard == DiscardHandling::Ignored {
            return Ok(());
        }
        for lpn in first.0..first.0 + pages {
            let ppn = self.l2p[lpn as usize];
            if ppn != NONE {
                self.invalidate(Ppn(ppn));
                self.l2p[lpn as usize] = NONE;
                self.use_mapping(Lpn(lpn), true)?;
            }
        }
        self.write_back_moved()
    }

    /// Hint: `lpn` will be accessed soon; fetch its L2P entry into cache.
    #[inline]
    pub fn prefetch_mapping(&self, lpn: Lpn) {
        prefetch(&self.l2p, lpn.index());
    }

    /// Hint: `lpn` will be overwritten soon; fetch what invalidating the
    /// page now holding it touches: its P2L entry, its block's valid count
    /// and state and the block's entry in the victim index. Best issued
    /// some time after [`Self::prefetch_mapping`]. (An unmapped page's
    /// `NONE` only makes the hints useless: a prefetch never faults.)
    #[inline]
    pub fn prefetch_old_page(&self, lpn: Lpn) {
        if let Some(&ppn) = self.l2p.get(lpn.index()) {
            prefetch(&self.p2l, ppn as usize);
            let block = self.geometry.block_of_page(Ppn(ppn)).index();
            prefetch(&self.valid, block);
            prefetch(&self.state, block);
            self.victims.prefetch(block);
        }
    }

    /// The physical page holding `lpn`, without counting a read.
    pub fn lookup(&self, lpn: Lpn) -> Option<Ppn> {
        let ppn = *self.l2p.get(lpn.index())?;
        (ppn != NONE).then_some(Ppn(ppn))
    }

    /// Heap bytes held by the FTL and its flash array.
    pub fn memory_bytes(&self) -> usize {
        let words = self.l2p.capacity() + self.p2l.capacity() + self.valid.capacity() + self.open.capacity();
        words * 4
            + self.state.capacity()
            + self.sealed_at.capacity() * 8
            + self.free.iter().map(|q| q.capacity() * 4).sum::<usize>()
            + self.victims.memory_bytes()
            + self.flash.memory_bytes()
    }

    fn check_lpn(&self, lpn: Lpn) -> Result<(), FtlError> {
        if lpn.0 >= self.geometry.logical_pages {
            return Err(FtlError::LpnOutOfRange { lpn: u64::from(lpn.0), logical_pages: self.geometry.logical_pages });
        }
        Ok(())
    }

    fn advance_unit(&mut self) -> UnitId {
        let unit = self.next_unit;
        self.next_unit = if unit + 1 == self.units { 0 } else { unit + 1 };
        UnitId(unit)
    }

    /// The next unit in turn that is below its valid-page limit. Jobs
    /// whose requests alternate in step with the units (two jobs at depth 1
    /// on an even number of units) would otherwise send one job's rewrites
    /// to some units and the other's to the rest, piling valid data up in
    /// some units until they cannot reclaim a block. If every unit is at the
    /// limit (the logical space does not fit, which validation refuses), the
    /// unit in turn.
    #[inline]
    fn next_unit_with_room(&mut self) -> UnitId {
        let unit = self.advance_unit();
        if self.unit_valid[unit.index()] < self.unit_valid_limit[unit.index()] {
            return unit;
        }
        self.pass_over_full_units(unit)
    }

    #[inline(never)]
    fn pass_over_full_units(&mut self, first: UnitId) -> UnitId {
        for _ in 1..self.units {
            let unit = self.advance_unit();
            if self.unit_valid[unit.index()] < self.unit_valid_limit[unit.index()] {
                return unit;
            }
        }
        self.next_unit = (first.0 + 1) % self.units;
        first
    }

    #[inline(always)]
    fn invalidate(&mut self, ppn: Ppn) {
        self.p2l[ppn.index()] = NONE;
        let block = self.geometry.block_of_page(ppn);
        let unit = self.geometry.unit_of_block(block);
        verify!(
            self.valid[block.index()] > 0 && self.unit_valid[unit.index()] > 0,
            "{ppn:?} is live in an empty block"
        );
        self.unit_valid[unit.index()] -= 1;
        let valid = &mut self.valid[block.index()];
        *valid -= 1;
        if self.state[block.index()] == BlockState::Sealed {
            let remaining = *valid;
            self.victims.on_invalidated(unit, block, remaining);
        }
    }

    /// Programs `lpn` into the next page of the open block of `slot` in
    /// `unit`, opening a free block first when needed, and seals the block
    /// when it fills (after mapping, so the victim index sees its true valid count).
    #[inline(always)]
    fn program_next(&mut self, slot: usize, unit: UnitId, lpn: Lpn) -> Result<Ppn, FtlError> {
        let open_index = slot * self.units as usize + unit.index();
        let block = match self.open[open_index] {
            NONE => self.open_free_block(unit)?,
            block => BlockId(block),
        };
        let ppn = self.flash.program_next(block)?;
        self.record(FlashOpKind::Program, unit, slot == self.config.streams as usize);
        self.counters.flash_pages_programmed += 1;
        self.l2p[lpn.index()] = ppn.0;
        self.p2l[ppn.index()] = lpn.0;
        self.valid[block.index()] += 1;
        self.unit_valid[unit.index()] += 1;
        verify!(self.valid[block.index()] <= self.geometry.pages_per_block, "{block:?} holds more than a block");
        if self.flash.is_full(block) {
            self.seal(unit, block);
            self.open[open_index] = NONE;
        } else {
            self.open[open_index] = block.0;
        }
        Ok(ppn)
    }

    #[inline(never)]
    fn open_free_block(&mut self, unit: UnitId) -> Result<BlockId, FtlError> {
        let free = &mut self.free[unit.index()];
        let block = match self.config.free_block_order {
            FreeBlockOrder::Fifo => free.pop_front(),
            FreeBlockOrder::LeastWorn => {
                let erase_counts = self.flash.erase_counts();
                let slot = free.iter().enumerate().min_by_key(|(_, &b)| erase_counts[b as usize]).map(|(i, _)| i);
                slot.and_then(|i| free.swap_remove_back(i))
            }
            FreeBlockOrder::LowestRber => {
                let erase_counts = self.flash.erase_counts();
                let wear = self.wear.as_ref();
                let rber = |block: u32| {
                    let erases = erase_counts[block as usize];
                    wear.map_or(f64::from(erases), |model| model.rber(BlockId(block), erases))
                };
                take_free_block(free, WearLeveling::RberBalancing, rber, None)
            }
        }
        .ok_or(FtlError::OutOfSpace { unit: unit.0 })?;
        self.state[block as usize] = BlockState::Open;
        self.count_open_block(unit, true);
        Ok(BlockId(block))
    }

    #[inline(never)]
    fn seal(&mut self, unit: UnitId, block: BlockId) {
        self.state[block.index()] = BlockState::Sealed;
        self.count_open_block(unit, false);
        self.sealed_at[block.index()] = self.counters.host_pages_written;
        self.victims.on_sealed(unit, block, self.valid[block.index()]);
    }

    /// Collects until the unit has its reserve of free blocks again. Each
    /// step erases one block and opens at most one, so a unit whose sealed
    /// blocks hold no invalid page at all cannot recover: after as many steps
    /// as the unit has blocks without reaching the reserve, the device is full.
    #[inline]
    fn collect_while_short(&mut self, unit: UnitId) -> Result<(), FtlError> {
        if self.has_reserve(unit) {
            return Ok(());
        }
        self.collect_to_reserve(unit)
    }

    #[inline(never)]
    fn collect_to_reserve(&mut self, unit: UnitId) -> Result<(), FtlError> {
        for _ in 0..=self.geometry.blocks_per_plane {
            if self.has_reserve(unit) {
                return Ok(());
            }
            self.collect(unit)?;
        }
        Err(FtlError::OutOfSpace { unit: unit.0 })
    }

    #[inline]
    fn has_reserve(&self, unit: UnitId) -> bool {
        self.free[unit.index()].len() >= self.config.gc_threshold_blocks as usize
    }

    /// One garbage-collection step: copy the victim's valid pages to the GC
    /// open block of the same unit, then erase the victim.
    fn collect(&mut self, unit: UnitId) -> Result<(), FtlError> {
        let view = BlockView {
            valid: &self.valid,
            sealed_at: &self.sealed_at,
            now: self.counters.host_pages_written,
            pages_per_block: self.geometry.pages_per_block,
        };
        let victim = self.victims.select(unit, &view, &mut self.rng).ok_or(FtlError::OutOfSpace { unit: unit.0 })?;
        verify!(self.state[victim.index()] == BlockState::Sealed, "GC chose {victim:?}, which is not sealed");
        let first = self.geometry.page_address(victim, 0).index();
        let copied = self.copy_valid_pages(unit, first, first + self.geometry.pages_per_block as usize)?;
        // Erased only once every valid page is copied out.
        verify!(copied == self.valid[victim.index()] as usize, "{victim:?}: {copied} pages copied out");
        self.valid[victim.index()] = 0;
        self.flash.erase(victim);
        self.record(FlashOpKind::Erase, unit, true);
        self.counters.erases += 1;
        self.state[victim.index()] = BlockState::Free;
        self.free[unit.index()].push_back(victim.0);
        Ok(())
    }
}

impl PageFtl {
    /// Copies the valid pages among `first..end` (a victim's) to the GC open
    /// block of `unit`, in the victim's page order. Two passes: the victim's
    /// P2L is streamed once and compacted in place to the logical pages it
    /// still holds (without a branch per page, whose outcome is a coin
    /// toss), then they are copied in runs, one per GC block they fill,
    /// prefetching the L2P entries of the copies ahead. The mapping ends as
    /// one-by-one copying leaves it, and the recorded operations (a read,
    /// then a program, per copy) are the same, in the same order. Returns
    /// how many pages it copied.
    fn copy_valid_pages(&mut self, unit: UnitId, first: usize, end: usize) -> Result<usize, FtlError> {
        let moved = first..first + compact_mapped(&mut self.p2l[first..end]);
        for index in moved.clone().take(COPY_LOOKAHEAD) {
            prefetch(&self.l2p, self.p2l[index] as usize);
        }
        let slot = match self.config.gc_copies {
            GcCopies::OwnBlock => self.config.streams as usize,
            GcCopies::HostBlock => 0,
        };
        let open_index = slot * self.units as usize + unit.index();
        let mut from = moved.start;
        while from < moved.end {
            let block = match self.open[open_index] {
                NONE => self.open_free_block(unit)?,
                block => BlockId(block),
            };
            let pointer = self.flash.write_pointer(block);
            let room = (self.geometry.pages_per_block - pointer) as usize;
            let run = from..moved.end.min(from + room);
            self.remap_run(run.clone(), moved.end, self.geometry.page_address(block, pointer).index());
            self.recorder.record_copies(unit, run.len());
            from = run.end;
            // A run fits in a block, so its length fits in a u32.
            #[allow(clippy::cast_possible_truncation)]
            self.finish_gc_run(unit, block, run.len() as u32, open_index)?;
        }
        let copied = moved.len();
        if self.demand.is_some() {
            for index in moved {
                self.mapping_moved(Lpn(self.p2l[index]));
            }
        }
        self.p2l[first..end].fill(NONE);
        Ok(copied)
    }

    /// Moves the logical pages listed at `p2l[run]` to the consecutive
    /// physical pages from `to`: their L2P entries point there, P2L back.
    /// The L2P entries of the list's next pages, up to `listed_end`, are
    /// prefetched a few copies ahead.
    #[inline]
    fn remap_run(&mut self, run: std::ops::Range<usize>, listed_end: usize, to: usize) {
        let (l2p, p2l) = (&mut self.l2p, &self.p2l);
        // Page numbers fit in a u32 (the geometry checks the device's size).
        #[allow(clippy::cast_possible_truncation)]
        let mut new = to as u32;
        // The copies whose look-ahead is still in the list, then the rest.
        let ahead_end = listed_end.saturating_sub(COPY_LOOKAHEAD).clamp(run.start, run.end);
        let ahead = p2l.get(run.start + COPY_LOOKAHEAD..ahead_end + COPY_LOOKAHEAD).unwrap_or_default();
        for (&lpn, &next) in p2l[run.start..ahead_end].iter().zip(ahead) {
            prefetch(l2p, next as usize);
            l2p[lpn as usize] = new;
            new += 1;
        }
        for &lpn in &p2l[ahead_end..run.end] {
            l2p[lpn as usize] = new;
            new += 1;
        }
        self.p2l.copy_within(run, to);
    }

    /// Programs a run of `pages` GC copies into `block` on the flash and
    /// counts them; seals the block when they filled it.
    fn finish_gc_run(&mut self, unit: UnitId, block: BlockId, pages: u32, open_index: usize) -> Result<(), FtlError> {
        self.flash.program_run(block, pages)?;
        self.valid[block.index()] += pages;
        self.counters.flash_pages_programmed += u64::from(pages);
        self.counters.gc_page_copies += u64::from(pages);
        self.counters.flash_pages_read += u64::from(pages);
        if self.flash.is_full(block) {
            self.seal(unit, block);
            self.open[open_index] = NONE;
        } else {
            self.open[open_index] = block.0;
        }
        Ok(())
    }
}

/// GC copies of look-ahead for the L2P entries it updates.
const COPY_LOOKAHEAD: usize = 8;

/// Moves the mapped entries of a stretch of P2L to its front, in order, and
/// returns how many there are (what lies beyond them is left as it was).
/// Branch-free: each entry is stored, and the end moves past it only if it
/// is mapped.
fn compact_mapped(p2l: &mut [u32]) -> usize {
    /// Entries read at once: the loop's own test and bounds checks amortised.
    const STEP: usize = 4;
    let mut mapped = 0;
    let mut index = 0;
    while let Some(&step) = p2l.get(index..index + STEP).and_then(|entries| <&[u32; STEP]>::try_from(entries).ok()) {
        for lpn in step {
            p2l[mapped] = lpn;
            mapped += usize::from(lpn != NONE);
        }
        index += STEP;
    }
    for index in index..p2l.len() {
        let lpn = p2l[index];
        p2l[mapped] = lpn;
        mapped += usize::from(lpn != NONE);
    }
    mapped
}

impl TranslationLayer for PageFtl {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn erase_counts(&self) -> &[u32] {
        self.flash.erase_counts()
    }

    fn memory_bytes(&self) -> usize {
        PageFtl::memory_bytes(self)
    }

    #[inline]
    fn count_request(&mut self) {
        PageFtl::count_request(self);
    }

    #[inline]
    fn write(&mut self, lpn: Lpn, stream: StreamId) -> Result<(), FtlError> {
        PageFtl::write(self, lpn, stream).map(drop)
    }

    #[inline]
    fn read(&mut self, lpn: Lpn) -> Result<(), FtlError> {
        PageFtl::read(self, lpn).map(drop)
    }

    fn trim(&mut self, first: Lpn, pages: u32) -> Result<(), FtlError> {
        PageFtl::trim(self, first, pages)
    }

    /// Nothing is buffered above the flash: every write is programmed at once.
    fn flush(&mut self) -> Result<(), FtlError> {
        Ok(())
    }

    #[inline]
    fn is_mapped(&self, lpn: Lpn) -> bool {
        self.lookup(lpn).is_some()
    }

    fn free_blocks(&self, unit: UnitId) -> u32 {
        PageFtl::free_blocks(self, unit)
    }

    fn collect_one(&mut self, unit: UnitId) -> Result<bool, FtlError> {
        PageFtl::collect_one(self, unit)
    }

    fn set_recording(&mut self, on: bool) {
        self.recorder.set(on);
    }

    #[inline]
    fn recorded(&self) -> &[FlashOp] {
        self.recorder.ops()
    }

    #[inline]
    fn clear_recorded(&mut self) {
        self.recorder.clear();
    }

    #[inline]
    fn prefetch_mapping(&self, lpn: Lpn) {
        PageFtl::prefetch_mapping(self, lpn);
    }

    #[inline]
    fn prefetch_old_page(&self, lpn: Lpn) {
        PageFtl::prefetch_old_page(self, lpn);
    }

    fn check_invariants(&self) -> Result<(), InvariantError> {
        self.check_page_ftl()
    }
}
