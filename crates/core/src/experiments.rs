//! The timing experiments of Rajimwale, Prabhakaran and Davis, "Block
//! management in solid-state devices" (slides 13, 15 and 19), as functions
//! returning their data points. The CLI's `nandlab reproduce` writes them out.

use crate::config::ConfigBuilder;
use crate::sim::{SimError, Simulation, Timed, Workload};
use crate::timing::{Arrivals, LatencySummary, RequestSource, SequentialMix, SyntheticSource, TimedReport};
use crate::workload::Synthetic;
use serde::Serialize;

/// Device of every experiment: the `small` preset (4 dies, 4 KiB pages),
/// with overrides.
const PRESET: &str = "small";

fn simulation(overrides: &[String], seed: u64) -> Result<Simulation, SimError> {
    let mut builder = ConfigBuilder::preset(PRESET)?;
    for assignment in overrides {
        builder.set(assignment)?;
    }
    builder.set(&format!("seed={seed}"))?;
    let (config, _) = builder.build()?;
    let mut simulation = Simulation::new(&config)?;
    simulation.precondition(&mut |_| {})?;
    Ok(simulation)
}

fn timed(simulation: &mut Simulation, source: &mut dyn RequestSource, requests: u64) -> Result<TimedReport, SimError> {
    Ok(simulation.run_phase(Workload::Requests(source, requests), Timed, &mut |_| {})?.clone())
}

fn ms(summary: Option<&LatencySummary>, pick: fn(&LatencySummary) -> f64) -> f64 {
    summary.map_or(0.0, |s| pick(s) / 1e3)
}

/// One point of the priority-aware cleaning experiment (slide 19).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PriorityPoint {
    pub write_percent: u32,
    pub priority_aware: bool,
    pub priority_mean_ms: f64,
    pub priority_p99_ms: f64,
    pub normal_mean_ms: f64,
    pub normal_p99_ms: f64,
    pub gc_die_time_share: f64,
}

/// Settings of the priority-aware cleaning experiment.
#[derive(Clone, Debug)]
pub struct PrioritySetup {
    pub write_percents: Vec<u32>,
    pub arrival_iops: u64,
    /// Share of arrivals that start a burst of priority requests.
    pub burst_probability: f64,
    pub burst_len: u32,
    pub burst_gap_ns: u64,
    pub requests: u64,
    pub low_watermark_blocks: u32,
    pub seed: u64,
}

impl Default for PrioritySetup {
    fn default() -> Self {
        Self {
            write_percents: vec![20, 30, 40, 50, 60, 70, 80],
            arrival_iops: 3000,
            burst_probability: 0.05,
            burst_len: 4,
            burst_gap_ns: 100_000,
            requests: 60_000,
            low_watermark_blocks: 8,
            seed: 1,
        }
    }
}

/// Response time of priority and non-priority 4 KiB random requests as the
/// write share grows, with and without priority-aware cleaning (slide 19).
pub fn priority_cleaning(setup: &PrioritySetup) -> Result<Vec<PriorityPoint>, SimError> {
    let mut points = Vec::new();
    for &write_percent in &setup.write_percents {
        for aware in [false, true] {
            let overrides = vec![
                "timing.arrival=\"open\"".to_owned(),
                format!("timing.gc_low_blocks={}", setup.low_watermark_blocks),
                format!("timing.priority_aware_gc={aware}"),
                format!("workload.read_fraction={}", f64::from(100 - write_percent) / 100.0),
            ];
            let mut simulation = simulation(&overrides, setup.seed)?;
            let geometry = *simulation.geometry();
            let mut workload = Synthetic::new(&simulation.config().workload, &geometry, setup.seed.wrapping_add(1));
            let arrivals = Arrivals::new(Some(setup.arrival_iops), setup.burst_probability, setup.seed.wrapping_add(2))
                .with_priority_bursts(setup.burst_len, setup.burst_gap_ns);
            let mut source = SyntheticSource::new(&mut workload, arrivals);
            let report = timed(&mut simulation, &mut source, setup.requests)?;
            let latency = &report.latency;
            points.push(PriorityPoint {
                write_percent,
                priority_aware: aware,
                priority_mean_ms: ms(latency.priority.as_ref(), |s| s.mean_us),
                priority_p99_ms: ms(latency.priority.as_ref(), |s| s.p99_us),
                normal_mean_ms: ms(latency.normal.as_ref(), |s| s.mean_us),
                normal_p99_ms: ms(latency.normal.as_ref(), |s| s.p99_us),
                gc_die_time_share: report.gc_die_time_share,
            });
        }
    }
    Ok(points)
}

/// One point of slide 13: sequential writes of one size, 1 MiB stripes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WriteSizePoint {
    pub write_kib: u32,
    pub throughput_mb_s: f64,
    pub rmw_pages_rewritten: u64,
}

/// Stripe (mapping unit) of the stripe experiments: 1 MiB of 4 KiB pages,
/// as on the slides' sample S2.
pub const STRIPE_PAGES: u32 = 256;

/// Throughput of continuous sequential writes against their size with a
/// 1 MiB mapping unit and no merging (slide 13), on a device filled in order.
pub fn write_size_throughput(write_kib: &[u32], seed: u64) -> Result<Vec<WriteSizePoint>, SimError> {
    // Filled in order, not aged by random overwrites: the slide measures
    // continuous writes, whose cost should be the stripe's, not GC's.
    let overrides = vec![
        format!("timing.stripe_pages={STRIPE_PAGES}"),
        "timing.queue_depth=1".to_owned(),
        "precondition.max_device_writes=0".to_owned(),
    ];
    let mut points = Vec::new();
    for &kib in write_kib {
        let mut simulation = simulation(&overrides, seed)?;
        let geometry = *simulation.geometry();
        let pages = (kib * 1024 / geometry.page_size).max(1);
        // About 32 MiB of writes per point.
        let requests = u64::from((8192 / pages).max(8));
        let mut source = SequentialMix::new(&geometry, pages, 1.0, 1.0, Arrivals::new(None, 0.0, seed), seed);
        let report = timed(&mut simulation, &mut source, requests)?;
        points.push(WriteSizePoint {
            write_kib: kib,
            throughput_mb_s: report.write_mb_s,
            rmw_pages_rewritten: report.rmw_pages_rewritten,
        });
    }
    Ok(points)
}

/// One point of slide 15: mean write response time with merging over
/// without, at one probability of sequential access.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MergePoint {
    pub sequential_probability: f64,
    pub eager_mean_ms: f64,
    pub merge_mean_ms: f64,
    pub normalized_response_time: f64,
    pub eager_rmw_pages: u64,
    pub merge_rmw_pages: u64,
    pub stripes_merged: u64,
}

/// Mean response time of 128 KiB writes through a 4 MiB buffer with
/// stripe-aligned merging, normalized to the same buffer flushing eagerly,
/// as the probability of sequential access grows (slide 15).
pub fn merge_response_time(probabilities: &[f64], requests: u64, seed: u64) -> Result<Vec<MergePoint>, SimError> {
    const REQUEST_PAGES: u32 = 32;
    let mut points = Vec::new();
    for &probability in probabilities {
        let run = |flush: &str| -> Result<TimedReport, SimError> {
            let overrides = vec![
                format!("timing.stripe_pages={STRIPE_PAGES}"),
                "timing.write_buffer_pages=1024".to_owned(),
                format!("timing.flush=\"{flush}\""),
                "timing.queue_depth=4".to_owned(),
                // 800 MiB logical: random requests rarely meet in a stripe.
                "device.blocks_per_plane=1024".to_owned(),
            ];
            let mut simulation = simulation(&overrides, seed)?;
            let geometry = *simulation.geometry();
            let arrivals = Arrivals::new(None, 0.0, seed);
            let mut source = SequentialMix::new(&geometry, REQUEST_PAGES, probability, 1.0, arrivals, seed);
            timed(&mut simulation, &mut source, requests)
        };
        let eager = run("eager")?;
        let merge = run("stripe-merge")?;
        let eager_mean_ms = ms(eager.latency.write.as_ref(), |s| s.mean_us);
        let merge_mean_ms = ms(merge.latency.write.as_ref(), |s| s.mean_us);
        points.push(MergePoint {
            sequential_probability: probability,
            eager_mean_ms,
            merge_mean_ms,
            normalized_response_time: if eager_mean_ms > 0.0 { merge_mean_ms / eager_mean_ms } else { 0.0 },
            eager_rmw_pages: eager.rmw_pages_rewritten,
            merge_rmw_pages: merge.rmw_pages_rewritten,
            stripes_merged: merge.stripes_merged,
        });
    }
    Ok(points)
}
