//! The simulation experiments of Telomere (Missimer, Athanassoulis and West,
//! ACM TECS 2022) for `nandlab reproduce`: Figure 10 (RBER CDF under three
//! wear-leveling policies) and Table 3 / Figures 13-14 (the six-task set on
//! the Cosmos board). Admission decisions come from `nandlab-admission`, the
//! flash simulation from `nandlab-core` (Telomere, WAO-GC and page-mapped
//! FTLs, periodic workload, RBER model); everything is written through
//! `nandlab-report`. This file owns the conversion between the two crates'
//! task and partition types and the experiment set-ups.

use crate::error::{Context as _, Error, Result};
use crate::experiments::periodic_run::{
    self, admission_task, mapped_pages, ns, pagemap_layer, periodic_task, region_pages, telomere_layer, wao_gc_layer,
    PeriodicRun, ThroughputBin,
};
use nandlab_admission::policy::{admit_in_order, check, AdmissionContext, AdmissionReport, Policy, StorageCheck};
use nandlab_admission::storage::{Placement, StoragePlan};
use nandlab_admission::{DeviceParams, Task, TaskSet};
use nandlab_core::config::Config;
use nandlab_core::device::wear::{WearDistribution, WearLeveling, WearModel, DEAD_SHARE_END};
use nandlab_core::ftl::{FreeBlockOrder, FtlConfig};
use nandlab_core::metrics::Counters;
use nandlab_core::sim::Layer;
use nandlab_core::units::SimNs;
use nandlab_core::workload::periodic::{random_task_set, PeriodicTask, TaskSetSpec};
use nandlab_report::{Axis, Chart, Comparison, Mark, OutputDir, Reference, Series, Summary, Verdict};
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

/// Table 3 of the paper, the task file nandlab-admission ships.
const TABLE_3: &str = include_str!("../../../../crates/admission/tasksets/table3.toml");
const TABLE_3_PATH: &str = "crates/admission/tasksets/table3.toml";

/// Over-provisioning α of Figure 10 ("λ = 0.10" in its caption, which only
/// makes sense as α).
const OVER_PROVISIONING: f64 = 0.10;

// ---------------------------------------------------------------------------
// Table 3 / Figures 13-14
// ---------------------------------------------------------------------------

/// The Cosmos board as Table 3 ran it: the `cosmos` preset (4 channels × 8
/// ways, 21 blocks of 256 8-KB pages per chip), every write striped over all
/// chips (g = S_chips, as in Section 6.1.2). The paper states neither g nor α
/// for this run.
fn table_3_device() -> DeviceParams {
    DeviceParams::cosmos()
}

/// α of the paper's simulations (Section 6.1, Figures 9-10), used for the
/// board too: picking the α at which the admissions come out as on the board
/// (0.5 did) would fit the parameter to the answer. The summary's scan shows
/// what other values give.
const TABLE_3_OVER_PROVISIONING: f64 = OVER_PROVISIONING;

/// Name of the sensitivity run on half the chips.
const PAGEMAP_HALF: &str = "Pagemap, half the chips";

fn half_board(device: &DeviceParams) -> DeviceParams {
    DeviceParams { name: format!("{}-half", device.name), channels: (device.channels / 2).max(1), ..device.clone() }
}

const TABLE_3_RUN: Duration = Duration::from_secs(200);
/// "read requests arrive at around t = 97" (Figure 14).
const TABLE_3_READS_FROM: Duration = Duration::from_secs(97);

/// One method of Table 3 and what it ran.
struct MethodRun {
    name: &'static str,
    admitted: Vec<String>,
    rejected: Vec<String>,
    report: PeriodicRun,
}

#[derive(Serialize)]
struct ThroughputRow {
    method: &'static str,
    t_s: f64,
    written_pages_per_s: f64,
    read_pages_per_s: f64,
}

#[derive(Serialize)]
struct MethodRow {
    method: &'static str,
    admitted: String,
    rejected: String,
    admitted_write_pages_per_s: f64,
    jobs: u64,
    deadline_misses: u64,
    worst_lateness_ms: f64,
    gc_page_copies: u64,
    erases: u64,
    host_pages_written: u64,
}

fn names(tasks: &[Task], indices: impl Iterator<Item = usize>) -> Vec<String> {
    indices.map(|index| tasks[index].name.clone()).collect()
}

/// Admits Table 3 under `policy` in `open()` order; returns the report and
/// the admitted tasks in core form.
fn admit(policy: &Policy, context: &AdmissionContext, tasks: &[Task]) -> Result<(AdmissionReport, Vec<PeriodicTask>)> {
    let report = admit_in_order(policy, context, tasks);
    let admitted = report.admitted.iter().map(|&index| periodic_task(&tasks[index])).collect::<Result<_>>()?;
    Ok((report, admitted))
}

/// Runs the admitted tasks of one method on `layer` in the timed model.
fn timed(
    name: &'static str,
    tasks: &[Task],
    admitted_indices: &[usize],
    admitted: Vec<PeriodicTask>,
    layer: (Config, Layer),
) -> Result<MethodRun> {
    eprintln!("telomere-table3: {name}, {} of {} tasks…", admitted.len(), tasks.len());
    let task_streams = matches!(layer.1, Layer::Telomere(_));
    let report =
        periodic_run::timed_run(&layer.0, layer.1, admitted, ns(TABLE_3_READS_FROM), ns(TABLE_3_RUN), task_streams)
            .with_context(|| format!("{name}: the simulated FTL failed"))?;
    let rejected = (0..tasks.len()).filter(|index| !admitted_indices.contains(index));
    Ok(MethodRun {
        name,
        admitted: names(tasks, admitted_indices.iter().copied()),
        rejected: names(tasks, rejected),
        report,
    })
}

/// The four methods of Figures 13-14 on the Table 3 task set.
fn table_3_runs(device: &DeviceParams, granularity: u64) -> Result<Vec<MethodRun>> {
    let tasks = TaskSet::parse(TABLE_3, Path::new(TABLE_3_PATH))?.tasks;
    let utilization = AdmissionContext::utilization_for_over_provisioning(TABLE_3_OVER_PROVISIONING);
    let context = AdmissionContext::new(device.clone(), granularity, utilization)?;
    let mut runs = Vec::new();
    for (name, placement) in [("Telomere SiP", Placement::Sip), ("Telomere SharP", Placement::Sharp)] {
        let (report, admitted) = admit(&Policy::Telomere { placement }, &context, &tasks)?;
        let StorageCheck::Blocks(plan) = &report.verdict.storage else {
            return Err(Error::Failed("Telomere admission returned no block plan".to_owned()));
        };
        let layer = telomere_layer(device, &admitted, plan, WearLeveling::Fifo, None)?;
        runs.push(timed(name, &tasks, &report.admitted, admitted, layer)?);
    }
    let (report, admitted) = admit(&Policy::WaoGc, &context, &tasks)?;
    runs.push(timed("WAO-GC", &tasks, &report.admitted, admitted, wao_gc_layer(device, utilization)?)?);
    // Pagemap has no admission control: it runs every task.
    let all: Vec<PeriodicTask> = tasks.iter().map(periodic_task).collect::<Result<_>>()?;
    let every: Vec<usize> = (0..tasks.len()).collect();
    let pagemap = pagemap_layer(device, mapped_pages(device, utilization), FtlConfig::default(), None)?;
    runs.push(timed("Pagemap", &tasks, &every, all.clone(), pagemap)?);
    // The same page-mapped FTL on half the chips (at α = 0.10, so the tasks
    // fit its logical space), where live data of the long lifetimes still sit
    // in the oldest blocks when the flash fills up.
    let half = half_board(device);
    let half_utilization = AdmissionContext::utilization_for_over_provisioning(OVER_PROVISIONING);
    let pagemap = pagemap_layer(&half, mapped_pages(&half, half_utilization), FtlConfig::default(), None)?;
    runs.push(timed(PAGEMAP_HALF, &tasks, &every, all, pagemap)?);
    Ok(runs)
}

fn admitted_rate(run: &MethodRun, tasks: &[Task]) -> f64 {
    tasks.iter().filter(|task| run.admitted.contains(&task.name)).map(Task::write_pages_per_second).sum()
}

/// `nandlab reproduce telomere-table3`.
pub fn table_3(out: &Path) -> Result<()> {
    let device = table_3_device();
    let tasks = TaskSet::parse(TABLE_3, Path::new(TABLE_3_PATH))?.tasks;
    let runs = table_3_runs(&device, device.chips())?;
    let dir = OutputDir::create(out)?;
    let rows: Vec<ThroughputRow> = runs
        .iter()
        .flat_map(|run| {
            run.report.bins.iter().map(|bin| ThroughputRow {
                method: run.name,
                t_s: bin.start_s,
                written_pages_per_s: bin.written_pages_per_s,
                read_pages_per_s: bin.read_pages_per_s,
            })
        })
        .collect();
    dir.write_csv("table3_throughput.csv", &rows)?;
    let methods: Vec<MethodRow> = runs
        .iter()
        .map(|run| MethodRow {
            method: run.name,
            admitted: run.admitted.join(" "),
            rejected: run.rejected.join(" "),
            admitted_write_pages_per_s: admitted_rate(run, &tasks),
            jobs: run.report.deadlines.requests,
            deadline_misses: run.report.deadlines.misses,
            worst_lateness_ms: run.report.deadlines.worst_lateness_ms,
            gc_page_copies: run.report.counters.gc_page_copies,
            erases: run.report.counters.erases,
            host_pages_written: run.report.counters.host_pages_written,
        })
        .collect();
    dir.write_csv("table3_methods.csv", &methods)?;
    let marks = [Mark::Line, Mark::DashedLine, Mark::LinePoints, Mark::Line, Mark::DashedLine];
    for (file, title, pick) in [
        (
            "fig13_write_throughput.svg",
            "Figure 13: write throughput, Table 3 task set",
            (|row: &ThroughputRow| row.written_pages_per_s) as fn(&ThroughputRow) -> f64,
        ),
        ("fig14_read_throughput.svg", "Figure 14: read throughput, Table 3 task set", |row: &ThroughputRow| {
            row.read_pages_per_s
        }),
    ] {
        let mut chart = Chart::new(title, Axis::new("time").unit("s"), Axis::new("throughput").unit("pages/s"));
        for (run, mark) in runs.iter().zip(marks) {
            let points = rows.iter().filter(|row| row.method == run.name).map(|row| (row.t_s, pick(row))).collect();
            chart.push(Series::new(run.name, mark, points));
        }
        if file.starts_with("fig13") {
            for (methods, pages_per_s) in PAPER_WRITE_THROUGHPUT {
                chart.push_reference(Reference::horizontal(
                    &format!("paper: {methods}, {pages_per_s} pages/s"),
                    pages_per_s,
                ));
            }
        }
        dir.write_chart(file, &chart)?;
    }
    let scan = admission_scan(&device, &tasks)?;
    dir.write_summary(&table_3_summary(&device, &tasks, &runs, &methods, &scan))?;
    Ok(())
}

/// Section 6.3's write throughput of the Table 3 task set (Figure 13), in pages/s.
const PAPER_WRITE_THROUGHPUT: [(&str, f64); 3] =
    [("Telomere SharP and Pagemap", 1800.0), ("Telomere SiP", 1680.0), ("WAO-GC", 1000.0)];

/// Which tasks each policy rejects on `device` for granularity g and
/// over-provisioning α, without running them.
fn rejections(device: &DeviceParams, tasks: &[Task], granularity: u64, over_provisioning: f64) -> Result<Vec<String>> {
    let utilization = AdmissionContext::utilization_for_over_provisioning(over_provisioning);
    let context = AdmissionContext::new(device.clone(), granularity, utilization)?;
    let policies = [
        Policy::Telomere { placement: Placement::Sip },
        Policy::Telomere { placement: Placement::Sharp },
        Policy::WaoGc,
    ];
    Ok(policies
        .iter()
        .map(|policy| {
            let report = admit_in_order(policy, &context, tasks);
            let rejected = names(tasks, (0..tasks.len()).filter(|index| !report.admitted.contains(index)));
            if rejected.is_empty() {
                "none".to_owned()
            } else {
                rejected.join(" ")
            }
        })
        .collect())
}

/// The admission scan behind the choice of g and α for Table 3.
fn admission_scan(device: &DeviceParams, tasks: &[Task]) -> Result<Vec<Vec<String>>> {
    let mut rows = Vec::new();
    for granularity in [1, 8, device.chips()] {
        for over_provisioning in [0.1, 0.3, 0.5] {
            let mut row = vec![granularity.to_string(), over_provisioning.to_string()];
            row.extend(rejections(device, tasks, granularity, over_provisioning)?);
            rows.push(row);
        }
    }
    Ok(rows)
}

fn mean_between(run: &MethodRun, from_s: f64, to_s: f64, pick: fn(&ThroughputBin) -> f64) -> f64 {
    let values: Vec<f64> =
        run.report.bins.iter().filter(|bin| bin.start_s >= from_s && bin.start_s < to_s).map(pick).collect();
    #[allow(clippy::cast_precision_loss)]
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    mean
}

/// The tasks Table 3 says a method rejects: "none…" or a list "τ3, τ4".
fn expected_rejections(paper: &str) -> Vec<String> {
    if paper.starts_with("none") {
        Vec::new()
    } else {
        paper.split(", ").map(str::to_owned).collect()
    }
}

/// A rate as the paper prints it, "1,800".
fn paper_rate(paper: &str) -> f64 {
    paper.replace(',', "").parse().unwrap_or(f64::NAN)
}

fn table_3_summary(
    device: &DeviceParams,
    tasks: &[Task],
    runs: &[MethodRun],
    methods: &[MethodRow],
    scan: &[Vec<String>],
) -> Summary {
    let find = |name: &str| runs.iter().find(|run| run.name == name);
    let steady = |name: &str, from, to, pick| find(name).map_or(f64::NAN, |run| mean_between(run, from, to, pick));
    let write = |bin: &ThroughputBin| bin.written_pages_per_s;
    let comparison = |name: &str, paper: &str, rejected_paper: &str| {
        let run = find(name);
        Comparison {
            quantity: format!("{name}: rejected tasks, write throughput"),
            paper: format!("{rejected_paper}; {paper} pages/s"),
            measured: run.map_or_else(String::new, |run| {
                format!(
                    "{}; {:.0} pages/s (admitted), {:.0} pages/s written at t = 10-90 s; {:.0} pages/s written and \
                     {:.0} read at t = 98-200 s",
                    if run.rejected.is_empty() { "none".to_owned() } else { run.rejected.join(", ") },
                    admitted_rate(run, tasks),
                    steady(name, 10.0, 90.0, write),
                    steady(name, 98.0, 200.0, write),
                    steady(name, 98.0, 200.0, |bin| bin.read_pages_per_s)
                )
            }),
            verdict: run.map_or(Verdict::NotComparable, |run| {
                Verdict::worst([
                    Verdict::holds(run.rejected == expected_rejections(rejected_paper)),
                    Verdict::near(paper_rate(paper), Some(admitted_rate(run, tasks)), 0.05 * paper_rate(paper)),
                ])
            }),
            note: String::new(),
        }
    };
    let mut rows = vec![
        comparison("Telomere SharP", "1,800", "none"),
        comparison("Telomere SiP", "1,680", "τ5"),
        comparison("WAO-GC", "1,000", "τ3, τ4, τ5"),
        comparison("Pagemap", "1,800", "none (no admission)"),
    ];
    if let Some(row) = rows.get_mut(1) {
        row.note = "The paper's 1,680 is the rate without τ5: 16/80 + 3 × 16/40 + 11/40 pages per ms = 1,675 \
                    pages/s, rounded. At α = 0.10 nandlab's SiP test finds room for τ5 on 32 × 21 blocks; the scan \
                    below shows where it does not."
            .to_owned();
    }
    if let Some(row) = rows.get_mut(2) {
        row.note = "Eq. (24) with λ ≤ 0.74 leaves room for all six tasks on 32 × 21 blocks. Over 8, 16 and 32 \
                    chips, WAO-GC rejects exactly τ3-τ5 only with 8 chips, where SiP and SharP reject τ4 as well \
                    (docs/telomere-simulation.md); the paper does not state the board's chip count."
            .to_owned();
    }
    let all: Vec<PeriodicTask> = tasks.iter().filter_map(|task| periodic_task(task).ok()).collect();
    #[allow(clippy::cast_precision_loss)]
    let valid_share = region_pages(&all) as f64 / device.pages() as f64;
    let after_reads = |name: &str| {
        let row = methods.iter().find(|row| row.method == name);
        format!(
            "writes {:.0} pages/s before, {:.0} after (min {:.0}); {} deadline misses, worst {:.1} ms late, {} GC page copies",
            steady(name, 10.0, 97.0, write),
            steady(name, 98.0, 200.0, write),
            find(name).map_or(f64::NAN, |run| run.report.bins.iter().skip(98).map(write).fold(f64::INFINITY, f64::min)),
            row.map_or(0, |row| row.deadline_misses),
            row.map_or(0.0, |row| row.worst_lateness_ms),
            row.map_or(0, |row| row.gc_page_copies)
        )
    };
    rows.push(Comparison {
        quantity: "Pagemap once reads start (t ≥ 97 s)".to_owned(),
        paper: "write and read throughput drop and fluctuate".to_owned(),
        measured: after_reads("Pagemap"),
        verdict: Verdict::holds(steady("Pagemap", 98.0, 200.0, write) < 0.9 * steady("Pagemap", 10.0, 97.0, write)),
        note: format!(
            "Does not reproduce. The tasks keep {:.0} % of the flash valid and each overwrites its own ring when \
             it expires, so the copies greedy GC makes (chips mix the tasks' pages) fit in the chips' slack: the \
             timing engine cleans in the background between the critical and the low watermark while no \
             operation with a deadline waits. The board's drop at t ≈ 97 s coincides with its flash filling up \
             (1,800 pages/s × 97 s ≈ the 172,032 pages of 32 × 21 blocks); what made its Pagemap copy more (the \
             tasks' file layout, foreground-only cleaning) is not described.",
            100.0 * valid_share
        ),
    });
    rows.push(Comparison {
        quantity: format!("{PAGEMAP_HALF} (sensitivity)"),
        paper: "-".to_owned(),
        measured: after_reads(PAGEMAP_HALF),
        verdict: Verdict::NotComparable,
        note: "16 chips, α = 0.10: with half the flash the oldest blocks still hold live data of τ3-τ5 when it \
               fills, and GC copies far more; whether jobs miss deadlines depends on whether the copies fit in \
               the chips' slack (the deadline misses and the per-second minimum are measured above)."
            .to_owned(),
    });
    let method_rows: Vec<Vec<String>> = methods
        .iter()
        .map(|row| {
            vec![
                row.method.to_owned(),
                row.rejected.clone(),
                format!("{:.0}", row.admitted_write_pages_per_s),
                row.jobs.to_string(),
                row.deadline_misses.to_string(),
                format!("{:.1}", row.worst_lateness_ms),
                row.gc_page_copies.to_string(),
                row.erases.to_string(),
            ]
        })
        .collect();
    let mut summary = Summary::new("Telomere Table 3 / Figures 13-14: the six-task set on the Cosmos board");
    summary
        .paragraph(&format!(
            "Telomere Section 6.3. Device `{}`: {} channels × {} chips, {} blocks of {} pages ({} KB) per chip; \
             read {:?}, program {:?}, erase {:?}; α = {TABLE_3_OVER_PROVISIONING}, g = {} (all chips). Each method's \
             admission control (nandlab-admission, tasks in `open()` order) decides which tasks run; the \
             admitted tasks then run for {} s through the shared driver and timing engine, reads from t = {} s. \
             Every flash operation (GC and erases included) queues at its chip, and an idle chip runs the queued \
             operation with the earliest deadline, without preemption (`timing.die_queue = \"edf\"`), as the \
             board's FTL does.",
            device.name,
            device.channels,
            device.chips_per_channel,
            device.blocks_per_chip,
            device.pages_per_block,
            device.page_size_bytes / 1024,
            device.read,
            device.write,
            device.erase,
            device.chips(),
            TABLE_3_RUN.as_secs(),
            TABLE_3_READS_FROM.as_secs(),
        ))
        .comparisons(&rows)
        .image("write throughput over time", "fig13_write_throughput.svg")
        .image("read throughput over time", "fig14_read_throughput.svg")
        .table(
            &[
                "method",
                "rejected",
                "admitted writes pages/s",
                "jobs",
                "deadline misses",
                "worst lateness ms",
                "GC copies",
                "erases",
            ],
            &method_rows,
        )
        .paragraph(
            "Tasks each admission policy rejects on this device by granularity g and over-provisioning α (no \
             run); the paper gives neither for the board, so the run uses g = S_chips and the smallest α at \
             which SiP rejects only τ5 and SharP nothing, as on the board:",
        )
        .table(&["g", "α", "Telomere SiP rejects", "Telomere SharP rejects", "WAO-GC rejects"], scan)
        .code("sh", "nandlab reproduce telomere-table3 --out DIR");
    summary
}

// ---------------------------------------------------------------------------
// Figure 10
// ---------------------------------------------------------------------------

/// The wear experiment's device: small enough that every block wears out in
/// seconds of simulation. The paper does not describe its event-driven
/// simulator's device; the RBER CDF depends on wear normalized to the rated
/// endurance, which we lower to keep runs short.
fn wear_device(paper_scale: bool) -> DeviceParams {
    DeviceParams {
        name: "wear".to_owned(),
        channels: 8,
        chips_per_channel: 1,
        blocks_per_chip: if paper_scale { 128 } else { 64 },
        pages_per_block: 64,
        page_size_bytes: 4096,
        ..DeviceParams::telomere_1tb()
    }
}

/// Rated endurance of the wear device, in P/E cycles.
fn wear_endurance(paper_scale: bool) -> u32 {
    if paper_scale {
        3000
    } else {
        300
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WearFtl {
    Telomere(WearLeveling),
    Pagemap(FreeBlockOrder),
}

const WEAR_FTLS: [WearFtl; 5] = [
    WearFtl::Telomere(WearLeveling::HealthBinning),
    WearFtl::Telomere(WearLeveling::RberBalancing),
    WearFtl::Telomere(WearLeveling::Fifo),
    WearFtl::Pagemap(FreeBlockOrder::LowestRber),
    WearFtl::Pagemap(FreeBlockOrder::Fifo),
];

impl WearFtl {
    fn name(self) -> &'static str {
        match self {
            Self::Telomere(WearLeveling::HealthBinning) => "Telomere HB",
            Self::Telomere(WearLeveling::RberBalancing) => "Telomere RBER",
            Self::Telomere(WearLeveling::Fifo) => "Telomere noWL",
            Self::Pagemap(FreeBlockOrder::LowestRber) => "Pagemap RBER",
            Self::Pagemap(_) => "Pagemap noWL",
        }
    }
}

#[derive(Serialize)]
struct WearRow {
    method: &'static str,
    host_pages_written: u64,
    erases: u64,
    gc_page_copies: u64,
    dead_blocks: usize,
    rber_p10: f64,
    rber_median: f64,
    rber_p90: f64,
}

#[derive(Serialize)]
struct RberRow {
    method: &'static str,
    block: usize,
    erases: u32,
    rber: f64,
}

/// Task sets drawn for one seed before giving up: a draw whose shape SharP
/// cannot admit at any scale is replaced by the next one.
const TASK_SET_DRAWS: u64 = 16;

/// A task set the SharP test admits on `device` at device utilization λ: 10
/// random tasks (relative standard deviation 0.70, Section 6.2) whose storage
/// is scaled down from λ·S_pages until SharP admits them. When no scale of
/// the first draw is admitted (a task too fast for the chips at any size),
/// the next draw of the same seed is taken; the draw used is returned.
fn admitted_task_set(
    device: &DeviceParams,
    granularity: u64,
    utilization: f64,
    seed: u64,
) -> Result<(Vec<PeriodicTask>, StoragePlan, u64)> {
    let context = AdmissionContext::new(device.clone(), granularity, utilization)?;
    for draw in 0..TASK_SET_DRAWS {
        let draw_seed = seed.wrapping_add(draw.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut storage_pages = mapped_pages(device, utilization);
        while storage_pages > device.pages_per_block {
            let spec = TaskSetSpec {
                tasks: 10,
                rsd: 0.70,
                storage_pages,
                write_period: SimNs(10_000_000),
                mean_write_pages: 8.0,
            };
            let tasks = random_task_set(&spec, draw_seed)?;
            let admission: Vec<Task> =
                tasks.iter().enumerate().map(|(index, task)| admission_task(index, task)).collect();
            let verdict = check(&Policy::Telomere { placement: Placement::Sharp }, &context, &admission);
            if let (true, StorageCheck::Blocks(plan)) = (verdict.admitted(), verdict.storage) {
                return Ok((tasks, plan, draw));
            }
            storage_pages = storage_pages * 95 / 100;
        }
    }
    Err(Error::Failed(format!("no task set of {TASK_SET_DRAWS} draws with seed {seed} fits the wear device")))
}

/// Runs jobs until [`DEAD_SHARE_END`] of the blocks reached RBER 1e-2
/// (Section 6.2); returns the final erase counts.
fn run_until_worn(
    name: &str,
    tasks: Vec<PeriodicTask>,
    (config, layer): (Config, Layer),
    model: &WearModel,
) -> Result<(Vec<u32>, Counters)> {
    let blocks = model.blocks();
    let deaths: Vec<u32> = (0..blocks).map(|block| model.cycles_to_death(block_id(block))).collect();
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let dead_end = ((blocks as f64 * DEAD_SHARE_END).ceil() as usize).max(1);
    let mut checked_erases = 0;
    let mut reported_erases = 0;
    let total_life: u64 = deaths.iter().map(|&death| u64::from(death)).sum();
    let task_streams = matches!(layer, Layer::Telomere(_));
    let mut worn = |counters: &Counters, erase_counts: &[u32]| {
        // Checking every block costs O(blocks); only do it every few erases.
        if counters.erases < checked_erases + 8 {
            return false;
        }
        checked_erases = counters.erases;
        let dead = erase_counts.iter().zip(&deaths).filter(|(count, death)| count >= death).count();
        if counters.erases >= reported_erases + total_life / 10 {
            reported_erases = counters.erases;
            eprintln!("telomere-fig10: {name}: {} erases, {dead} of {blocks} blocks dead", counters.erases);
        }
        dead >= dead_end
    };
    let run = periodic_run::counted(&config, layer, tasks, SimNs(u64::MAX), task_streams, &mut worn)
        .with_context(|| format!("{name}: the simulated FTL failed"))?;
    Ok((run.erase_counts, run.counters))
}

fn block_id(index: usize) -> nandlab_core::units::BlockId {
    nandlab_core::units::BlockId(u32::try_from(index).unwrap_or(u32::MAX))
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let index = ((sorted.len().saturating_sub(1)) as f64 * q).round() as usize;
    sorted.get(index).copied().unwrap_or(f64::NAN)
}

/// One Figure 10 configuration: the RBER of every block at the end.
fn wear_run(
    ftl_kind: WearFtl,
    device: &DeviceParams,
    tasks: &[PeriodicTask],
    plan: &StoragePlan,
    model: &WearModel,
    utilization: f64,
) -> Result<(Vec<u32>, Counters)> {
    let name = ftl_kind.name();
    match ftl_kind {
        WearFtl::Telomere(policy) => {
            let layer = telomere_layer(device, tasks, plan, policy, Some(model))?;
            run_until_worn(name, tasks.to_vec(), layer, model)
        }
        WearFtl::Pagemap(order) => {
            let ftl_config = FtlConfig { free_block_order: order, ..FtlConfig::default() };
            let layer = pagemap_layer(device, mapped_pages(device, utilization), ftl_config, Some(model))?;
            run_until_worn(name, tasks.to_vec(), layer, model)
        }
    }
}

/// The `--set` keys of `telomere-fig10`: the eq. (27) parameter distribution.
pub const WEAR_KEYS: [&str; 4] = ["wear.x_mean", "wear.x_std_dev", "wear.y_mean", "wear.y_std_dev"];

/// The default [`WearDistribution`] with `KEY=VALUE` overrides of [`WEAR_KEYS`].
fn wear_distribution(set: &[String]) -> Result<WearDistribution> {
    let mut distribution = WearDistribution::default();
    for assignment in set {
        let (key, value) =
            assignment.split_once('=').with_context(|| format!("--set {assignment:?}: expected KEY=VALUE"))?;
        let value: f64 = value.trim().parse().with_context(|| format!("--set {key}: {value:?} is not a number"))?;
        let field = match key.trim() {
            "wear.x_mean" => &mut distribution.x_mean,
            "wear.x_std_dev" => &mut distribution.x_std_dev,
            "wear.y_mean" => &mut distribution.y_mean,
            "wear.y_std_dev" => &mut distribution.y_std_dev,
            other => {
                return Err(Error::Invalid(format!(
                    "--set {other}: unknown key (expected one of {})",
                    WEAR_KEYS.join(", ")
                )))
            }
        };
        *field = value;
    }
    Ok(distribution)
}

/// `nandlab reproduce telomere-fig10`; with `samples`, also Section 6.2's
/// sweep of `samples` task sets per λ from 0.70 to 0.95; `--set wear.*`
/// changes the distribution of the per-block eq. (27) parameters.
pub fn figure_10(args: &crate::registry::ExperimentArgs) -> Result<()> {
    let (out, seed, paper_scale, samples) = (args.out.as_path(), args.seed, args.paper_scale, args.samples);
    let device = wear_device(paper_scale);
    let endurance = wear_endurance(paper_scale);
    let utilization = AdmissionContext::utilization_for_over_provisioning(OVER_PROVISIONING);
    let (tasks, plan, draw) = admitted_task_set(&device, device.chips(), utilization, seed)?;
    let blocks = u32::try_from(device.blocks())?;
    let distribution = wear_distribution(&args.set)?;
    let model = WearModel::sample(blocks, endurance, &distribution, seed)?;
    eprintln!(
        "telomere-fig10: seed {seed} (task set draw {draw}), {blocks} blocks rated {endurance} P/E cycles, {} tasks in \
         {} SharP partitions",
        tasks.len(),
        plan.partitions.len()
    );
    let dir = OutputDir::create(out)?;
    let mut summary_rows = Vec::new();
    let mut rber_rows = Vec::new();
    let mut chart = Chart::new(
        "Figure 10: CDF of block RBER at the end of the run (α = 0.10)",
        Axis::new("RBER").log(),
        Axis::new("fraction of blocks"),
    );
    let mut failures = Vec::new();
    for ftl_kind in WEAR_FTLS {
        let started = std::time::Instant::now();
        let (counts, counters) = match wear_run(ftl_kind, &device, &tasks, &plan, &model, utilization) {
            Ok(run) => run,
            Err(error) => {
                // A baseline that cannot run the set is a result, not the end of the experiment.
                eprintln!("telomere-fig10: {} could not run the task set: {error:?}", ftl_kind.name());
                failures.push(format!("{}: {error}", ftl_kind.name()));
                continue;
            }
        };
        let seconds = started.elapsed().as_secs_f64();
        #[allow(clippy::cast_precision_loss)]
        let flash_pages = counters.flash_pages_programmed as f64;
        eprintln!(
            "telomere-fig10: {}: {} host pages, {} programs in {seconds:.1} s ({:.1} M programs/s)",
            ftl_kind.name(),
            counters.host_pages_written,
            counters.flash_pages_programmed,
            flash_pages / seconds.max(1e-9) / 1e6
        );
        let rbers = model.rbers(&counts);
        let mut sorted = rbers.clone();
        sorted.sort_by(f64::total_cmp);
        summary_rows.push(WearRow {
            method: ftl_kind.name(),
            host_pages_written: counters.host_pages_written,
            erases: counters.erases,
            gc_page_copies: counters.gc_page_copies,
            dead_blocks: model.dead_blocks(&counts),
            rber_p10: quantile(&sorted, 0.10),
            rber_median: quantile(&sorted, 0.50),
            rber_p90: quantile(&sorted, 0.90),
        });
        rber_rows.extend(counts.iter().zip(&rbers).enumerate().map(|(block, (&erases, &rber))| RberRow {
            method: ftl_kind.name(),
            block,
            erases,
            rber,
        }));
        let positive: Vec<f64> = rbers.into_iter().filter(|&rber| rber > 0.0).collect();
        chart.push(Series::cdf(ftl_kind.name(), &positive));
    }
    dir.write_csv("fig10_rber.csv", &rber_rows)?;
    dir.write_csv("fig10_summary.csv", &summary_rows)?;
    dir.write_chart("fig10_rber_cdf.svg", &chart)?;
    let mut summary = figure_10_summary(&device, endurance, seed, &distribution, &plan, &summary_rows, paper_scale);
    if draw > 0 {
        summary.paragraph(&format!(
            "SharP admitted no scale of the first {draw} task set draw(s) of seed {seed}; draw {draw} was used."
        ));
    }
    if !failures.is_empty() {
        summary.paragraph(&format!("Methods that could not run this task set: {}.", failures.join("; ")));
    }
    if let Some(samples) = samples {
        wear_sweep(&dir, &mut summary, &device, endurance, &distribution, seed, samples)?;
    }
    dir.write_summary(&summary)?;
    Ok(())
}

/// Device utilizations of Section 6.2's sweep: 0.70 to 0.95 by 0.05.
const SWEEP_UTILIZATIONS: [f64; 6] = [0.70, 0.75, 0.80, 0.85, 0.90, 0.95];

#[derive(Serialize)]
struct SweepRow {
    utilization: f64,
    seed: u64,
    method: &'static str,
    host_pages_written: u64,
    rber_spread: f64,
}

/// Section 6.2: `samples` task sets for each λ, every FTL and wear-leveling
/// policy until 2 % of the blocks die; host pages written by then and the
/// spread of RBER (p90/p10) per λ.
fn wear_sweep(
    dir: &OutputDir,
    summary: &mut Summary,
    device: &DeviceParams,
    endurance: u32,
    distribution: &WearDistribution,
    seed: u64,
    samples: usize,
) -> Result<()> {
    let mut rows = Vec::new();
    let mut failed: Vec<(f64, &'static str)> = Vec::new();
    for utilization in SWEEP_UTILIZATIONS {
        for sample in 0..samples {
            let set_seed = seed + u64::try_from(sample)?;
            eprintln!("telomere-fig10: sweep λ = {utilization:.2}, task set seed {set_seed}");
            let (tasks, plan, _) = admitted_task_set(device, device.chips(), utilization, set_seed)?;
            let model = WearModel::sample(u32::try_from(device.blocks())?, endurance, distribution, set_seed)?;
            for ftl_kind in WEAR_FTLS {
                let Ok((counts, counters)) = wear_run(ftl_kind, device, &tasks, &plan, &model, utilization)
                    .inspect_err(|error| eprintln!("telomere-fig10: {} could not run: {error:#}", ftl_kind.name()))
                else {
                    failed.push((utilization, ftl_kind.name()));
                    continue;
                };
                let mut rbers = model.rbers(&counts);
                rbers.sort_by(f64::total_cmp);
                rows.push(SweepRow {
                    utilization,
                    seed: set_seed,
                    method: ftl_kind.name(),
                    host_pages_written: counters.host_pages_written,
                    rber_spread: quantile(&rbers, 0.90) / quantile(&rbers, 0.10),
                });
            }
        }
    }
    dir.write_csv("fig10_sweep.csv", &rows)?;
    let values = |method: &str, utilization: f64, pick: fn(&SweepRow) -> f64| -> Vec<f64> {
        rows.iter().filter(|row| row.method == method && row.utilization == utilization).map(pick).collect()
    };
    let mean = |method: &str, utilization: f64, pick: fn(&SweepRow) -> f64| {
        let values = values(method, utilization, pick);
        #[allow(clippy::cast_precision_loss)]
        let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
        mean
    };
    let extent = |method: &str, utilization: f64, pick: fn(&SweepRow) -> f64| {
        values(method, utilization, pick)
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), &value| (low.min(value), high.max(value)))
    };
    #[allow(clippy::cast_precision_loss)]
    let written = |row: &SweepRow| row.host_pages_written as f64;
    let spread = |row: &SweepRow| row.rber_spread;
    for (file, title, y, pick) in [
        (
            "fig10_sweep_writes.svg",
            "Host pages written before 2 % of blocks die",
            "host pages",
            written as fn(&SweepRow) -> f64,
        ),
        ("fig10_sweep_spread.svg", "RBER spread (p90/p10) when 2 % of blocks die", "p90 / p10", spread),
    ] {
        let mut chart = Chart::new(title, Axis::new("device utilization λ"), Axis::new(y));
        for kind in WEAR_FTLS {
            let points = SWEEP_UTILIZATIONS.iter().map(|&u| (u, mean(kind.name(), u, pick))).collect();
            let ranges = SWEEP_UTILIZATIONS.iter().map(|&u| extent(kind.name(), u, pick)).collect();
            chart.push(Series::new(kind.name(), Mark::LinePoints, points).ranges(ranges));
        }
        dir.write_chart(file, &chart)?;
    }
    let table: Vec<Vec<String>> = SWEEP_UTILIZATIONS
        .iter()
        .map(|&u| {
            let mut row = vec![format!("{u:.2}")];
            row.extend(WEAR_FTLS.iter().map(|kind| {
                let failures = failed.iter().filter(|&&(at, name)| at == u && name == kind.name()).count();
                let note = if failures > 0 { format!(" ({failures} could not run)") } else { String::new() };
                format!("{:.2} M, {:.2}×{note}", mean(kind.name(), u, written) / 1e6, mean(kind.name(), u, spread))
            }));
            row
        })
        .collect();
    let mut header = vec!["λ"];
    header.extend(WEAR_FTLS.iter().map(|kind| kind.name()));
    summary
        .heading("Sweep over λ (Section 6.2)")
        .paragraph(&format!(
            "{samples} task set(s) per λ (seeds {seed}..{}), each with its own block parameters; per cell: mean host \
             pages written before 2 % of the blocks die, and mean RBER spread p90/p10; the plots' error bars span the \
             task sets' minimum to maximum.",
            seed + u64::try_from(samples)?.saturating_sub(1)
        ))
        .table(&header, &table)
        .image("host pages before 2 % of blocks die", "fig10_sweep_writes.svg")
        .image("RBER spread", "fig10_sweep_spread.svg");
    Ok(())
}

fn figure_10_summary(
    device: &DeviceParams,
    endurance: u32,
    seed: u64,
    distribution: &WearDistribution,
    plan: &StoragePlan,
    rows: &[WearRow],
    paper_scale: bool,
) -> Summary {
    let find = |name: &str| rows.iter().find(|row| row.method == name);
    let spread = |name: &str| find(name).map_or(f64::NAN, |row| row.rber_p90 / row.rber_p10);
    let writes = |name: &str| find(name).map_or(0, |row| row.host_pages_written);
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                row.method.to_owned(),
                row.host_pages_written.to_string(),
                row.erases.to_string(),
                row.gc_page_copies.to_string(),
                row.dead_blocks.to_string(),
                format!("{:.2e}", row.rber_p10),
                format!("{:.2e}", row.rber_median),
                format!("{:.2e}", row.rber_p90),
            ]
        })
        .collect();
    let mut summary = Summary::new("Telomere Figure 10: RBER CDF under wear-leveling");
    summary
        .paragraph(&format!(
            "Telomere Section 6.2, eq. (27): log10 W_b = x_b + y_b log10 E(b), x_b ~ N({}, {}), y_b ~ N({}, {}) \
             per block (seed {seed}; the paper does not publish Pletka et al.'s fitted values). Device: {} chips × \
             {} blocks × {} pages, rated endurance {endurance} P/E cycles{}; α = {OVER_PROVISIONING}. One task \
             set of 10 tasks (relative standard deviation 0.70), admitted by SharP with g = {} into {} \
             partitions; Pagemap runs the same tasks on a greedy page-mapped FTL with the same over-provisioning. \
             Each run stops when 2 % of the blocks reached W_b = 1e-2; dead blocks are not retired before.",
            distribution.x_mean,
            distribution.x_std_dev,
            distribution.y_mean,
            distribution.y_std_dev,
            device.chips(),
            device.blocks_per_chip,
            device.pages_per_block,
            if paper_scale { "" } else { " (lowered from 3,000 to keep the run short; --paper-scale uses 3,000)" },
            device.chips(),
            plan.partitions.len(),
        ))
        .image("RBER CDF", "fig10_rber_cdf.svg")
        .comparisons(&[
            Comparison {
                quantity: "wear-leveling effectiveness (spread of RBER, p90/p10)".to_owned(),
                paper: "Telomere HB and RBER are the most even; then Telomere noWL, Pagemap RBER, Pagemap noWL"
                    .to_owned(),
                measured: WEAR_FTLS
                    .iter()
                    .map(|kind| format!("{} {:.1}×", kind.name(), spread(kind.name())))
                    .collect::<Vec<_>>()
                    .join(", "),
                verdict: {
                    let spreads = WEAR_FTLS.map(|kind| spread(kind.name()));
                    let (best, rest) = spreads.split_at(2);
                    Verdict::holds(best.iter().all(|b| rest.iter().all(|r| b <= r)))
                },
                note: "Smaller is better: the ideal CDF is a step at 1e-2.".to_owned(),
            },
            Comparison {
                quantity: "host pages written before 2 % of blocks die".to_owned(),
                paper: "not reported".to_owned(),
                measured: WEAR_FTLS
                    .iter()
                    .map(|kind| format!("{} {}", kind.name(), writes(kind.name())))
                    .collect::<Vec<_>>()
                    .join(", "),
                verdict: Verdict::NotComparable,
                note: "Telomere never copies a page, so it writes more host data per erase than Pagemap.".to_owned(),
            },
        ])
        .table(
            &["method", "host pages", "erases", "GC copies", "dead blocks", "RBER p10", "RBER median", "RBER p90"],
            &table,
        )
        .code(
            "sh",
            &format!(
                "nandlab reproduce telomere-fig10 --seed {seed} --out DIR{}",
                if paper_scale { " --paper-scale" } else { "" }
            ),
        );
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use nandlab_admission::policy::wao_gc_max_utilization;
    use nandlab_admission::storage::EraseAllowance;
    use nandlab_admission::throughput::WriteSpread;
    use nandlab_core::ftl::wao_gc::WaoGcConfig;

    /// A small device for randomized runs: 4 chips of 48 blocks of 32 pages.
    fn small_device() -> DeviceParams {
        DeviceParams {
            name: "small".to_owned(),
            channels: 4,
            chips_per_channel: 1,
            blocks_per_chip: 48,
            pages_per_block: 32,
            page_size_bytes: 4096,
            ..DeviceParams::telomere_1tb()
        }
    }

    /// Telomere's promise, as a property over generated task sets: a set
    /// that passes admission (storage and throughput) runs in the timed
    /// simulator in the blocks reserved for its partitions, never copies a
    /// page and never misses a deadline — at g = 1, 4 and 32, both
    /// placements, both readings of the erase term.
    #[test]
    fn admitted_task_sets_meet_every_deadline_without_gc_copies() {
        let utilization = AdmissionContext::utilization_for_over_provisioning(OVER_PROVISIONING);
        let mut runs = 0;
        for seed in 0..48u64 {
            let erase_allowance = if seed / 3 % 2 == 0 { EraseAllowance::Prorated } else { EraseAllowance::Printed };
            let (device, granularity) = match seed % 3 {
                0 => (small_device(), 1),
                1 => (small_device(), 4),
                _ => (DeviceParams::cosmos(), 32),
            };
            let placement = if seed % 2 == 0 { Placement::Sip } else { Placement::Sharp };
            let spec = TaskSetSpec {
                tasks: 2 + u32::try_from(seed % 5).expect("small"),
                rsd: 0.7,
                storage_pages: mapped_pages(&device, utilization) / (2 + seed % 4),
                write_period: SimNs(1_000_000 * (1 + seed % 7)),
                mean_write_pages: [1.0, 4.0, 40.0][usize::try_from(seed / 3 % 3).expect("small")],
            };
            let tasks = random_task_set(&spec, seed).expect("valid spec");
            let admission: Vec<Task> =
                tasks.iter().enumerate().map(|(index, task)| admission_task(index, task)).collect();
            let mut context = AdmissionContext::new(device.clone(), granularity, utilization).expect("valid context");
            context.storage.erase_allowance = erase_allowance;
            let verdict = check(&Policy::Telomere { placement }, &context, &admission);
            let StorageCheck::Blocks(plan) = &verdict.storage else {
                panic!("Telomere plans blocks");
            };
            if !verdict.admitted() {
                continue;
            }
            runs += 1;
            let case = format!(
                "seed {seed} ({placement:?}, g = {granularity}, {erase_allowance:?}, {}, EDF load {:.2})",
                device.name,
                verdict.throughput.load()
            );
            eprintln!("{case}");
            let layer = telomere_layer(&device, &tasks, plan, WearLeveling::Fifo, None).expect("admitted plan builds");
            let horizon = tasks.iter().map(|task| task.data_lifetime().0).max().expect("tasks") * 4;
            let run = periodic_run::timed_run(&layer.0, layer.1, tasks, SimNs(0), SimNs(horizon), true)
                .unwrap_or_else(|error| panic!("{case}: {error}"));
            assert_eq!(run.counters.gc_page_copies, 0, "{case}");
            assert!(run.counters.erases > 0, "{case}: the run lasted past the first expiries");
            assert!(run.deadlines.requests > 0, "{case}");
            assert_eq!(run.deadlines.misses, 0, "{case}: worst lateness {} ms", run.deadlines.worst_lateness_ms);
        }
        assert!(runs >= 16, "only {runs} of 48 random sets were admitted");
    }

    /// Issue 15's counter-example: on `cosmos` at g = 1, one task writing 32
    /// pages every 10 ms. Charged as if its pages spread over all 32 chips
    /// (eq. (18) as printed) it is admitted and every job is late, since the
    /// placement FTL writes the partition to one chip; charged on its stripe
    /// (the default) it is rejected.
    #[test]
    fn the_printed_write_charge_admits_a_set_that_misses_every_deadline() {
        let device = DeviceParams::cosmos();
        let task = Task::writer("t0", 32, Duration::from_millis(10), 20);
        let utilization = AdmissionContext::utilization_for_over_provisioning(OVER_PROVISIONING);
        let mut context = AdmissionContext::new(device.clone(), 1, utilization).expect("valid context");
        let policy = Policy::Telomere { placement: Placement::Sip };
        assert!(!check(&policy, &context, std::slice::from_ref(&task)).admitted(), "the stripe charge rejects it");
        context.throughput.write_spread = WriteSpread::AllChips;
        let verdict = check(&policy, &context, std::slice::from_ref(&task));
        assert!(verdict.admitted(), "the printed charge admits it: {:?}", verdict.throughput);
        let StorageCheck::Blocks(plan) = &verdict.storage else { panic!("Telomere plans blocks") };
        let tasks = vec![periodic_task(&task).expect("converts")];
        let layer = telomere_layer(&device, &tasks, plan, WearLeveling::Fifo, None).expect("builds");
        let run = periodic_run::timed_run(&layer.0, layer.1, tasks, SimNs(0), ns(Duration::from_secs(5)), true)
            .expect("runs");
        assert_eq!(run.deadlines.misses, run.deadlines.requests, "every job is late on one chip");
        assert!(run.deadlines.worst_lateness_ms > 50.0, "{}", run.deadlines.worst_lateness_ms);
    }

    #[test]
    fn core_and_admission_agree_on_the_wao_gc_bound() {
        for device in [DeviceParams::telomere_1tb(), DeviceParams::cosmos(), small_device()] {
            let config = WaoGcConfig::from_latencies(ns(device.read), ns(device.write), ns(device.erase), 2);
            let core = config.utilization_bound(u32::try_from(device.pages_per_block).expect("small"));
            assert!((core - wao_gc_max_utilization(&device)).abs() < 1e-12, "{}", device.name);
        }
    }

    #[test]
    fn table_3_runs_and_telomere_never_copies_nor_misses() {
        let device = table_3_device();
        let runs = table_3_runs(&device, device.chips()).expect("runs");
        let run = |name| runs.iter().find(|run| run.name == name).expect("method ran");
        assert!(run("Telomere SharP").rejected.is_empty(), "SharP needs fewer blocks than SiP");
        let tasks = TaskSet::parse(TABLE_3, Path::new(TABLE_3_PATH)).expect("table 3").tasks;
        for name in ["Telomere SiP", "Telomere SharP"] {
            assert_eq!(run(name).report.counters.gc_page_copies, 0, "{name}");
            assert_eq!(run(name).report.deadlines.misses, 0, "{name}");
            assert_eq!(run(name).report.missing_reads, 0, "{name}: every read finds live data");
            // Writes at the admitted tasks' rate in steady state.
            let admitted = admitted_rate(run(name), &tasks);
            let written = mean_between(run(name), 10.0, 90.0, |bin| bin.written_pages_per_s);
            assert!((written - admitted).abs() < 1.0, "{name}: {written} written, {admitted} admitted");
        }
    }
}
