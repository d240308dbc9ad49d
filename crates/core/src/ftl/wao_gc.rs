//! WAO-GC (Zhang et al., RTAS'15), the real-time baseline of Telomere
//! Sections 6.1.5 and 6.3: a page-mapped FTL whose garbage collection is cut
//! into partial steps, one after each host page write, so a write waits for
//! at most one step: copying at most `copies_per_step` valid pages, or
//! erasing the victim. Collection starts only when a chip runs short of free
//! blocks (over-provisioning delays it). Copies go to the same open block as
//! host writes — the constraint that makes health binning impossible for it
//! (Section 6.2).
//!
//! A step fits in the time of an erase: `copies_per_step` = ⌊t_e / (t_r +
//! t_w)⌋ (3 with Telomere's 0.2/0.7/2.7 ms). Reclaiming a greedy victim with
//! v ≤ λ·P valid pages takes ⌈v/α⌉ + 1 steps, and the P − v pages it frees
//! must cover the host pages written meanwhile; that bounds λ (0.74 on the
//! 1 TB drive), see [`WaoGcConfig::utilization_bound`].

use crate::device::{FlashArray, Geometry};
use crate::ftl::shared::{check_lpn, read_mapped, trim_range};
use crate::ftl::{FlashOp, FlashOpKind, FtlError, Recorder, TranslationLayer};
use crate::metrics::Counters;
use crate::units::{BlockId, Lpn, Ppn, SimNs, StreamId, UnitId};
use std::collections::VecDeque;

mod check;

const NONE: u32 = u32::MAX;

/// WAO-GC's two knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaoGcConfig {
    /// α: valid pages one partial step may copy.
    pub copies_per_step: u32,
    /// Collection runs in a chip while it has fewer free blocks than this
    /// (at least 2: the open block may fill while a victim is half copied).
    pub trigger_free_blocks: u32,
}

impl WaoGcConfig {
    /// α = ⌊t_e / (t_r + t_w)⌋, at least 1: a step is no longer than an erase.
    pub fn from_latencies(read: SimNs, program: SimNs, erase: SimNs, trigger_free_blocks: u32) -> Self {
        let copy = (read.0 + program.0).max(1);
        let copies = u32::try_from(erase.0 / copy).unwrap_or(u32::MAX).max(1);
        Self { copies_per_step: copies, trigger_free_blocks: trigger_free_blocks.max(2) }
    }

    /// The largest logical/physical ratio at which a write never waits for
    /// more than one step: σ_max / P, σ_max the most valid pages a victim may
    /// hold with ⌈σ/α⌉ + 1 ≤ P − σ (its copy steps and its erase step fit in
    /// the host writes the P − σ pages it frees can take).
    pub fn utilization_bound(&self, pages_per_block: u32) -> f64 {
        let alpha = self.copies_per_step;
        let valid_max =
            (0..pages_per_block).rev().find(|&valid| valid.div_ceil(alpha) < pages_per_block - valid).unwrap_or(0);
        f64::from(valid_max) / f64::from(pages_per_block)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockState {
    Free,
    Open,
    Sealed,
    Victim,
}

/// Per-chip collection state.
#[derive(Debug, Clone)]
struct Chip {
    free: VecDeque<u32>,
    open: u32,
    /// The block being reclaimed and the next page of it to look at.
    victim: Option<(BlockId, u32)>,
}

/// Counts of partial collection steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StepStats {
    pub steps: u64,
    pub copy_steps: u64,
    pub erase_steps: u64,
    pub max_copies_in_step: u32,
}

/// The WAO-GC FTL.
#[derive(Debug, Clone)]
pub struct WaoGcFtl {
    geometry: Geometry,
    config: WaoGcConfig,
    flash: FlashArray,
    l2p: Vec<u32>,
    p2l: Vec<u32>,
    valid: Vec<u32>,
    state: Vec<BlockState>,
    chips: Vec<Chip>,
    next_unit: u32,
    counters: Counters,
    steps: StepStats,
    recorded: Recorder,
}

impl WaoGcFtl {
    pub fn new(geometry: &Geometry, config: WaoGcConfig) -> Self {
        let chips = (0..geometry.units())
            .map(|unit| {
                let first = geometry.first_block_of_unit(UnitId(unit)).0;
                Chip { free: (first..first + geometry.blocks_per_plane).collect(), open: NONE, victim: None }
            })
            .collect();
        let blocks = geometry.blocks() as usize;
        Self {
            geometry: *geometry,
            config,
            flash: FlashArray::new(geometry),
            l2p: vec![NONE; geometry.logical_pages as usize],
            p2l: vec![NONE; geometry.physical_pages() as usize],
            valid: vec![0; blocks],
            state: vec![BlockState::Free; blocks],
            chips,
            next_unit: 0,
            counters: Counters::new(1),
            steps: StepStats::default(),
            recorded: Recorder::default(),
        }
    }

    pub fn steps(&self) -> StepStats {
        self.steps
    }

    /// Writes one page, then runs at most one partial collection step in the
    /// chip written.
    pub fn write(&mut self, lpn: Lpn) -> Result<Ppn, FtlError> {
        check_lpn(&self.geometry, lpn)?;
        let old = self.l2p[lpn.index()];
        if old != NONE {
            self.invalidate(Ppn(old));
        }
        let unit = UnitId(self.next_unit);
        self.next_unit = (self.next_unit + 1) % self.geometry.units();
        let ppn = self.program(unit, lpn, false)?;
        self.counters.host_pages_written += 1;
        self.counters.stream_host_pages_written[0] += 1;
        self.partial_step(unit)?;
        Ok(ppn)
    }

    pub fn read(&mut self, lpn: Lpn) -> Result<Option<Ppn>, FtlError> {
        check_lpn(&self.geometry, lpn)?;
        let ppn = self.l2p[lpn.index()];
        if ppn == NONE {
            self.counters.unmapped_reads += 1;
            return Ok(None);
        }
        read_mapped(&self.flash, Ppn(ppn), &mut self.counters, &mut self.recorded).map(Some)
    }

    fn invalidate(&mut self, ppn: Ppn) {
        self.p2l[ppn.index()] = NONE;
        let block = self.geometry.block_of_page(ppn).index();
        verify!(self.valid[block] > 0, "{ppn:?} is live in an empty block");
        self.valid[block] -= 1;
    }

    /// Programs `lpn` into the chip's open block, shared by host and GC writes.
    fn program(&mut self, unit: UnitId, lpn: Lpn, gc: bool) -> Result<Ppn, FtlError> {
        let chip = &mut self.chips[unit.index()];
        if chip.open == NONE {
            chip.open = chip.free.pop_front().ok_or(FtlError::OutOfSpace { unit: unit.0 })?;
            self.state[chip.open as usize] = BlockState::Open;
        }
        let block = BlockId(chip.open);
        let ppn = self.geometry.page_address(block, self.flash.write_pointer(block));
        self.flash.program(ppn)?;
        self.recorded.record(FlashOpKind::Program, unit, gc);
        self.counters.flash_pages_programmed += 1;
        self.l2p[lpn.index()] = ppn.0;
        self.p2l[ppn.index()] = lpn.0;
        self.valid[block.index()] += 1;
        verify!(self.valid[block.index()] <= self.geometry.pages_per_block, "{block:?} holds more than a block");
        if self.flash.is_full(block) {
            self.state[block.index()] = BlockState::Sealed;
            self.chips[unit.index()].open = NONE;
        }
        Ok(ppn)
    }

    /// One partial step: copy up to α valid pages of the victim, or erase it
    /// once it has none. Starts a reclamation when the chip runs short.
    fn partial_step(&mut self, unit: UnitId) -> Result<(), FtlError> {
        if self.chips[unit.index()].victim.is_none() {
            if self.chips[unit.index()].free.len() >= self.config.trigger_free_blocks as usize {
                return Ok(());
            }
            let Some(victim) = self.greedy_victim(unit) else { return Ok(()) };
            self.state[victim.index()] = BlockState::Victim;
            self.chips[unit.index()].victim = Some((victim, 0));
        }
        let Some((victim, mut cursor)) = self.chips[unit.index()].victim else { return Ok(()) };
        self.steps.steps += 1;
        let pages = self.geometry.pages_per_block;
        let mut copies = 0;
        while copies < self.config.copies_per_step && cursor < pages {
            let ppn = self.geometry.page_address(victim, cursor);
            cursor += 1;
            let lpn = self.p2l[ppn.index()];
            if lpn == NONE {
                continue;
            }
            self.invalidate(ppn);
            self.recorded.record(FlashOpKind::Read, unit, true);
            self.counters.flash_pages_read += 1;
            self.program(unit, Lpn(lpn), true)?;
            self.counters.gc_page_copies += 1;
            copies += 1;
        }
        if copies > 0 {
            self.steps.copy_steps += 1;
            self.steps.max_copies_in_step = self.steps.max_copies_in_step.max(copies);
            self.chips[unit.index()].victim = Some((victim, cursor));
            return Ok(());
        }
        verify!(self.valid[victim.index()] == 0, "{victim:?} erased with valid pages");
        self.flash.erase(victim);
        self.recorded.record(FlashOpKind::Erase, unit, true);
        self.counters.erases += 1;
        self.steps.erase_steps += 1;
        self.state[victim.index()] = BlockState::Free;
        let chip = &mut self.chips[unit.index()];
        chip.free.push_back(victim.0);
        chip.victim = None;
        Ok(())
    }

    fn greedy_victim(&self, unit: UnitId) -> Option<BlockId> {
        let first = self.geometry.first_block_of_unit(unit).0;
        (first..first + self.geometry.blocks_per_plane)
            .filter(|&block| self.state[block as usize] == BlockState::Sealed)
            .filter(|&block| self.valid[block as usize] < self.geometry.pages_per_block)
            .min_by_key(|&block| (self.valid[block as usize], block))
            .map(BlockId)
    }
}

impl TranslationLayer for WaoGcFtl {
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
        (self.l2p.capacity() + self.p2l.capacity() + self.valid.capacity()) * 4
            + self.state.capacity()
            + self.chips.iter().map(|chip| chip.free.capacity() * 4).sum::<usize>()
            + self.flash.memory_bytes()
    }

    fn count_request(&mut self) {
        self.counters.requests += 1;
    }

    /// One write point and no placement hints: stream 0 only (the trait's
    /// contract). A configuration with a host classifier is refused before
    /// it is built (`Simulation::with_journal`), and the periodic runs give
    /// task hints to Telomere's layer only.
    fn write(&mut self, lpn: Lpn, stream: StreamId) -> Result<(), FtlError> {
        if stream != StreamId(0) {
            return Err(FtlError::UnknownStream { stream: stream.0, streams: 1 });
        }
        WaoGcFtl::write(self, lpn).map(drop)
    }

    fn read(&mut self, lpn: Lpn) -> Result<(), FtlError> {
        WaoGcFtl::read(self, lpn).map(drop)
    }

    fn trim(&mut self, first: Lpn, pages: u32) -> Result<(), FtlError> {
        for lpn in trim_range(&self.geometry, first, pages)? {
            let ppn = std::mem::replace(&mut self.l2p[lpn as usize], NONE);
            if ppn != NONE {
                self.invalidate(Ppn(ppn));
            }
        }
        self.counters.host_pages_trimmed += u64::from(pages);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), FtlError> {
        Ok(())
    }

    fn is_mapped(&self, lpn: Lpn) -> bool {
        self.l2p.get(lpn.index()).is_some_and(|&ppn| ppn != NONE)
    }

    fn free_blocks(&self, unit: UnitId) -> u32 {
        u32::try_from(self.chips[unit.index()].free.len()).unwrap_or(u32::MAX)
    }

    /// Collection runs in partial steps after host writes, never apart.
    fn collect_one(&mut self, _unit: UnitId) -> Result<bool, FtlError> {
        Ok(false)
    }

    fn set_recording(&mut self, on: bool) {
        self.recorded.set(on);
    }

    fn recorded(&self) -> &[FlashOp] {
        self.recorded.ops()
    }

    fn clear_recorded(&mut self) {
        self.recorded.clear();
    }

    fn check_invariants(&self) -> Result<(), crate::ftl::InvariantError> {
        self.check_wao_gc()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceConfig;
    use nandlab_convert::saturating;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn geometry(utilization: f64) -> Geometry {
        let pages_per_block = 64u32;
        let blocks_per_plane = 32u32;
        let physical = f64::from(4 * blocks_per_plane * pages_per_block);
        let logical_pages = saturating::<u64>(physical * utilization);
        let config = DeviceConfig {
            channels: 4,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane,
            pages_per_block,
            page_size: 4096,
            over_provisioning: None,
            logical_pages: Some(logical_pages),
            pe_cycles: 3000,
        };
        Geometry::from_config(&config).expect("valid geometry")
    }

    fn telomere_latencies() -> WaoGcConfig {
        WaoGcConfig::from_latencies(SimNs(200_000), SimNs(700_000), SimNs(2_700_000), 2)
    }

    #[test]
    fn alpha_and_bound_match_the_paper_drive() {
        let config = telomere_latencies();
        assert_eq!(config.copies_per_step, 3);
        // Telomere Section 6.1.5: "the upper bound of λ for WAO-GC is 0.74" (P = 128).
        assert!((config.utilization_bound(128) - 95.0 / 128.0).abs() < 1e-12);
    }

    #[test]
    fn every_write_waits_for_at_most_one_bounded_step() {
        let config = telomere_latencies();
        let geometry = geometry(config.utilization_bound(64) - 0.02);
        let seed = 11;
        eprintln!("seed {seed}");
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut ftl = WaoGcFtl::new(&geometry, config);
        ftl.set_recording(true);
        for i in 0..400_000u32 {
            let lpn = if i < geometry.logical_pages { i } else { rng.random_range(0..geometry.logical_pages) };
            ftl.write(Lpn(lpn)).expect("below the bound a chip never runs out");
            let ops = ftl.recorded().to_vec();
            ftl.clear_recorded();
            let count = |kind| ops.iter().filter(|op| op.kind == kind && op.gc).count();
            let (copies, erases) = (count(FlashOpKind::Program), count(FlashOpKind::Erase));
            assert!(
                copies <= 3 && erases <= 1 && (copies == 0 || erases == 0),
                "write {i}: {copies} copies, {erases} erases"
            );
        }
        let steps = ftl.steps();
        assert!(steps.erase_steps > 1000 && steps.copy_steps > 1000, "{steps:?}");
        assert_eq!(steps.max_copies_in_step, 3);
        assert_eq!(
            ftl.counters().gc_page_copies,
            ftl.counters().flash_pages_programmed - ftl.counters().host_pages_written
        );
    }

    /// The checker holds while partial steps run, and names the invariant
    /// a corrupted free list, victim or valid count breaks.
    #[test]
    fn the_invariant_checker_names_what_a_corruption_breaks() {
        let config = telomere_latencies();
        let geometry = geometry(0.5);
        let mut ftl = WaoGcFtl::new(&geometry, config);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let mut collecting = None;
        for i in 0..20_000u32 {
            let lpn = if i < geometry.logical_pages { i } else { rng.random_range(0..geometry.logical_pages) };
            ftl.write(Lpn(lpn)).expect("room");
            if i % 1_000 == 0 {
                ftl.check_invariants().expect("holds while collecting");
            }
            if collecting.is_none() && ftl.chips.iter().any(|chip| chip.victim.is_some()) {
                collecting = Some(ftl.clone());
            }
        }
        let collecting = collecting.expect("a chip collected");
        collecting.check_invariants().expect("holds mid-collection");
        let broken = |corrupt: &dyn Fn(&mut WaoGcFtl)| {
            let mut corrupted = collecting.clone();
            corrupt(&mut corrupted);
            corrupted.check_invariants().expect_err("corrupted").invariant
        };
        use crate::ftl::Invariant;
        let unit = collecting.chips.iter().position(|chip| chip.victim.is_some()).expect("collecting");
        assert_eq!(broken(&|ftl| ftl.chips[unit].victim = None), Invariant::Victims);
        assert_eq!(broken(&|ftl| ftl.valid[0] += 1), Invariant::ValidCounts);
        let first = geometry.first_block_of_unit(UnitId(0)).0;
        assert_eq!(broken(&|ftl| ftl.chips[0].free.push_back(first)), Invariant::BlockAccounting);
    }

    #[test]
    fn a_stream_other_than_the_one_write_point_is_refused() {
        let mut ftl = WaoGcFtl::new(&geometry(0.5), telomere_latencies());
        TranslationLayer::write(&mut ftl, Lpn(0), StreamId(0)).expect("the one write point");
        let refused = TranslationLayer::write(&mut ftl, Lpn(1), StreamId(1));
        assert_eq!(refused, Err(FtlError::UnknownStream { stream: 1, streams: 1 }));
        assert_eq!(ftl.counters().host_pages_written, 1);
    }
}
