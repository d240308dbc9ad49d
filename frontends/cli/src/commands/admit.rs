//! `nandlab admit`: Telomere admission control for a task-set file. Admits the
//! tasks one by one in file order (as successive `open()` calls) and prints,
//! per task, admitted or rejected and why, the partitions with their blocks,
//! and the storage and throughput utilization. `--json` writes it all.

use crate::shared::Timing;
use anyhow::Context as _;
use nandlab_admission::incremental::{admit_in_order_by, AdmissionReport, Rejection, Tests};
use nandlab_admission::policy::{
    multilog_waf, AdmissionContext, MultiLogWorkload, Policy, StorageCheck, StorageTotals, ThroughputCheck,
};
use nandlab_admission::storage::{EraseAllowance, Placement, WriteSizeModel};
use nandlab_admission::throughput::{GcRounding, WriteSpread};
use nandlab_admission::{DeviceParams, TaskSet};
use nandlab_convert::f64_of;
use nandlab_lab::AdmittedRun;
use std::path::PathBuf;

/// Largest `--over-provisioning`: α = 100 leaves λ ≈ 1 % of the device for data.
const OVER_PROVISIONING_MAX: f64 = 100.0;

#[derive(clap::Args, Debug)]
pub struct AdmitArgs {
    /// Task-set TOML file (`[[task]]` tables; see docs/telomere.md).
    pub tasks: PathBuf,
    /// Device: a preset, `telomere-1tb` (or `1tb`, Section 6.1.1) or `cosmos` (Section 6.3), or a device TOML file
    /// (keys in docs/telomere.md).
    #[arg(long = "preset", value_name = "NAME|FILE", default_value = "telomere-1tb")]
    pub device: String,
    /// Telomere block placement.
    #[arg(long, value_enum, default_value_t = Placement::Sharp)]
    pub placement: Placement,
    /// Admission policy: Telomere, or a baseline of Section 6.1.
    #[arg(long, value_enum, default_value_t = PolicyArg::Telomere)]
    pub policy: PolicyArg,
    /// Read/write granularity g in pages: each partition is written over a stripe of min(g, chips) chips.
    #[arg(long, default_value_t = 1)]
    pub granularity: u64,
    /// Over-provisioning α (0 to 100); the device utilization is λ = 1/(1+α), eq. (2).
    #[arg(long, default_value_t = 0.10)]
    pub over_provisioning: f64,
    /// Block equations: `general` (eq. 8-10, 15-16) or `small-writes` (w < g·P, eq. 5-7, 12-14).
    #[arg(long, value_enum, default_value_t = WriteSizeModel::General)]
    pub equations: WriteSizeModel,
    /// Erase term of the block equations: `prorated` ⌈w·t_e/T⌉ (matches Section 4.2's example) or `printed`
    /// w·⌈t_e/T⌉ (the worst case when a job releases all w pages at once).
    #[arg(long, value_enum, default_value_t = EraseAllowance::Prorated)]
    pub erase_term: EraseAllowance,
    /// Chips a job's writes and erasures are charged on in eq. (18)-(19): `stripe` ⌈w/min(g, chips)⌉·t_w, as the
    /// placement writes, or `all-chips` ⌈w/chips⌉·t_w as printed (sound only if every job spans every chip).
    #[arg(long, value_enum, default_value_t = WriteSpread::Stripe)]
    pub write_spread: WriteSpread,
    /// Rounding of eq. (19)'s C^g: `exact`, or `millisecond` (up to whole ms, the paper's unit).
    #[arg(long, value_enum, default_value_t = GcRounding::Exact)]
    pub gc_rounding: GcRounding,
    /// Tests that decide: `both`, or only `storage` (Section 4's worked examples) or `throughput`; both are
    /// always computed and printed.
    #[arg(long, value_enum, default_value_t = Tests::Both)]
    pub tests: Tests,
    /// Also run the admitted tasks for this many seconds of simulated time on the policy's own FTL (Telomere's
    /// placement with the planned partitions, WAO-GC, or the page-mapped FTL) and print deadline misses, GC copies,
    /// erases and each task's throughput.
    #[arg(long, value_name = "SECONDS")]
    pub simulate: Option<f64>,
    /// With --simulate: `on` runs the timing engine (each chip serves its operations earliest deadline first);
    /// `off` only counts (no deadlines).
    #[arg(long, value_enum, default_value_t = Timing::On, num_args = 0..=1, default_missing_value = "on")]
    pub timing: Timing,
    /// Also write the full report as JSON to this file (`-`: to stdout, instead of the table).
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum PolicyArg {
    Telomere,
    WaoGc,
    MultilogRandom,
    MultilogZipf,
}

pub fn run(args: AdmitArgs) -> anyhow::Result<()> {
    let device = DeviceParams::from_preset_or_file(&args.device)?;
    let set = TaskSet::load(&args.tasks)?;
    let alpha = args.over_provisioning;
    anyhow::ensure!(
        alpha.is_finite() && (0.0..=OVER_PROVISIONING_MAX).contains(&alpha),
        "--over-provisioning must be a finite number from 0 to {OVER_PROVISIONING_MAX}, got {alpha}"
    );
    let mut context =
        AdmissionContext::new(device, args.granularity, AdmissionContext::utilization_for_over_provisioning(alpha))?;
    context.storage.write_size = args.equations;
    context.storage.erase_allowance = args.erase_term;
    context.throughput.write_spread = args.write_spread;
    context.throughput.gc_rounding = args.gc_rounding;
    let policy = policy(args.policy, args.placement, alpha)?;
    let ([json], to_stdout) = crate::output::open_all([args.json.as_deref()])?;
    let report = admit_in_order_by(&policy, &context, &set.tasks, args.tests);
    if !to_stdout {
        print_report(&context, &set, &report);
        match args.tests {
            Tests::Both => {}
            Tests::Storage => println!("(throughput test reported only: --tests storage)"),
            Tests::Throughput => println!("(storage test reported only: --tests throughput)"),
        }
    }
    let simulation = args
        .simulate
        .map(|seconds| {
            nandlab_lab::simulate_admitted(&context, &policy, &set.tasks, &report, seconds, args.timing == Timing::On)
        })
        .transpose()?;
    if let (Some(simulation), false) = (&simulation, to_stdout) {
        print_simulation(simulation);
    }
    let document = serde_json::json!({
        "tasks_file": args.tasks, "context": context, "tests": args.tests, "tasks": set.tasks, "report": report,
        "simulation": simulation
    });
    json.map(|out| crate::output::write_json(out, &document)).transpose()?;
    Ok(())
}

fn policy(policy: PolicyArg, placement: Placement, over_provisioning: f64) -> anyhow::Result<Policy> {
    let multilog = |workload| {
        multilog_waf(over_provisioning, workload).map(|waf| Policy::MultiLogOracle { waf }).with_context(|| {
            format!("Table 2 gives MultiLog-Oracle's WAF only for α = 0.10, 0.30, 0.75, not {over_provisioning}")
        })
    };
    Ok(match policy {
        PolicyArg::Telomere => Policy::Telomere { placement },
        PolicyArg::WaoGc => Policy::WaoGc,
        PolicyArg::MultilogRandom => multilog(MultiLogWorkload::Random)?,
        PolicyArg::MultilogZipf => multilog(MultiLogWorkload::Zipf8020)?,
    })
}

fn print_simulation(run: &AdmittedRun) {
    let mode = if run.timed { "timed, EDF at each chip" } else { "counting" };
    println!("\nsimulated {} s of the admitted tasks on the {} FTL ({mode}):", run.simulated_s, run.layer);
    if let Some(deadlines) = &run.deadlines {
        println!(
            "  deadline misses: {} of {} jobs, worst lateness {:.3} ms",
            deadlines.misses, deadlines.requests, deadlines.worst_lateness_ms
        );
    }
    println!(
        "  host pages written {}, GC page copies {}, erases {}",
        run.host_pages_written, run.gc_page_copies, run.erases
    );
    println!("  {:<12} {:>16} {:>16}", "task", "written pages/s", "read pages/s");
    for task in &run.tasks {
        println!("  {:<12} {:>16.1} {:>16.1}", task.task, task.write_pages_per_s, task.read_pages_per_s);
    }
}

fn print_report(context: &AdmissionContext, set: &TaskSet, report: &AdmissionReport) {
    println!(
        "{} on {} ({} chips, {} blocks of {} pages), g = {}, λ = {:.4}",
        report.policy.name(),
        context.device.name,
        context.device.chips(),
        context.device.blocks(),
        context.device.pages_per_block,
        context.storage.granularity,
        context.utilization
    );
    let spread = match context.throughput.write_spread {
        WriteSpread::Stripe => {
            format!("its stripe ({} of {} chips)", context.storage.stripe_width(), context.device.chips())
        }
        WriteSpread::AllChips => format!("all {} chips", context.device.chips()),
    };
    let erase_term = match context.storage.erase_allowance {
        EraseAllowance::Prorated => "prorated ⌈w·t_e/T⌉",
        EraseAllowance::Printed => "printed w·⌈t_e/T⌉",
    };
    let rounding = match context.throughput.gc_rounding {
        GcRounding::Exact => "exact",
        GcRounding::Millisecond => "rounded up to 1 ms",
    };
    println!("eq. (18)-(19) charge a job on {spread}, C^g {rounding}; erase term {erase_term}");
    println!(
        "\n{:<12} {:>8} {:>12} {:>8} {:>12} {:>10}  decision",
        "task", "r_i", "T^r [ms]", "w_i", "T^w [ms]", "l^w"
    );
    for (task, decision) in set.tasks.iter().zip(&report.decisions) {
        let job = |job: Option<nandlab_admission::Periodic>| {
            job.map_or(("-".to_owned(), "-".to_owned()), |job| {
                (job.pages.to_string(), format!("{:.3}", job.period.as_secs_f64() * 1e3))
            })
        };
        let ((read_pages, read_period), (write_pages, write_period)) = (job(task.read), job(task.write));
        let outcome = match decision.rejection {
            None => "admitted".to_owned(),
            Some(Rejection::Storage) => format!("rejected: storage ({})", storage_text(&decision.verdict.storage)),
            Some(Rejection::Throughput) => {
                format!("rejected: throughput (load {:.4} > 1)", decision.verdict.throughput.load())
            }
        };
        println!(
            "{:<12} {read_pages:>8} {read_period:>12} {write_pages:>8} {write_period:>12} {:>10}  {outcome}",
            task.name, task.lifetime_periods
        );
    }
    println!("\nadmitted {} of {} tasks", report.admitted.len(), set.tasks.len());
    if let StorageCheck::Blocks(plan) = &report.verdict.storage {
        println!("\n{} partitions ({}):", plan.partitions.len(), plan.placement.name());
        for (index, partition) in plan.partitions.iter().enumerate() {
            let names: Vec<&str> =
                partition.tasks.iter().map(|&member| set.tasks[report.admitted[member]].name.as_str()).collect();
            println!(
                "  P{index}: {:>8} blocks, stripe {:>3}, longest data lifetime {:>10.3} s, {:>10.1} pages/s  [{}]",
                partition.blocks,
                partition.stripe_width,
                partition.longest_data_lifetime.as_secs_f64(),
                partition.write_pages_per_second,
                names.join(", ")
            );
        }
    }
    println!("\nstorage:    {}", storage_text(&report.verdict.storage.totals()));
    match &report.verdict.throughput {
        ThroughputCheck::Edf(edf) => println!(
            "throughput: EDF eq. (20) load {:.4} = blocking {:.4} + read {:.4} + write {:.4} + GC {:.4}",
            edf.total(),
            edf.blocking,
            edf.read,
            edf.write,
            edf.gc
        ),
        ThroughputCheck::BankReservation { load } => {
            println!("throughput: bank reservation load {load:.4} (average, not a deadline guarantee)")
        }
    }
}

fn storage_text(storage: &StorageTotals) -> String {
    match storage {
        StorageTotals::Blocks { blocks_needed, blocks_available } => format!(
            "{blocks_needed} of {blocks_available} blocks (eq. 11), {:.2} %",
            100.0 * f64_of(*blocks_needed) / f64_of((*blocks_available).max(1))
        ),
        StorageTotals::Pages { pages_needed, pages_available } => format!(
            "{pages_needed} of {pages_available} pages (eq. 24), {:.2} %",
            100.0 * f64_of(*pages_needed) / f64_of((*pages_available).max(1))
        ),
    }
}
