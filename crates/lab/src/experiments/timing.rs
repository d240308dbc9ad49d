//! The timing experiments of `nandlab reproduce`: priority-aware cleaning
//! (Rajimwale et al., slide 19) and stripe-aligned write merging (slides 13
//! and 15). The data come from `nandlab_core::timing::experiments`; this file
//! writes them, their plots and a summary through `nandlab-report`.

use crate::error::Result;
use crate::shared::config_from;
use nandlab_core::timing::experiments::{
    merge_response_time, priority_cleaning as run_priority_cleaning, write_size_throughput, PriorityPoint,
    PrioritySetup, STRIPE_PAGES,
};
use nandlab_report::{Axis, Chart, Comparison, Mark, OutputDir, Reference, Series, Summary};
use serde::Serialize;
use std::path::Path;

/// Slide 19 again, as two `[[job]]` tables: a priority job beside a bulk job.
#[derive(Clone, Debug, Serialize)]
struct JobPoint {
    write_percent: u32,
    priority_aware: bool,
    priority_job_mean_ms: f64,
    priority_job_p99_ms: f64,
    bulk_job_mean_ms: f64,
    bulk_job_p99_ms: f64,
    gc_die_time_share: f64,
}

/// The jobs: both 4 KiB random over the whole device with the point's read
/// share, Poisson arrivals; the priority job at 300 IOPS, the bulk job at
/// 2,700 (3,000 in all, as the single-workload setup).
const PRIORITY_JOB_IOPS: u64 = 300;
const BULK_JOB_IOPS: u64 = 2700;
const JOB_WRITE_PERCENTS: [u32; 4] = [20, 40, 60, 80];

fn priority_jobs(seed: u64, low_watermark_blocks: u32) -> Result<Vec<JobPoint>> {
    let mut points = Vec::new();
    for write_percent in JOB_WRITE_PERCENTS {
        let read = f64::from(100 - write_percent) / 100.0;
        for aware in [false, true] {
            let assignments = vec![
                format!("seed={seed}"),
                format!("timing.gc_low_blocks={low_watermark_blocks}"),
                format!("timing.priority_aware_gc={aware}"),
                format!("workload.read_fraction={read}"),
                format!(
                    "job=name=priority,priority=true,rate_iops={PRIORITY_JOB_IOPS},read_fraction={read},requests=6000"
                ),
                format!("job=name=bulk,rate_iops={BULK_JOB_IOPS},read_fraction={read},requests=54000"),
            ];
            let config = config_from("preset = \"small\"", &assignments)?;
            let report = nandlab_core::sim::run_timed(&config, &mut |_| {})?;
            let timed = report.timed.as_ref().ok_or_else(|| crate::Error::Failed("no timed report".to_owned()))?;
            let ms = |job: usize, pick: fn(&nandlab_core::timing::LatencySummary) -> f64| {
                timed.jobs.get(job).and_then(|job| job.latency.as_ref()).map_or(f64::NAN, |latency| pick(latency) / 1e3)
            };
            points.push(JobPoint {
                write_percent,
                priority_aware: aware,
                priority_job_mean_ms: ms(0, |latency| latency.mean_us),
                priority_job_p99_ms: ms(0, |latency| latency.p99_us),
                bulk_job_mean_ms: ms(1, |latency| latency.mean_us),
                bulk_job_p99_ms: ms(1, |latency| latency.p99_us),
                gc_die_time_share: timed.gc_die_time_share,
            });
        }
    }
    Ok(points)
}

/// `nandlab reproduce priority-cleaning`: response time of priority and
/// non-priority requests against the write percentage, with and without
/// priority-aware cleaning.
pub fn priority_cleaning(out: &Path, seed: u64) -> Result<()> {
    let setup = PrioritySetup { seed, ..PrioritySetup::default() };
    eprintln!("priority-cleaning: seed {seed}, {} points…", 2 * setup.write_percents.len());
    let points = run_priority_cleaning(&setup)?;
    let dir = OutputDir::create(out)?;
    dir.write_csv("priority_cleaning.csv", &points)?;
    let series = |aware: bool, pick: fn(&PriorityPoint) -> f64| -> Vec<(f64, f64)> {
        points.iter().filter(|p| p.priority_aware == aware).map(|p| (f64::from(p.write_percent), pick(p))).collect()
    };
    let chart = Chart::new(
        "Priority-aware cleaning (slide 19)",
        Axis::new("write percentage").unit("%"),
        Axis::new("mean response time").unit("ms"),
    )
    .with(Series::new("priority, unaware", Mark::LinePoints, series(false, |p| p.priority_mean_ms)))
    .with(Series::new("priority, aware", Mark::LinePoints, series(true, |p| p.priority_mean_ms)))
    .with(Series::new("non-priority, unaware", Mark::DashedLine, series(false, |p| p.normal_mean_ms)))
    .with(Series::new("non-priority, aware", Mark::DashedLine, series(true, |p| p.normal_mean_ms)))
    .reference(Reference::points(
        "paper: priority, aware ≈ 10 % below unaware (slide 19)",
        series(false, |p| p.priority_mean_ms).into_iter().map(|(x, y)| (x, 0.9 * y)).collect(),
    ));
    dir.write_chart("priority_cleaning.svg", &chart)?;

    let improvement = |write_percent: u32| -> Option<f64> {
        let find = |aware| points.iter().find(|p| p.write_percent == write_percent && p.priority_aware == aware);
        Some(100.0 * (1.0 - find(true)?.priority_mean_ms / find(false)?.priority_mean_ms))
    };
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            vec![
                p.write_percent.to_string(),
                if p.priority_aware { "aware" } else { "unaware" }.to_owned(),
                format!("{:.3}", p.priority_mean_ms),
                format!("{:.3}", p.priority_p99_ms),
                format!("{:.3}", p.normal_mean_ms),
                format!("{:.3}", p.normal_p99_ms),
                format!("{:.2}", p.gc_die_time_share),
            ]
        })
        .collect();
    let mut summary = Summary::new("Priority-aware cleaning");
    summary
        .paragraph(
            "Rajimwale, Prabhakaran, Davis, *Block management in solid-state devices*, slides 17-19: two \
             cleaning watermarks (low, critical); while priority requests are outstanding the device cleans \
             only below the critical one. Device: the `small` preset (4 dies, 4 KiB pages, 25 % spare), \
             preconditioned; 4 KiB random requests, Poisson arrivals; 5 % of arrivals start a burst of 4 \
             priority requests 100 us apart; low watermark 8 free blocks per plane, critical 2.",
        )
        .image("response time against write percentage", "priority_cleaning.svg")
        .comparisons(&[Comparison {
            quantity: "priority response time, aware vs unaware".to_owned(),
            paper: "about 10 % lower (slide 19)".to_owned(),
            measured: ["20", "50", "60"]
                .iter()
                .filter_map(|w| w.parse().ok().and_then(improvement).map(|i| format!("{i:.1} % at {w} % writes")))
                .collect::<Vec<_>>()
                .join(", "),
            note: "At 80 % writes deferring GC drives units to the critical watermark, and foreground GC \
                   then costs everyone: the slide's \"improvement at the cost of non-priority traffic\"."
                .to_owned(),
        }])
        .table(
            &[
                "write %",
                "cleaning",
                "priority mean ms",
                "priority p99 ms",
                "other mean ms",
                "other p99 ms",
                "GC share",
            ],
            &rows,
        )
        .code("sh", &format!("nandlab reproduce priority-cleaning --seed {seed} --out DIR"));
    eprintln!("priority-cleaning: as a priority job beside a bulk job…");
    let jobs = priority_jobs(seed, setup.low_watermark_blocks)?;
    dir.write_csv("priority_jobs.csv", &jobs)?;
    let job_series = |aware: bool, pick: fn(&JobPoint) -> f64| -> Vec<(f64, f64)> {
        jobs.iter().filter(|p| p.priority_aware == aware).map(|p| (f64::from(p.write_percent), pick(p))).collect()
    };
    let job_chart = Chart::new(
        "Priority job beside a bulk job (slide 19 as [[job]] tables)",
        Axis::new("write percentage").unit("%"),
        Axis::new("mean response time").unit("ms"),
    )
    .with(Series::new("priority job, unaware", Mark::LinePoints, job_series(false, |p| p.priority_job_mean_ms)))
    .with(Series::new("priority job, aware", Mark::LinePoints, job_series(true, |p| p.priority_job_mean_ms)))
    .with(Series::new("bulk job, unaware", Mark::DashedLine, job_series(false, |p| p.bulk_job_mean_ms)))
    .with(Series::new("bulk job, aware", Mark::DashedLine, job_series(true, |p| p.bulk_job_mean_ms)))
    .reference(Reference::points(
        "paper: priority, aware ≈ 10 % below unaware (slide 19)",
        job_series(false, |p| p.priority_job_mean_ms).into_iter().map(|(x, y)| (x, 0.9 * y)).collect(),
    ));
    dir.write_chart("priority_jobs.svg", &job_chart)?;
    let job_rows: Vec<Vec<String>> = jobs
        .iter()
        .map(|p| {
            vec![
                p.write_percent.to_string(),
                if p.priority_aware { "aware" } else { "unaware" }.to_owned(),
                format!("{:.3}", p.priority_job_mean_ms),
                format!("{:.3}", p.priority_job_p99_ms),
                format!("{:.3}", p.bulk_job_mean_ms),
                format!("{:.3}", p.bulk_job_p99_ms),
                format!("{:.2}", p.gc_die_time_share),
            ]
        })
        .collect();
    summary
        .heading("As a priority job beside a bulk job")
        .paragraph(&format!(
            "The same device and watermarks, the slide's set-up written as two `[[job]]` tables: a priority job \
             ({PRIORITY_JOB_IOPS} IOPS) and a bulk job ({BULK_JOB_IOPS} IOPS), both 4 KiB random requests over the \
             whole device with the point's write share and Poisson arrivals; per-job latency from `timed.jobs`."
        ))
        .image("priority and bulk job response time against write percentage", "priority_jobs.svg")
        .table(
            &["write %", "cleaning", "priority mean ms", "priority p99 ms", "bulk mean ms", "bulk p99 ms", "GC share"],
            &job_rows,
        );
    dir.write_summary(&summary)?;
    Ok(())
}

/// `nandlab reproduce stripe-merging`: throughput against write size with a
/// 1 MiB mapping unit (slide 13), and the normalized response time of
/// stripe-aligned merging against the probability of sequential access
/// (slide 15).
pub fn stripe_merging(out: &Path, seed: u64) -> Result<()> {
    const WRITE_KIB: [u32; 14] = [64, 128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 5120, 6144, 8192, 9216];
    const PROBABILITIES: [f64; 5] = [0.0, 0.2, 0.4, 0.6, 0.8];
    eprintln!("stripe-merging: seed {seed}: write sizes…");
    let sizes = write_size_throughput(&WRITE_KIB, seed)?;
    eprintln!("stripe-merging: merge buffer…");
    let merges = merge_response_time(&PROBABILITIES, 4000, seed)?;
    let dir = OutputDir::create(out)?;
    dir.write_csv("write_size_throughput.csv", &sizes)?;
    dir.write_csv("merge_response_time.csv", &merges)?;
    let throughput = Chart::new(
        "Sequential writes, 1 MiB mapping unit (slide 13)",
        Axis::new("write size").unit("MiB"),
        Axis::new("throughput").unit("MB/s"),
    )
    .with(Series::new(
        "no merging",
        Mark::LinePoints,
        sizes.iter().map(|p| (f64::from(p.write_kib) / 1024.0, p.throughput_mb_s)).collect(),
    ))
    .reference(Reference::vertical("paper: S2's 1 MB stripe; slow below it (slide 13)", 1.0));
    dir.write_chart("write_size_throughput.svg", &throughput)?;
    let normalized = Chart::new(
        "Stripe-aligned merging (slide 15)",
        Axis::new("probability of sequential access"),
        Axis::new("normalized response time").range(0.0, 1.2),
    )
    .with(Series::new(
        "merging / no merging",
        Mark::LinePoints,
        merges.iter().map(|p| (p.sequential_probability, p.normalized_response_time)).collect(),
    ));
    dir.write_chart("merge_response_time.svg", &normalized)?;

    let at = |kib: u32| sizes.iter().find(|p| p.write_kib == kib).map_or(0.0, |p| p.throughput_mb_s);
    let size_rows: Vec<Vec<String>> = sizes
        .iter()
        .map(|p| vec![p.write_kib.to_string(), format!("{:.2}", p.throughput_mb_s), p.rmw_pages_rewritten.to_string()])
        .collect();
    let merge_rows: Vec<Vec<String>> = merges
        .iter()
        .map(|p| {
            vec![
                format!("{:.1}", p.sequential_probability),
                format!("{:.2}", p.eager_mean_ms),
                format!("{:.2}", p.merge_mean_ms),
                format!("{:.3}", p.normalized_response_time),
                p.eager_rmw_pages.to_string(),
                p.merge_rmw_pages.to_string(),
            ]
        })
        .collect();
    let last = merges.last().map_or(0.0, |p| p.normalized_response_time);
    let mut summary = Summary::new("Stripe-aligned write merging");
    summary
        .paragraph(&format!(
            "Rajimwale, Prabhakaran, Davis, *Block management in solid-state devices*, slides 12-15. The \
             mapping unit is a stripe of {STRIPE_PAGES} pages (1 MiB); a write that covers a stripe only in \
             part reads and rewrites the rest of it. Slide 13: continuous sequential writes of one size at \
             queue depth 1, no buffer, on the `small` preset filled in order. Slide 15: 128 KiB writes at queue depth 4 \
             through a 4 MiB buffer, each continuing the previous one with the given probability, on the \
             `small` geometry with 1024 blocks per plane; response time with stripe merging over eager \
             flushing."
        ))
        .image("throughput against write size", "write_size_throughput.svg")
        .image("normalized response time against probability of sequential access", "merge_response_time.svg")
        .comparisons(&[
            Comparison {
                quantity: "throughput below vs at the stripe size".to_owned(),
                paper: "low until the write size reaches the 1 MB stripe (slide 13, S2)".to_owned(),
                measured: format!("{:.1} MB/s at 256 KiB, {:.1} MB/s at 1 MiB, {:.1} MB/s at 1.5 MiB", at(256), at(1024), at(1536)),
                note: "Unaligned sizes (1.5 MiB) pay a read-modify-write at each stripe boundary.".to_owned(),
            },
            Comparison {
                quantity: "normalized response time at sequential probability 0.8".to_owned(),
                paper: "falls as sequential access grows (slide 15 synthetic trace)".to_owned(),
                measured: format!("{last:.2}"),
                note: "About 1 for random access: merging has nothing to merge.".to_owned(),
            },
        ])
        .table(&["write KiB", "MB/s", "RMW pages"], &size_rows)
        .table(&["P(sequential)", "eager ms", "merging ms", "normalized", "eager RMW pages", "merging RMW pages"], &merge_rows)
        .code("sh", &format!("nandlab reproduce stripe-merging --seed {seed} --out DIR"));
    dir.write_summary(&summary)?;
    Ok(())
}
