//! `nandlab run`: one simulation from a preset, a TOML file and overrides.

use crate::output::{self, Output};
use crate::shared::{bytes, print_timed_summary, ConfigArgs, ProgressReporter, Timing};
use anyhow::Context;
use nandlab_core::timing::{JobTiming, LatencySummary};
use nandlab_core::workload::jobs::JobReport;
use nandlab_core::Report;
use nandlab_lab::document::Document;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Write the full report as JSON (`-`: to standard output, instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the WAF-over-time series as CSV (`-`: to standard output, instead of the table).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the report as a one-row Parquet table: every scalar of the JSON
    /// document, nested keys joined with `.` (`-`: to standard output).
    #[arg(long, value_name = "FILE")]
    pub parquet: Option<PathBuf>,
    /// Write the WAF-over-time series (the `--csv` table) as Parquet (`-`: to standard output).
    #[arg(long, value_name = "FILE")]
    pub series_parquet: Option<PathBuf>,
    /// With `[[job]]` tables / `--job`: write the per-job results as CSV (`-`: to standard output).
    #[arg(long, value_name = "FILE")]
    pub jobs_csv: Option<PathBuf>,
    /// With `[[job]]` tables / `--job`: the per-job results as Parquet (`-`: to standard output).
    #[arg(long, value_name = "FILE")]
    pub jobs_parquet: Option<PathBuf>,
    /// Print no summary table.
    #[arg(long, short)]
    pub quiet: bool,
    /// `on`: simulate time with the `[timing]` model (throughput, latency
    /// percentiles, GC share; see docs/timing.md). `off`: count operations only.
    /// A bare `--timing` means `on`.
    #[arg(long, value_enum, default_value_t = Timing::Off, num_args = 0..=1, default_missing_value = "on")]
    pub timing: Timing,
    /// With `--timing on`: write the throughput-over-time series as CSV (`-`: to standard output).
    #[arg(long, value_name = "FILE")]
    pub timing_csv: Option<PathBuf>,
    /// With `--timing on`: the throughput-over-time series as Parquet (`-`: to standard output).
    #[arg(long, value_name = "FILE")]
    pub timing_parquet: Option<PathBuf>,
    /// MQSim's SSD configuration and workload files, in place of a TOML file:
    /// the device, and the first scenario's synthetic flows as jobs (or its
    /// trace flow replayed); every element without a counterpart is named in
    /// a warning (docs/mqsim.md). `--set` overrides lie above them.
    #[arg(long, num_args = 2, value_names = ["SSDCONFIG", "WORKLOAD"], conflicts_with = "config")]
    pub mqsim: Option<Vec<PathBuf>>,
    /// Run on N threads, each owning a share of the parallel units; the
    /// report equals `--threads 1`'s bit for bit. Needs static allocation
    /// (`ftl.allocation = "static"`), the page FTL with the greedy or fifo
    /// victim policy, no `[[job]]` tables, counting mode (the timing model
    /// orders every operation on one clock) and N dividing the parallel
    /// units; anything else is refused, naming the key (docs/configuration.md).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,
}

pub fn run(mut args: RunArgs) -> anyhow::Result<()> {
    if let Some([ssd, workload]) = args.mqsim.take().as_deref() {
        let input = nandlab_core::config::mqsim::read(ssd, workload)?;
        for warning in &input.warnings {
            eprintln!("warning: {warning}");
        }
        let trace = input.trace.clone();
        args.config.mqsim = Some(input);
        if let Some(trace) = trace {
            if args.threads != 1 {
                let reason = "runs the synthetic [workload] only, not a trace replay";
                let error = nandlab_core::ConfigError::new("--threads", format!("--threads {} {reason}", args.threads));
                return Err(error.into());
            }
            return replay_mqsim_trace(args, trace);
        }
    }
    let (config, _) = args.config.build()?;
    if args.threads != 1 && args.timing == Timing::On {
        let reason = "runs in counting mode only: the timing model orders every operation on one clock";
        return Err(nandlab_core::ConfigError::new("--threads", format!("--threads {} {reason}", args.threads)).into());
    }
    nandlab_core::sim::check_threads(&config, args.threads)?;
    if args.timing == Timing::Off {
        if args.timing_csv.is_some() {
            anyhow::bail!("--timing-csv needs --timing on");
        }
        if args.timing_parquet.is_some() {
            anyhow::bail!("--timing-parquet needs --timing on");
        }
    }
    if config.jobs.is_empty() && (args.jobs_csv.is_some() || args.jobs_parquet.is_some()) {
        anyhow::bail!("--jobs-csv and --jobs-parquet need [[job]] tables or --job");
    }
    let ([json, csv, timing_csv, parquet, series_parquet, timing_parquet, jobs_csv, jobs_parquet], to_stdout) =
        output::open_all([
            args.json.as_deref(),
            args.csv.as_deref(),
            args.timing_csv.as_deref(),
            args.parquet.as_deref(),
            args.series_parquet.as_deref(),
            args.timing_parquet.as_deref(),
            args.jobs_csv.as_deref(),
            args.jobs_parquet.as_deref(),
        ])?;
    let started = Instant::now();
    let mut progress = ProgressReporter::new();
    let report = if args.timing == Timing::On {
        nandlab_core::sim::run_timed(&config, &mut |update| progress.update(update))?
    } else {
        nandlab_core::sim::run_threads(&config, args.threads, &mut |update| progress.update(update))?
    };
    progress.finish();
    crate::shared::warn_lifetime(&report.lifetime);
    let elapsed = started.elapsed();
    if !(args.quiet || to_stdout) {
        print_summary(&report, elapsed)?;
        if let Some(timed) = &report.timed {
            print_timed_summary(timed)?;
        }
    }
    if let Some(out) = timing_csv {
        let timed = report.timed.as_ref().context("the timed run produced no timing report")?;
        write_throughput_csv(timed, out)?;
    }
    if let Some(out) = timing_parquet {
        let timed = report.timed.as_ref().context("the timed run produced no timing report")?;
        output::write_rows_parquet(out, &timed.throughput_series)?;
    }
    let document = Document::new(&report, elapsed);
    if let Some(out) = json {
        output::write_json(out, &document)?;
    }
    if let Some(out) = parquet {
        output::write_document_parquet(out, &document)?;
    }
    if let Some(out) = csv {
        write_series_csv(&report, out)?;
    }
    if let Some(out) = series_parquet {
        output::write_rows_parquet(out, &report.waf_series)?;
    }
    match &report.timed {
        Some(timed) => {
            write_job_rows(&timed.jobs.iter().map(TimedJobRow::from).collect::<Vec<_>>(), jobs_csv, jobs_parquet)?
        }
        None => write_job_rows(&report.jobs, jobs_csv, jobs_parquet)?,
    }
    Ok(())
}

/// `run --mqsim` of a trace-based flow: `nandlab replay TRACE --format mqsim`
/// on the device MQSim's files give, at the trace's times when timed.
fn replay_mqsim_trace(args: RunArgs, trace: PathBuf) -> anyhow::Result<()> {
    let series =
        [&args.csv, &args.series_parquet, &args.jobs_csv, &args.jobs_parquet, &args.timing_csv, &args.timing_parquet];
    if series.iter().any(|output| output.is_some()) {
        anyhow::bail!("an MQSim trace flow is replayed: it writes --json and --parquet only");
    }
    crate::commands::replay::run(crate::commands::replay::ReplayArgs {
        trace,
        input: crate::shared::TraceInputArgs { format: Some("mqsim".to_owned()), trace_device: None },
        config: args.config,
        discard: None,
        fit: false,
        device_size: None,
        json: args.json,
        parquet: args.parquet,
        quiet: args.quiet,
        device_mode: crate::commands::replay::DeviceMode::PageFtl,
        timing: args.timing,
        age_with: None,
        arrival: crate::commands::replay::ArrivalArg::Trace,
    })
}

/// `--jobs-csv` and `--jobs-parquet`: one row per job.
fn write_job_rows<R: serde::Serialize>(rows: &[R], csv: Option<Output>, parquet: Option<Output>) -> anyhow::Result<()> {
    csv.map(|out| output::write_rows_csv(out, rows)).transpose()?;
    parquet.map(|out| output::write_rows_parquet(out, rows)).transpose()?;
    Ok(())
}

/// A timed run's job as one flat row (`timed.jobs` in the JSON, with the
/// latency summary's fields as columns of their own).
#[derive(serde::Serialize)]
struct TimedJobRow<'a> {
    name: &'a str,
    requests: u64,
    active_s: f64,
    offered_iops: Option<f64>,
    iops: f64,
    read_mb_s: f64,
    write_mb_s: f64,
    latency_mean_us: Option<f64>,
    latency_p50_us: Option<f64>,
    latency_p99_us: Option<f64>,
    latency_p999_us: Option<f64>,
    latency_max_us: Option<f64>,
    flash_pages_programmed: u64,
    gc_page_copies: u64,
    erases: u64,
    flash_write_share: f64,
    gc_share: f64,
}

impl<'a> From<&'a JobTiming> for TimedJobRow<'a> {
    fn from(job: &'a JobTiming) -> Self {
        let latency = |field: fn(&LatencySummary) -> f64| job.latency.as_ref().map(field);
        Self {
            name: &job.name,
            requests: job.requests,
            active_s: job.active_s,
            offered_iops: job.offered_iops,
            iops: job.iops,
            read_mb_s: job.read_mb_s,
            write_mb_s: job.write_mb_s,
            latency_mean_us: latency(|summary| summary.mean_us),
            latency_p50_us: latency(|summary| summary.p50_us),
            latency_p99_us: latency(|summary| summary.p99_us),
            latency_p999_us: latency(|summary| summary.p999_us),
            latency_max_us: latency(|summary| summary.max_us),
            flash_pages_programmed: job.flash_pages_programmed,
            gc_page_copies: job.gc_page_copies,
            erases: job.erases,
            flash_write_share: job.flash_write_share,
            gc_share: job.gc_share,
        }
    }
}

fn write_series_csv(report: &Report, mut out: Output) -> anyhow::Result<()> {
    writeln!(out, "host_pages_written,waf_window,waf_cumulative")?;
    for point in &report.waf_series {
        writeln!(out, "{},{:.6},{:.6}", point.host_pages_written, point.waf_window, point.waf_cumulative)?;
    }
    out.commit()
}

/// One line per job: what it issued and its share of the flash writes and GC.
fn print_jobs(jobs: &[JobReport], out: &mut impl Write) -> anyhow::Result<()> {
    writeln!(
        out,
        "jobs:      {:>10} {:>12} {:>12} {:>12} {:>8} {:>8}",
        "requests", "written", "read", "flash", "flash %", "GC %"
    )?;
    for job in jobs {
        writeln!(
            out,
            "  {:<8} {:>10} {:>12} {:>12} {:>12} {:>8.1} {:>8.1}",
            job.name,
            job.requests,
            job.host_pages_written,
            job.host_pages_read,
            job.flash_pages_programmed,
            100.0 * job.flash_write_share,
            100.0 * job.gc_share
        )?;
    }
    Ok(())
}

fn print_summary(report: &Report, elapsed: Duration) -> anyhow::Result<()> {
    let device = &report.device;
    let geometry = &device.geometry;
    let measured = &report.measured;
    let mut out = std::io::stdout().lock();
    let name = report.config.name.as_deref().unwrap_or("custom");
    writeln!(out, "nandlab {} — {name}, seed {}", report.nandlab_version, report.seed)?;
    writeln!(
        out,
        "device     {} ch x {} chips x {} dies x {} planes, {} blocks of {} x {} B pages",
        geometry.channels,
        geometry.chips_per_channel,
        geometry.dies_per_chip,
        geometry.planes_per_die,
        device.blocks,
        geometry.pages_per_block,
        geometry.page_size
    )?;
    writeln!(
        out,
        "capacity   {} physical, {} logical, over-provisioning ρ = {:.4}",
        bytes(device.physical_bytes),
        bytes(device.logical_bytes),
        device.over_provisioning
    )?;
    let ftl = &report.config.ftl;
    writeln!(
        out,
        "ftl        gc {}, threshold {} free blocks per unit",
        crate::shared::config_name(&ftl.gc_policy),
        ftl.gc_threshold_blocks
    )?;
    if let Some(pre) = &report.precondition {
        writeln!(
            out,
            "aging      {} ({}): {} host pages, WAF {}, last window {}, steady: {}",
            report.config.precondition.kind_or(nandlab_core::workload::AgingChoice::RandomFill).name(),
            pre.kind.name(),
            pre.phase.counters.host_pages_written,
            fixed(pre.phase.waf),
            fixed(pre.final_window_waf),
            if pre.steady { "yes" } else { "NO (raise precondition.max_device_writes)" }
        )?;
    }
    writeln!(out, "measured:")?;
    let rows = [
        ("requests", measured.counters.requests.to_string()),
        ("host pages written", measured.counters.host_pages_written.to_string()),
        ("host pages read", measured.counters.host_pages_read.to_string()),
        ("host pages trimmed", measured.counters.host_pages_trimmed.to_string()),
        ("flash pages programmed", measured.counters.flash_pages_programmed.to_string()),
        ("GC page copies", measured.counters.gc_page_copies.to_string()),
        ("erases", measured.counters.erases.to_string()),
        ("WAF", fixed(measured.waf)),
    ];
    for (label, value) in rows {
        writeln!(out, "  {label:<24}{value:>16}")?;
    }
    if !report.jobs.is_empty() {
        print_jobs(&report.jobs, &mut out)?;
    }
    let erases = &report.erase_counts;
    writeln!(
        out,
        "erase counts  min {} mean {:.2} max {} stddev {:.2}, worn out {}",
        erases.min, erases.mean, erases.max, erases.stddev, erases.worn_out_blocks
    )?;
    writeln!(
        out,
        "memory     {:.2} bytes per physical page; wall time {:.2} s",
        report.memory_bytes_per_physical_page,
        elapsed.as_secs_f64()
    )?;
    drop(out);
    crate::shared::print_lifetime(&report.lifetime)
}

fn write_throughput_csv(timed: &nandlab_core::timing::TimedReport, mut out: Output) -> anyhow::Result<()> {
    writeln!(out, "time_s,iops,read_mb_s,write_mb_s")?;
    for point in &timed.throughput_series {
        writeln!(out, "{:.6},{:.3},{:.6},{:.6}", point.time_s, point.iops, point.read_mb_s, point.write_mb_s)?;
    }
    out.commit()
}

fn fixed(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"))
}
