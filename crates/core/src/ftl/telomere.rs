//! Telomere's lifetime-aware placement (Missimer, Athanassoulis and West, ACM
//! TECS 2022, Sections 3-4 and 6.3) as an FTL over the [`FlashArray`].
//!
//! Every partition of the task set (one task under SiP, a group of tasks with
//! similar lifetimes under SharP) writes to blocks of its own, striped over
//! `stripe_width` open blocks; a new block comes from the chip with the most
//! free blocks among those the partition's other open blocks are not on
//! ("the flash page write request could occur on any available flash chip",
//! Section 6.3). A block carries the latest expiry time of the data
//! in it; once that time has passed and the block is full, every page in it
//! is invalid and the block is erased — garbage collection is "simply a block
//! erasure" and never copies a page. A partition may hold at most the blocks
//! admission control reserved for it (H_g of eq. (7)/(14)); asking for more
//! is an error, which is how a run checks the admission bounds. Expired data
//! are no longer readable.
//!
//! As a [`TranslationLayer`], the placement hint of a write is the task
//! (stream i = task i), and the data expire one data lifetime of that task,
//! T^w · (l^w + 1) (eq. (3)-(4)), after the request's arrival, which the
//! driver passes through [`TranslationLayer::advance`]. Erases of expired
//! blocks are recorded as garbage-collection operations when time passes, so
//! in a timed run they occupy their chip like every other operation.

use crate::device::wear::{take_free_block, Hotness, WearLeveling, WearModel};
use crate::device::{FlashArray, Geometry};
use crate::ftl::shared::{check_lpn, read_mapped, trim_range};
use crate::ftl::{FlashOp, FlashOpKind, FtlError, Recorder, TranslationLayer};
use crate::metrics::Counters;
use crate::units::{BlockId, Lpn, Ppn, SimNs, StreamId, UnitId};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

mod check;

const NONE: u32 = u32::MAX;

/// A partition as admission control planned it (plain data, so the core does
/// not depend on the admission crate; the CLI converts its plans).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionSpec {
    /// Indices of the member tasks.
    pub tasks: Vec<usize>,
    /// Blocks reserved for the partition.
    pub blocks: u32,
    /// Chips each write job is striped over (g, at most the device's units).
    pub stripe_width: u32,
    /// The longest T^w · (l^w + 1) among the members: the shorter, the hotter
    /// the partition's blocks (health binning puts it in healthier blocks).
    pub data_lifetime: SimNs,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TelomereError {
    #[error("partition {partition} has stripe width {width}; it must be between 1 and the {units} parallel units")]
    StripeWidth { partition: usize, width: u32, units: u32 },
    #[error("partition {partition} reserves {blocks} blocks, fewer than its stripe width {width}")]
    TooFewBlocks { partition: usize, blocks: u32, width: u32 },
    #[error("task {task} is in partitions {first} and {second}")]
    TaskTwice { task: usize, first: usize, second: usize },
    #[error("the partitions reserve {reserved} blocks, the device has {blocks}")]
    OverReserved { reserved: u64, blocks: u32 },
    #[error("task {task} has no data lifetime")]
    NoLifetime { task: usize },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockState {
    Free,
    Open,
    Sealed,
}

#[derive(Debug, Clone)]
struct Partition {
    budget: u32,
    held: u32,
    /// Open block per lane of the stripe, and the lane written next.
    open: Vec<u32>,
    next_lane: usize,
    hotness: Hotness,
}

/// Telomere's FTL: page-mapped reads, partitioned lifetime-aware writes.
#[derive(Debug, Clone)]
pub struct TelomereFtl {
    geometry: Geometry,
    flash: FlashArray,
    l2p: Vec<u32>,
    /// Expiry of the data each logical page maps to, in ns.
    lpn_expires: Vec<u64>,
    block_expires: Vec<u64>,
    state: Vec<BlockState>,
    owner: Vec<u32>,
    /// Sealed blocks by expiry: erased once their time has passed.
    sealed: BinaryHeap<Reverse<(u64, u32)>>,
    free: Vec<VecDeque<u32>>,
    partitions: Vec<Partition>,
    task_partition: Vec<Option<usize>>,
    /// T^w · (l^w + 1) of every task: how long the data of its writes live.
    task_lifetime: Vec<SimNs>,
    wear_leveling: WearLeveling,
    wear: Option<WearModel>,
    now: SimNs,
    counters: Counters,
    expired_reads: u64,
    recorded: Recorder,
}

impl TelomereFtl {
    /// `task_lifetime[i]`: the data lifetime of task i (every task of the
    /// partitions needs one).
    pub fn new(
        geometry: &Geometry,
        partitions: &[PartitionSpec],
        task_lifetime: &[SimNs],
        wear_leveling: WearLeveling,
    ) -> Result<Self, TelomereError> {
        let units = geometry.units();
        let blocks = geometry.blocks();
        let reserved: u64 = partitions.iter().map(|p| u64::from(p.blocks)).sum();
        if reserved > u64::from(blocks) {
            return Err(TelomereError::OverReserved { reserved, blocks });
        }
        let mut task_partition: Vec<Option<usize>> = Vec::new();
        let mut by_lifetime: Vec<usize> = (0..partitions.len()).collect();
        by_lifetime.sort_by_key(|&i| (partitions[i].data_lifetime, i));
        let mut built = Vec::with_capacity(partitions.len());
        for (index, spec) in partitions.iter().enumerate() {
            if spec.stripe_width == 0 || spec.stripe_width > units {
                return Err(TelomereError::StripeWidth { partition: index, width: spec.stripe_width, units });
            }
            if spec.blocks < spec.stripe_width {
                return Err(TelomereError::TooFewBlocks {
                    partition: index,
                    blocks: spec.blocks,
                    width: spec.stripe_width,
                });
            }
            for &task in &spec.tasks {
                if task_partition.len() <= task {
                    task_partition.resize(task + 1, None);
                }
                if let Some(first) = task_partition[task] {
                    return Err(TelomereError::TaskTwice { task, first, second: index });
                }
                if task >= task_lifetime.len() {
                    return Err(TelomereError::NoLifetime { task });
                }
                task_partition[task] = Some(index);
            }
            let rank = by_lifetime.iter().position(|&i| i == index).unwrap_or(0);
            built.push(Partition {
                budget: spec.blocks,
                held: 0,
                open: vec![NONE; spec.stripe_width as usize],
                next_lane: 0,
                hotness: Hotness {
                    rank: u32::try_from(rank).unwrap_or(u32::MAX),
                    of: u32::try_from(partitions.len()).unwrap_or(u32::MAX),
                },
            });
        }
        let free = (0..units)
            .map(|unit| {
                let first = geometry.first_block_of_unit(UnitId(unit)).0;
                (first..first + geometry.blocks_per_plane).collect()
            })
            .collect();
        Ok(Self {
            geometry: *geometry,
            flash: FlashArray::new(geometry),
            l2p: vec![NONE; geometry.logical_pages as usize],
            lpn_expires: vec![0; geometry.logical_pages as usize],
            block_expires: vec![0; blocks as usize],
            state: vec![BlockState::Free; blocks as usize],
            owner: vec![NONE; blocks as usize],
            sealed: BinaryHeap::new(),
            free,
            partitions: built,
            task_partition,
            task_lifetime: task_lifetime.to_vec(),
            wear_leveling,
            wear: None,
            now: SimNs(0),
            counters: Counters::new(task_lifetime.len().max(1)),
            expired_reads: 0,
            recorded: Recorder::default(),
        })
    }

    /// The RBER model free blocks are ranked by (RBER-balancing, health binning).
    pub fn set_wear_model(&mut self, model: WearModel) {
        self.wear = Some(model);
    }

    /// Reads of data that had expired.
    pub fn expired_reads(&self) -> u64 {
        self.expired_reads
    }

    /// Blocks partition `partition` holds now (open and sealed).
    pub fn blocks_held(&self, partition: usize) -> Option<u32> {
        self.partitions.get(partition).map(|p| p.held)
    }

    /// Moves time to `now` and erases every full block whose data all expired.
    pub fn advance(&mut self, now: SimNs) {
        self.now = self.now.max(now);
        while let Some(&Reverse((expires, block))) = self.sealed.peek() {
            if expires > self.now.0 {
                break;
            }
            self.sealed.pop();
            self.erase(BlockId(block));
        }
    }

    /// Writes one page of `task`'s data, valid until `expires`.
    pub fn write(&mut self, lpn: Lpn, task: usize, expires: SimNs) -> Result<Ppn, FtlError> {
        check_lpn(&self.geometry, lpn)?;
        let partition =
            self.task_partition.get(task).copied().flatten().ok_or(FtlError::UnadmittedTask { task: task as u64 })?;
        let p = &mut self.partitions[partition];
        let lane = p.next_lane;
        p.next_lane = (lane + 1) % p.open.len();
        let block = match p.open[lane] {
            NONE => self.open_block(partition)?,
            block => BlockId(block),
        };
        let unit = self.geometry.unit_of_block(block);
        let ppn = self.geometry.page_address(block, self.flash.write_pointer(block));
        self.flash.program(ppn)?;
        self.recorded.record(FlashOpKind::Program, unit, false);
        self.l2p[lpn.index()] = ppn.0;
        self.lpn_expires[lpn.index()] = expires.0;
        let block_expires = &mut self.block_expires[block.index()];
        *block_expires = (*block_expires).max(expires.0);
        self.counters.host_pages_written += 1;
        self.counters.stream_host_pages_written[task] += 1;
        self.counters.flash_pages_programmed += 1;
        if self.flash.is_full(block) {
            self.state[block.index()] = BlockState::Sealed;
            self.sealed.push(Reverse((self.block_expires[block.index()], block.0)));
            self.partitions[partition].open[lane] = NONE;
        } else {
            self.partitions[partition].open[lane] = block.0;
        }
        Ok(ppn)
    }

    /// Reads one page: `None` when it was never written or its data expired.
    pub fn read(&mut self, lpn: Lpn) -> Result<Option<Ppn>, FtlError> {
        check_lpn(&self.geometry, lpn)?;
        let ppn = self.l2p[lpn.index()];
        if ppn == NONE {
            self.counters.unmapped_reads += 1;
            return Ok(None);
        }
        if self.lpn_expires[lpn.index()] <= self.now.0 {
            self.expired_reads += 1;
            self.counters.unmapped_reads += 1;
            return Ok(None);
        }
        read_mapped(&self.flash, Ppn(ppn), &mut self.counters, &mut self.recorded).map(Some)
    }

    fn open_block(&mut self, partition: usize) -> Result<BlockId, FtlError> {
        let p = &self.partitions[partition];
        if p.held >= p.budget {
            return Err(FtlError::PartitionFull {
                partition: u32::try_from(partition).unwrap_or(u32::MAX),
                blocks: p.budget,
            });
        }
        let unit = self.roomiest_unit(partition);
        let hotness = (self.wear_leveling == WearLeveling::HealthBinning).then_some(p.hotness);
        let erase_counts = self.flash.erase_counts();
        let wear = self.wear.as_ref();
        let rber = |block: u32| {
            let erases = erase_counts[block as usize];
            wear.map_or(f64::from(erases), |model| model.rber(BlockId(block), erases))
        };
        let block = take_free_block(&mut self.free[unit.index()], self.wear_leveling, rber, hotness)
            .ok_or(FtlError::OutOfSpace { unit: unit.0 })?;
        self.partitions[partition].held += 1;
        self.state[block as usize] = BlockState::Open;
        self.owner[block as usize] = u32::try_from(partition).unwrap_or(NONE);
        Ok(BlockId(block))
    }

    /// The chip with the most free blocks, preferring chips none of the
    /// partition's open blocks is on (so a stripe spans distinct chips).
    fn roomiest_unit(&self, partition: usize) -> UnitId {
        let open_units: Vec<u32> = self.partitions[partition]
            .open
            .iter()
            .filter(|&&block| block != NONE)
            .map(|&block| self.geometry.unit_of_block(BlockId(block)).0)
            .collect();
        let unit = (0..self.geometry.units())
            .max_by_key(|unit| (!open_units.contains(unit), self.free[*unit as usize].len(), Reverse(*unit)))
            .unwrap_or(0);
        UnitId(unit)
    }

    fn erase(&mut self, block: BlockId) {
        let unit = self.geometry.unit_of_block(block);
        // Erased only once every page in it has expired.
        verify!(
            self.state[block.index()] == BlockState::Sealed && self.block_expires[block.index()] <= self.now.0,
            "{block:?} erased before its data expired"
        );
        self.flash.erase(block);
        self.recorded.record(FlashOpKind::Erase, unit, true);
        self.counters.erases += 1;
        if let Some(p) = self.partitions.get_mut(self.owner[block.index()] as usize) {
            verify!(p.held > 0, "{block:?} erased from a partition holding no block");
            p.held -= 1;
        }
        self.owner[block.index()] = NONE;
        self.block_expires[block.index()] = 0;
        self.state[block.index()] = BlockState::Free;
        self.free[unit.index()].push_back(block.0);
    }
}

impl TranslationLayer for TelomereFtl {
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
        self.l2p.capacity() * 4
            + self.lpn_expires.capacity() * 8
            + self.block_expires.capacity() * 8
            + self.state.capacity()
            + self.owner.capacity() * 4
            + self.free.iter().map(|free| free.capacity() * 4).sum::<usize>()
            + self.flash.memory_bytes()
    }

    fn count_request(&mut self) {
        self.counters.requests += 1;
    }

    /// Writes a page of task `stream`, valid for the task's data lifetime.
    fn write(&mut self, lpn: Lpn, stream: StreamId) -> Result<(), FtlError> {
        let task = stream.0 as usize;
        let lifetime =
            self.task_lifetime.get(task).copied().ok_or(FtlError::UnadmittedTask { task: u64::from(stream.0) })?;
        let expires = SimNs(self.now.0.saturating_add(lifetime.0));
        TelomereFtl::write(self, lpn, task, expires).map(drop)
    }

    fn read(&mut self, lpn: Lpn) -> Result<(), FtlError> {
        TelomereFtl::read(self, lpn).map(drop)
    }

    /// The pages become unreadable; their blocks are still erased when the
    /// data in them expire (no page is ever copied).
    fn trim(&mut self, first: Lpn, pages: u32) -> Result<(), FtlError> {
        for lpn in trim_range(&self.geometry, first, pages)? {
            self.l2p[lpn as usize] = NONE;
        }
        self.counters.host_pages_trimmed += u64::from(pages);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), FtlError> {
        Ok(())
    }

    fn is_mapped(&self, lpn: Lpn) -> bool {
        self.l2p.get(lpn.index()).is_some_and(|&ppn| ppn != NONE) && self.lpn_expires[lpn.index()] > self.now.0
    }

    fn free_blocks(&self, unit: UnitId) -> u32 {
        u32::try_from(self.free[unit.index()].len()).unwrap_or(u32::MAX)
    }

    /// Reclaiming is erasing what expired, done as time passes.
    fn collect_one(&mut self, _unit: UnitId) -> Result<bool, FtlError> {
        Ok(false)
    }

    fn advance(&mut self, now: SimNs) -> Result<(), FtlError> {
        TelomereFtl::advance(self, now);
        Ok(())
    }

    fn follows_time(&self) -> bool {
        true
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
        self.check_telomere()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceConfig;
    use crate::sim::{Timed, Workload};
    use crate::workload::periodic::{apply_job, Layout, PeriodicTask, PeriodicWorkload};

    fn ms(value: u64) -> SimNs {
        SimNs(value * 1_000_000)
    }

    /// One chip of 8-page blocks, as in Figures 5 and 6.
    fn eight_page_chip(blocks: u32) -> Geometry {
        let config = DeviceConfig {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: blocks,
            pages_per_block: 8,
            page_size: 4096,
            over_provisioning: None,
            logical_pages: Some(u64::from(blocks - 1) * 8),
            pe_cycles: 3000,
        };
        Geometry::from_config(&config).expect("valid geometry")
    }

    fn figure_5_tasks() -> Vec<PeriodicTask> {
        let task = |write_pages, period, lifetime_periods| PeriodicTask {
            read_pages: 0,
            read_period: SimNs(0),
            write_pages,
            write_period: ms(period),
            lifetime_periods,
        };
        vec![task(1, 2, 3), task(2, 3, 2)]
    }

    fn partition(task: usize, blocks: u32) -> PartitionSpec {
        PartitionSpec { tasks: vec![task], blocks, stripe_width: 1, data_lifetime: ms(8) }
    }

    fn lifetimes(tasks: &[PeriodicTask]) -> Vec<SimNs> {
        tasks.iter().map(PeriodicTask::data_lifetime).collect()
    }

    fn run(ftl: &mut TelomereFtl, tasks: Vec<PeriodicTask>, until: SimNs) -> Result<(), FtlError> {
        let mut workload = PeriodicWorkload::new(tasks, 64, SimNs(0), Layout::Ring, 0).expect("fits");
        while let Some(job) = workload.next_job().filter(|job| job.release < until) {
            apply_job(ftl, &job)?;
        }
        Ok(())
    }

    #[test]
    fn sip_figure_5_runs_in_two_blocks_per_task_without_copies() {
        // Figure 5: SiP needs 2 blocks for each task (4 in all).
        let mut ftl = TelomereFtl::new(
            &eight_page_chip(8),
            &[partition(0, 2), partition(1, 2)],
            &lifetimes(&figure_5_tasks()),
            WearLeveling::Fifo,
        )
        .expect("valid plan");
        run(&mut ftl, figure_5_tasks(), ms(10_000)).expect("admitted set fits its blocks");
        assert_eq!(ftl.counters().gc_page_copies, 0);
        assert!(ftl.counters().erases > 1000, "blocks are erased as they expire");
        assert!(ftl.blocks_held(0).is_some_and(|held| held <= 2));
    }

    #[test]
    fn a_partition_beyond_its_reservation_is_an_error() {
        let mut ftl = TelomereFtl::new(
            &eight_page_chip(8),
            &[partition(0, 1), partition(1, 2)],
            &lifetimes(&figure_5_tasks()),
            WearLeveling::Fifo,
        )
        .expect("valid plan");
        let error = run(&mut ftl, figure_5_tasks(), ms(1_000)).expect_err("one block cannot hold τ1");
        assert_eq!(error, FtlError::PartitionFull { partition: 0, blocks: 1 });
    }

    #[test]
    fn sharp_figure_6_shares_three_blocks() {
        let shared = PartitionSpec { tasks: vec![0, 1], blocks: 3, stripe_width: 1, data_lifetime: ms(9) };
        let mut ftl =
            TelomereFtl::new(&eight_page_chip(8), &[shared], &lifetimes(&figure_5_tasks()), WearLeveling::Fifo)
                .expect("valid plan");
        run(&mut ftl, figure_5_tasks(), ms(10_000)).expect("Figure 6: three shared blocks suffice");
        assert_eq!(ftl.counters().gc_page_copies, 0);
    }

    /// The eight-page chip as a configuration, with Telomere's latencies,
    /// no bus cost and EDF at the chip, writes through.
    fn timed_config(blocks: u32) -> crate::config::Config {
        let mut builder = crate::config::ConfigBuilder::preset("small").expect("preset");
        for assignment in [
            "device.channels=1".to_owned(),
            "device.chips_per_channel=1".to_owned(),
            "device.dies_per_chip=1".to_owned(),
            "device.planes_per_die=1".to_owned(),
            format!("device.blocks_per_plane={blocks}"),
            "device.pages_per_block=8".to_owned(),
            "device.page_size=4096".to_owned(),
            format!("device.logical_pages={}", (blocks - 1) * 8),
            "timing.read_ns=200000".to_owned(),
            "timing.program_ns=700000".to_owned(),
            "timing.erase_ns=2700000".to_owned(),
            "timing.channel_bytes_per_s=1000000000000".to_owned(),
            "timing.arrival=\"open\"".to_owned(),
            "timing.queue_depth=1024".to_owned(),
            "timing.die_queue=\"edf\"".to_owned(),
        ] {
            builder.set(&assignment).expect("override");
        }
        builder.build().expect("valid configuration").0
    }

    /// One chip, 0.7 ms programs, 2.7 ms erases, 8-page blocks, through the
    /// shared timing engine: a 2-page job every 5 ms takes 1.4 ms, or 4.1 ms
    /// behind the erase of an expired block, and meets every deadline; a job
    /// every 1 ms needs 1.4 ms per period and falls further behind each time.
    #[test]
    fn timed_run_serializes_a_chip_and_counts_deadline_misses() {
        use crate::sim::{Layer, Simulation};
        use crate::workload::periodic::PeriodicEvents;
        let task = |period| PeriodicTask {
            read_pages: 0,
            read_period: SimNs(0),
            write_pages: 2,
            write_period: ms(period),
            lifetime_periods: 1,
        };
        let run = |period| {
            let config = timed_config(8);
            let geometry = eight_page_chip(8);
            let spec = PartitionSpec { tasks: vec![0], blocks: 4, stripe_width: 1, data_lifetime: ms(2 * period) };
            let ftl = TelomereFtl::new(&geometry, &[spec], &[ms(2 * period)], WearLeveling::Fifo).expect("valid");
            let mut simulation = Simulation::with_layer(&config, Layer::Telomere(ftl)).expect("same device").checked();
            let workload = PeriodicWorkload::new(vec![task(period)], 56, SimNs(0), Layout::Ring, 0).expect("fits");
            let mut source = PeriodicEvents::new(workload, &geometry, ms(1_000), true).expect("one task");
            simulation
                .run_phase(Workload::Events(&mut source), Timed, &mut |_| {})
                .expect("runs")
                .deadlines
                .clone()
                .expect("deadlines")
        };
        let relaxed = run(5);
        assert_eq!((relaxed.requests, relaxed.misses), (200, 0));
        let overloaded = run(1);
        assert_eq!((overloaded.requests, overloaded.misses), (1000, 1000));
        // Programs alone end job k at 1.4·(k + 1) ms, against a deadline of k + 1 ms.
        assert!(overloaded.worst_lateness_ms >= 0.4 * 1000.0, "{}", overloaded.worst_lateness_ms);
    }

    #[test]
    fn expired_data_is_unreadable() {
        let mut ftl =
            TelomereFtl::new(&eight_page_chip(8), &[partition(0, 2)], &[ms(8)], WearLeveling::Fifo).expect("valid");
        ftl.advance(ms(0));
        TranslationLayer::write(&mut ftl, Lpn(0), StreamId(0)).expect("room");
        ftl.advance(ms(7));
        assert!(ftl.read(Lpn(0)).expect("in range").is_some());
        ftl.advance(ms(8));
        assert_eq!(ftl.read(Lpn(0)).expect("in range"), None);
        assert_eq!(ftl.expired_reads(), 1);
    }

    #[test]
    fn bad_plans_are_refused() {
        let geometry = eight_page_chip(8);
        let wide = PartitionSpec { stripe_width: 2, ..partition(0, 4) };
        assert!(matches!(
            TelomereFtl::new(&geometry, &[wide], &[ms(8)], WearLeveling::Fifo),
            Err(TelomereError::StripeWidth { .. })
        ));
        let twice = [partition(0, 2), partition(0, 2)];
        assert!(matches!(
            TelomereFtl::new(&geometry, &twice, &[ms(8)], WearLeveling::Fifo),
            Err(TelomereError::TaskTwice { .. })
        ));
        assert!(matches!(
            TelomereFtl::new(&geometry, &[partition(0, 9)], &[ms(8)], WearLeveling::Fifo),
            Err(TelomereError::OverReserved { .. })
        ));
    }

    /// The checker holds through SiP's Figure 5 run, and names the
    /// invariant a corrupted partition, stripe or expiry queue breaks.
    #[test]
    fn the_invariant_checker_names_what_a_corruption_breaks() {
        use crate::ftl::Invariant;
        let tasks = figure_5_tasks();
        let mut ftl = TelomereFtl::new(
            &eight_page_chip(8),
            &[partition(0, 2), partition(1, 2)],
            &lifetimes(&tasks),
            WearLeveling::Fifo,
        )
        .expect("valid");
        run(&mut ftl, tasks, ms(40)).expect("fits");
        ftl.check_invariants().expect("holds after the run");
        let broken = |corrupt: &dyn Fn(&mut TelomereFtl)| {
            let mut corrupted = ftl.clone();
            corrupt(&mut corrupted);
            corrupted.check_invariants().expect_err("corrupted").invariant
        };
        assert_eq!(broken(&|ftl| ftl.partitions[0].held += 1), Invariant::Placement);
        let sealed = ftl.state.iter().position(|&state| state == BlockState::Sealed).expect("a sealed block");
        let expires = ftl.block_expires[sealed];
        assert_eq!(broken(&|ftl| ftl.sealed.push(Reverse((expires, sealed as u32)))), Invariant::BlockAccounting);
        let live = (0..ftl.l2p.len()).find(|&lpn| ftl.l2p[lpn] != NONE && ftl.lpn_expires[lpn] > ftl.now.0);
        let live = live.expect("live data");
        let block = ftl.geometry.block_of_page(Ppn(ftl.l2p[live])).index();
        assert_eq!(broken(&|ftl| ftl.block_expires[block] = ftl.lpn_expires[live] - 1), Invariant::Placement);
    }
}
