//! What several subcommands share: where a configuration comes from, the
//! timing switch, the timed-run summary, byte counts for humans and the
//! progress bar. No subcommand imports another; they all import this.

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nandlab_core::config::{self, Document};
use nandlab_core::sim::{Phase, Progress};
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
    /// Add a concurrent job, `name=NAME,key=value,…` with `[[job]]` keys
    /// (repeatable), e.g. `--job name=logger,pattern=sequential,priority=true,requests=5000`;
    /// see docs/configuration.md.
    #[arg(long = "job", value_name = "SPEC")]
    pub jobs: Vec<String>,
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
        let jobs = self.jobs.iter().map(|spec| format!("job={spec}"));
        let overrides: Vec<String> = self.overrides.iter().cloned().chain(jobs).collect();
        Ok(config::from_sources(self.preset.as_deref(), document, &overrides, self.seed)?)
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    On,
    Off,
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
    if !timed.jobs.is_empty() {
        writeln!(
            out,
            "jobs:      {:>10} {:>10} {:>10} {:>12} {:>12}",
            "requests", "IOPS", "MB/s", "mean us", "p99 us"
        )?;
        for job in &timed.jobs {
            let (mean, p99) = job.latency.as_ref().map_or((0.0, 0.0), |latency| (latency.mean_us, latency.p99_us));
            let mb_s = job.read_mb_s + job.write_mb_s;
            writeln!(
                out,
                "  {:<8} {:>10} {:>10.0} {:>10.2} {mean:>12.0} {p99:>12.0}",
                job.name, job.requests, job.iops, mb_s
            )?;
        }
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
        ("flush", &latency.flush),
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
