//! `nandlab run`: one simulation from a preset, a TOML file and overrides.

use crate::output::{self, Output};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nandlab_core::config::{self, Document};
use nandlab_core::sim::{Phase, Progress};
use nandlab_core::Report;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where a configuration comes from; shared by every command that simulates.
#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    /// TOML configuration file (see docs/configuration.md). It may start from a
    /// preset with a top-level `preset = "NAME"` line.
    pub config: Option<PathBuf>,
    /// Embedded preset to start from (see `nandlab presets`). Default: femu-32g
    /// when no configuration file is given.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Override one key, e.g. `--set ftl.gc_policy=fifo --set device.over_provisioning=0.28`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Seed of every random choice (overrides the configuration's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
}

impl ConfigArgs {
    pub fn build(&self) -> anyhow::Result<(nandlab_core::Config, nandlab_core::device::Geometry)> {
        let text = match &self.config {
            Some(path) => Some(std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?),
            None => None,
        };
        let origin = self.config.as_ref().map(|path| path.display().to_string()).unwrap_or_default();
        let document = text.as_deref().map(|text| Document::Toml { text, origin: &origin });
        Ok(config::from_sources(self.preset.as_deref(), document, &self.overrides, self.seed)?)
    }
}

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
    /// Print no summary table.
    #[arg(long, short)]
    pub quiet: bool,
    /// `on`: simulate time with the `[timing]` model (throughput, latency
    /// percentiles, GC share; see docs/timing.md). `off`: count operations only.
    #[arg(long, value_enum, default_value_t = Timing::Off)]
    pub timing: Timing,
    /// With `--timing on`: write the throughput-over-time series as CSV (`-`: to standard output).
    #[arg(long, value_name = "FILE")]
    pub timing_csv: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    On,
    Off,
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let (config, _) = args.config.build()?;
    if args.timing_csv.is_some() && args.timing == Timing::Off {
        anyhow::bail!("--timing-csv needs --timing on");
    }
    let ([json, csv, timing_csv], to_stdout) =
        output::open_all([args.json.as_deref(), args.csv.as_deref(), args.timing_csv.as_deref()])?;
    let started = Instant::now();
    let mut progress = ProgressReporter::new();
    let simulate = if args.timing == Timing::On { nandlab_core::sim::run_timed } else { nandlab_core::run };
    let report = simulate(&config, &mut |update| progress.update(update))?;
    progress.finish();
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
    if let Some(out) = json {
        output::write_json(out, &report)?;
    }
    if let Some(out) = csv {
        write_series_csv(&report, out)?;
    }
    Ok(())
}

fn write_series_csv(report: &Report, mut out: Output) -> anyhow::Result<()> {
    writeln!(out, "host_pages_written,waf_window,waf_cumulative")?;
    for point in &report.waf_series {
        writeln!(out, "{},{:.6},{:.6}", point.host_pages_written, point.waf_window, point.waf_cumulative)?;
    }
    out.commit()
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
    writeln!(out, "ftl        gc {:?}, threshold {} free blocks per unit", ftl.gc_policy, ftl.gc_threshold_blocks)?;
    if let Some(pre) = &report.precondition {
        writeln!(
            out,
            "precondition  {} host pages, WAF {}, last window {}, steady: {}",
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
    Ok(())
}

pub fn print_timed_summary(timed: &nandlab_core::timing::TimedReport) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "timed      {:.3} s simulated: {:.0} IOPS, read {:.1} MB/s, write {:.1} MB/s",
        timed.simulated_s, timed.iops, timed.read_mb_s, timed.write_mb_s
    )?;
    if timed.drained_s > timed.simulated_s {
        writeln!(
            out,
            "           flash drained at {:.3} s (buffered work after the last completion)",
            timed.drained_s
        )?;
    }
    writeln!(
        out,
        "dies       {:.1} % busy, {:.1} % of busy time on GC",
        100.0 * timed.die_utilization,
        100.0 * timed.gc_die_time_share
    )?;
    if timed.rmw_pages_rewritten > 0 || timed.stripes_merged > 0 {
        writeln!(
            out,
            "stripes    {} RMW pages read, {} rewritten, {} stripes merged",
            timed.rmw_pages_read, timed.rmw_pages_rewritten, timed.stripes_merged
        )?;
    }
    writeln!(
        out,
        "  {:<10}{:>10}{:>12}{:>12}{:>12}{:>12}{:>12}",
        "latency", "count", "mean us", "p50 us", "p99 us", "p99.9 us", "max us"
    )?;
    let latency = &timed.latency;
    let rows = [
        ("read", &latency.read),
        ("write", &latency.write),
        ("trim", &latency.trim),
        ("priority", &latency.priority),
        ("all", &latency.all),
    ];
    for (label, summary) in rows {
        if let Some(s) = summary {
            writeln!(
                out,
                "  {label:<10}{:>10}{:>12.1}{:>12.1}{:>12.1}{:>12.1}{:>12.1}",
                s.count, s.mean_us, s.p50_us, s.p99_us, s.p999_us, s.max_us
            )?;
        }
    }
    Ok(())
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

pub fn bytes(count: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    #[allow(clippy::cast_precision_loss)]
    let mut value = count as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

/// A progress bar on stderr that appears only once a run has lasted a second,
/// and never when stderr is not a terminal.
pub struct ProgressReporter {
    bar: ProgressBar,
    started: Instant,
    phase: Option<Phase>,
}

impl ProgressReporter {
    pub fn new() -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{msg:40} [{bar:30}] {percent:>3}% eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        Self { bar, started: Instant::now(), phase: None }
    }

    pub fn update(&mut self, progress: Progress) {
        if self.bar.is_hidden() && self.started.elapsed() > Duration::from_secs(1) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        if self.phase != Some(progress.phase) {
            self.phase = Some(progress.phase);
            self.bar.set_message(progress.phase.label());
            if progress.total == 0 {
                // The length is unknown (a streamed trace): count instead.
                self.bar.set_style(
                    ProgressStyle::with_template("{msg:40} {spinner} {human_pos} requests, {per_sec}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
            }
        }
        if progress.total > 0 {
            self.bar.set_length(progress.total);
        }
        self.bar.set_position(progress.done);
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
