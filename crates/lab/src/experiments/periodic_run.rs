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

use crate::error::{Context as _, Result};
use nandlab_admission::DeviceParams;
use nandlab_core::config::{Config, ConfigBuilder};
use nandlab_core::device::DeviceConfig;
use nandlab_core::metrics::Counters;
use nandlab_core::sim::{Layer, Simulation};
use nandlab_core::timing::{Arrival, DeadlineReport, DieQueue};
use nandlab_core::units::SimNs;
use nandlab_core::workload::periodic::{PeriodicEvents, PeriodicTask, PeriodicWorkload};
use serde::Serialize;
use std::time::Duration;

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

/// Runs `tasks` on `layer` through the timing engine from time 0 until
/// `until`, reads starting at `reads_from`. `task_streams`: each task is its
/// own placement hint (the lifetime-aware FTL needs it).
pub fn timed(
    config: &Config,
    layer: Layer,
    tasks: Vec<PeriodicTask>,
    reads_from: SimNs,
    until: SimNs,
    task_streams: bool,
) -> Result<PeriodicRun> {
    let mut simulation = Simulation::with_layer(config, layer)?;
    let geometry = *simulation.geometry();
    let workload = PeriodicWorkload::new(tasks, geometry.logical_pages, reads_from)?;
    let mut source = PeriodicEvents::new(workload, &geometry, until, task_streams)?;
    let report = simulation.replay_timed(&mut source, &mut |_| {})?.clone();
    #[allow(clippy::cast_precision_loss)]
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
    })
}

/// Runs `tasks` on `layer` in counting mode until `stop` says so (it sees
/// the counters and every block's erase count after each job); returns the
/// final erase counts and counters.
pub fn counted_until(
    config: &Config,
    layer: Layer,
    tasks: Vec<PeriodicTask>,
    task_streams: bool,
    stop: &mut dyn FnMut(&Counters, &[u32]) -> bool,
) -> Result<(Vec<u32>, Counters)> {
    let mut simulation = Simulation::with_layer(config, layer)?;
    let geometry = *simulation.geometry();
    let workload = PeriodicWorkload::new(tasks, geometry.logical_pages, SimNs(u64::MAX))?;
    let mut source = PeriodicEvents::new(workload, &geometry, SimNs(u64::MAX), task_streams)?;
    simulation.replay_until(&mut source, &mut |_| {}, stop)?;
    Ok((simulation.erase_counts().to_vec(), simulation.counters().clone()))
}
