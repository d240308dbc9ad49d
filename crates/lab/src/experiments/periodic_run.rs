//! Periodic task sets through the one pipeline: the device an admission
//! test plans for, as a run configuration, and a task set run on a
//! translation layer by the shared driver, in counting mode or through the
//! timing engine. Every Telomere simulation (`reproduce telomere-table3`,
//! `telomere-fig10`, `nandlab admit --simulate`) runs here.
//!
//! The timing set-up is Telomere's model of the device (Section 6.3): each
//! chip serves its queued operations earliest deadline first without
//! preemption (`timing.die_queue = "edf"`), a job completes when its last
//! page is programmed or read (no write buffer), and jobs arrive at their
//! release times (open loop, a host queue deep enough never to hold one
//! back). t_r and t_w of eq. (18) include the page transfer, so the bus is
//! given the fastest rate the configuration allows (a 4 KiB page crosses in
//! 4 ns) rather than charged twice.

use crate::error::{Context as _, Error, Result};
use nandlab_admission::incremental::AdmissionReport;
use nandlab_admission::policy::{AdmissionContext, Policy, StorageCheck};
use nandlab_admission::storage::StoragePlan;
use nandlab_admission::{DeviceParams, Task};
use nandlab_convert::{f64_of, saturating};
use nandlab_core::config::{Config, ConfigBuilder};
use nandlab_core::device::wear::{WearLeveling, WearModel};
use nandlab_core::device::{DeviceConfig, Geometry};
use nandlab_core::ftl::telomere::{PartitionSpec, TelomereFtl};
use nandlab_core::ftl::wao_gc::{WaoGcConfig, WaoGcFtl};
use nandlab_core::ftl::{Allocation, FtlConfig, PageFtl};
use nandlab_core::metrics::Counters;
use nandlab_core::sim::{Counting, Timed, Workload};
use nandlab_core::sim::{Layer, Simulation};
use nandlab_core::timing::{Arrival, DeadlineReport, DieQueue};
use nandlab_core::units::SimNs;
use nandlab_core::workload::periodic::{Layout, PeriodicEvents, PeriodicTask, PeriodicWorkload, ReleasedPages};
use serde::Serialize;
use std::time::Duration;

/// The core's view of an admission task.
pub fn periodic_task(task: &Task) -> Result<PeriodicTask> {
    let pages =
        |pages: u64| u32::try_from(pages).with_context(|| format!("task {}: {pages} pages per period", task.name));
    let (read_pages, read_period) =
        task.read.map_or(Ok((0, SimNs(0))), |read| Ok::<_, Error>((pages(read.pages)?, ns(read.period))))?;
    let (write_pages, write_period) =
        task.write.map_or(Ok((0, SimNs(0))), |write| Ok::<_, Error>((pages(write.pages)?, ns(write.period))))?;
    let lifetime_periods =
        u32::try_from(task.lifetime_periods).with_context(|| format!("task {}: lifetime", task.name))?;
    Ok(PeriodicTask { read_pages, read_period, write_pages, write_period, lifetime_periods })
}

/// An admission task from a generated core task.
pub fn admission_task(index: usize, task: &PeriodicTask) -> Task {
    let period = Duration::from_nanos(task.write_period.0);
    Task::writer(&format!("t{index}"), u64::from(task.write_pages), period, u64::from(task.lifetime_periods))
}

/// The core's partitions from a storage plan over the same task list.
pub fn partition_specs(plan: &StoragePlan) -> Result<Vec<PartitionSpec>> {
    plan.partitions
        .iter()
        .map(|partition| {
            Ok(PartitionSpec {
                tasks: partition.tasks.clone(),
                blocks: u32::try_from(partition.blocks).context("partition blocks")?,
                stripe_width: u32::try_from(partition.stripe_width).context("stripe width")?,
                data_lifetime: ns(partition.longest_data_lifetime),
            })
        })
        .collect()
}

/// The simulated geometry of an admission device with `logical_pages` mapped.
pub fn geometry(device: &DeviceParams, logical_pages: u64) -> Result<Geometry> {
    Ok(Geometry::from_config(&device_config(device, logical_pages)?)?)
}

/// Data lifetime of every task, for the placement FTL.
pub fn lifetimes(tasks: &[PeriodicTask]) -> Vec<SimNs> {
    tasks.iter().map(PeriodicTask::data_lifetime).collect()
}

/// Logical pages a page-mapped FTL exposes at device utilization λ.
pub fn mapped_pages(device: &DeviceParams, utilization: f64) -> u64 {
    saturating::<u64>((f64_of(device.pages()) * utilization).floor())
}

pub fn region_pages(tasks: &[PeriodicTask]) -> u64 {
    tasks.iter().map(PeriodicTask::region_pages).sum()
}

/// Telomere's placement FTL for the admitted `tasks` as `plan` lays them
/// out (free blocks ranked by `wear` when given), and its run configuration;
/// it maps the tasks' live pages, or `logical_pages` when given (a
/// [`Layout::Scattered`] run spreads the tasks over them).
pub fn telomere_layer(
    device: &DeviceParams,
    tasks: &[PeriodicTask],
    plan: &StoragePlan,
    wear_leveling: WearLeveling,
    wear: Option<&WearModel>,
    logical_pages: Option<u64>,
) -> Result<(Config, Layer)> {
    let pages = logical_pages.unwrap_or_else(|| region_pages(tasks));
    let mut ftl =
        TelomereFtl::new(&geometry(device, pages)?, &partition_specs(plan)?, &lifetimes(tasks), wear_leveling)?;
    if let Some(model) = wear {
        ftl.set_wear_model(model.clone());
    }
    Ok((run_config(device, pages, 1)?, Layer::Telomere(ftl)))
}

/// The page-mapped baseline with `logical_pages` mapped (free blocks ranked
/// by `wear` when given), and its run configuration.
pub fn pagemap_layer(
    device: &DeviceParams,
    logical_pages: u64,
    ftl_config: FtlConfig,
    wear: Option<&WearModel>,
) -> Result<(Config, Layer)> {
    let mut config = run_config(device, logical_pages, 1)?;
    // Static allocation keeps every chip's share of the tasks' rings in that
    // chip; turn by turn, a periodic pattern piles valid data up in some.
    let ftl_config = FtlConfig { allocation: Allocation::Static, ..ftl_config };
    let mut ftl = PageFtl::new(&geometry(device, logical_pages)?, &ftl_config, config.seed)?;
    if let Some(model) = wear {
        ftl.set_wear_model(model.clone());
    }
    config.ftl = ftl_config;
    Ok((config, Layer::Page(ftl)))
}

/// WAO-GC on `device` at utilization λ (capped at its own bound, Section
/// 6.1.5), α = ⌊t_e/(t_r + t_w)⌋, and its run configuration.
pub fn wao_gc_layer(device: &DeviceParams, utilization: f64) -> Result<(Config, Layer)> {
    let wao_config = WaoGcConfig::from_latencies(ns(device.read), ns(device.write), ns(device.erase), 2);
    let wao_utilization = wao_config.utilization_bound(u32::try_from(device.pages_per_block)?).min(utilization);
    let pages = mapped_pages(device, wao_utilization);
    let wao = WaoGcFtl::new(&geometry(device, pages)?, wao_config);
    Ok((run_config(device, pages, 1)?, Layer::WaoGc(wao)))
}

/// Host pages one interval of a timed run completed, per second.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ThroughputBin {
    pub start_s: f64,
    pub written_pages_per_s: f64,
    pub read_pages_per_s: f64,
}

/// What a timed run of a task set measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeriodicRun {
    /// One-second bins of completed host pages.
    pub bins: Vec<ThroughputBin>,
    /// Requests with a deadline (one per job; a read job whose pages wrap
    /// its ring is two) and how many completed late.
    pub deadlines: DeadlineReport,
    /// Pages read that held no data (expired or never written).
    pub missing_reads: u64,
    /// The translation layer's counters over the run.
    pub counters: Counters,
    /// Pages each task's jobs asked for (and the run completed).
    pub released: Vec<ReleasedPages>,
}

pub fn ns(duration: Duration) -> SimNs {
    SimNs(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX))
}

/// The flash of an admission device with `logical_pages` mapped: one die
/// and one plane per chip, as the admission model counts chips.
pub fn device_config(device: &DeviceParams, logical_pages: u64) -> Result<DeviceConfig> {
    let u32_of = |value: u64, what: &str| u32::try_from(value).with_context(|| format!("{what} {value} is too large"));
    Ok(DeviceConfig {
        channels: u32_of(device.channels, "channels")?,
        chips_per_channel: u32_of(device.chips_per_channel, "chips per channel")?,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: u32_of(device.blocks_per_chip, "blocks per chip")?,
        pages_per_block: u32_of(device.pages_per_block, "pages per block")?,
        page_size: u32_of(device.page_size_bytes, "page size")?,
        over_provisioning: None,
        logical_pages: Some(logical_pages.max(1)),
        pe_cycles: 3000,
    })
}

/// The run configuration of `device` with `logical_pages` mapped, timed as
/// the module documentation says.
pub fn run_config(device: &DeviceParams, logical_pages: u64, seed: u64) -> Result<Config> {
    let (mut config, _) = ConfigBuilder::preset("small")?.build()?;
    config.seed = seed;
    config.device = device_config(device, logical_pages)?;
    config.precondition.enabled = false;
    let timing = &mut config.timing;
    timing.read_ns = ns(device.read).0;
    timing.program_ns = ns(device.write).0;
    timing.erase_ns = ns(device.erase).0;
    timing.channel_bytes_per_s = CHANNEL_BYTES_PER_S_MAX;
    timing.arrival = Arrival::Open;
    timing.queues = 1;
    timing.queue_depth = HOST_QUEUE_DEPTH;
    timing.write_buffer_pages = 0;
    timing.die_queue = DieQueue::Edf;
    timing.series_interval_ns = 1_000_000_000;
    Ok(config)
}

/// The fastest bus `[timing]` accepts.
const CHANNEL_BYTES_PER_S_MAX: u64 = 1_000_000_000_000;

/// Deep enough that the host queue never holds a released job back.
const HOST_QUEUE_DEPTH: u32 = 4096;

/// How a timed run lays out and times a task set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunPlan {
    /// Reads start here (Figure 14: t ≈ 97 s).
    pub reads_from: SimNs,
    pub until: SimNs,
    /// Each task is its own placement hint (the lifetime-aware FTL needs it).
    pub task_streams: bool,
    /// Where write jobs land; [`Layout::Scattered`] draws the slots with the
    /// configuration's seed.
    pub layout: Layout,
    /// Share of the layer's logical space the tasks' regions span under
    /// [`Layout::Scattered`] (never less than their live pages).
    pub footprint: f64,
}

/// Runs `tasks` on `layer` through the timing engine as `plan` says.
pub fn timed_run(config: &Config, layer: Layer, tasks: Vec<PeriodicTask>, plan: RunPlan) -> Result<PeriodicRun> {
    let RunPlan { reads_from, until, task_streams, layout, footprint } = plan;
    if !(footprint > 0.0 && footprint <= 1.0) {
        return Err(Error::Invalid(format!(
            "footprint must be a share of the logical space in (0, 1], got {footprint}"
        )));
    }
    let mut simulation = Simulation::with_layer(config, layer)?;
    let geometry = *simulation.geometry();
    // At most `logical_pages`, a u32, since the share is at most 1.
    let spanned = saturating::<u32>((f64::from(geometry.logical_pages) * footprint).floor());
    let live = u32::try_from(region_pages(&tasks)).unwrap_or(u32::MAX);
    let workload = PeriodicWorkload::new(tasks, spanned.max(live), reads_from, layout, config.seed)?;
    let mut source = PeriodicEvents::new(workload, &geometry, until, task_streams)?;
    let outcome = simulation.run_phase(Workload::Events(&mut source), Timed, &mut |_| {}).cloned();
    let failed_at_s = f64_of(source.last_release().0) / 1e9;
    let report = outcome.with_context(|| format!("the run stopped at t = {failed_at_s:.1} s"))?;
    let page_mb = f64::from(geometry.page_size) / 1e6;
    let mut start_s = 0.0;
    let bins = report
        .throughput_series
        .iter()
        .map(|point| {
            let bin = ThroughputBin {
                start_s,
                written_pages_per_s: point.write_mb_s / page_mb,
                read_pages_per_s: point.read_mb_s / page_mb,
            };
            start_s = point.time_s;
            bin
        })
        .collect();
    Ok(PeriodicRun {
        bins,
        deadlines: report.deadlines.unwrap_or_default(),
        missing_reads: report.unmapped_read_pages,
        counters: simulation.report().measured.counters,
        released: source.released().to_vec(),
    })
}

/// What a counting run of a task set left behind.
#[derive(Clone, Debug, PartialEq)]
pub struct CountedRun {
    pub erase_counts: Vec<u32>,
    pub counters: Counters,
    pub released: Vec<ReleasedPages>,
}

/// Runs `tasks` on `layer` in counting mode (no reads) until `until` or
/// until `stop` says so (it sees the counters and every block's erase count
/// after each job).
pub fn counted(
    config: &Config,
    layer: Layer,
    tasks: Vec<PeriodicTask>,
    until: SimNs,
    task_streams: bool,
    stop: &mut dyn FnMut(&Counters, &[u32]) -> bool,
) -> Result<CountedRun> {
    let mut simulation = Simulation::with_layer(config, layer)?;
    let geometry = *simulation.geometry();
    let workload = PeriodicWorkload::new(tasks, geometry.logical_pages, SimNs(u64::MAX), Layout::Ring, config.seed)?;
    let mut source = PeriodicEvents::new(workload, &geometry, until, task_streams)?;
    simulation.run_phase(Workload::Events(&mut source), Counting::Until(stop), &mut |_| {})?;
    Ok(CountedRun {
        erase_counts: simulation.erase_counts().to_vec(),
        counters: simulation.counters().clone(),
        released: source.released().to_vec(),
    })
}

/// One task's share of a simulated run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskThroughput {
    pub task: String,
    pub write_pages_per_s: f64,
    pub read_pages_per_s: f64,
}

/// What `nandlab admit --simulate` measured for the admitted tasks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdmittedRun {
    /// The translation layer that ran them (the policy's own FTL).
    pub layer: &'static str,
    pub simulated_s: f64,
    pub timed: bool,
    /// Deadline misses (timed runs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadlines: Option<DeadlineReport>,
    pub gc_page_copies: u64,
    pub erases: u64,
    pub host_pages_written: u64,
    pub tasks: Vec<TaskThroughput>,
}

/// Runs the tasks `report` admitted under `policy` for `seconds` of
/// simulated time on the FTL the policy is for: Telomere's placement FTL with
/// the planned partitions, WAO-GC, or the page-mapped FTL (MultiLog's
/// baseline), timed or counting.
pub fn simulate_admitted(
    context: &AdmissionContext,
    policy: &Policy,
    tasks: &[Task],
    report: &AdmissionReport,
    seconds: f64,
    timed: bool,
) -> Result<AdmittedRun> {
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= SIMULATE_S_MAX) {
        return Err(Error::Invalid(format!(
            "--simulate must be a number of seconds above 0 and at most {SIMULATE_S_MAX}, got {seconds}"
        )));
    }
    let admitted: Vec<&Task> = report.admitted.iter().map(|&index| &tasks[index]).collect();
    let periodic = admitted.iter().map(|task| periodic_task(task)).collect::<Result<Vec<_>>>()?;
    let device = &context.device;
    let ((config, layer), name) = match (policy, &report.verdict.storage) {
        (Policy::Telomere { .. }, StorageCheck::Blocks(plan)) => {
            (telomere_layer(device, &periodic, plan, WearLeveling::Fifo, None, None)?, "telomere")
        }
        (Policy::WaoGc, _) => (wao_gc_layer(device, context.utilization)?, "wao-gc"),
        _ => {
            let pages = mapped_pages(device, context.utilization);
            (pagemap_layer(device, pages, FtlConfig::default(), None)?, "page")
        }
    };
    let task_streams = name == "telomere";
    // Within SIMULATE_S_MAX, so the conversion is exact enough and in range.
    let until = SimNs(saturating::<u64>(seconds * 1e9));
    let (deadlines, counters, released) = if timed {
        let plan = RunPlan { reads_from: SimNs(0), until, task_streams, layout: Layout::Ring, footprint: 1.0 };
        let run = timed_run(&config, layer, periodic, plan)?;
        (Some(run.deadlines), run.counters, run.released)
    } else {
        let run = counted(&config, layer, periodic, until, task_streams, &mut |_, _| false)?;
        (None, run.counters, run.released)
    };
    let tasks = admitted
        .iter()
        .zip(&released)
        .map(|(task, pages)| {
            let per_s = |count: u64| f64_of(count) / seconds;
            TaskThroughput {
                task: task.name.clone(),
                write_pages_per_s: per_s(pages.written),
                read_pages_per_s: per_s(pages.read),
            }
        })
        .collect();
    Ok(AdmittedRun {
        layer: name,
        simulated_s: seconds,
        timed,
        deadlines,
        gc_page_copies: counters.gc_page_copies,
        erases: counters.erases,
        host_pages_written: counters.host_pages_written,
        tasks,
    })
}

/// Longest `--simulate`: a day of simulated time.
pub const SIMULATE_S_MAX: f64 = 86_400.0;
