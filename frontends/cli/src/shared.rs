//! What several subcommands share: where a configuration comes from, the
//! timing switch, the timed-run summary, byte counts for humans and the
//! progress bar. No subcommand imports another; they all import this.

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nandlab_convert::f64_of;
use nandlab_core::config::fio;
use nandlab_core::config::{self, Document};
use nandlab_core::ftl::DiscardHandling;
use nandlab_core::sim::{Phase, Progress};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where a configuration comes from; shared by every command that simulates.
#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    /// TOML configuration file (see docs/configuration.md). It may start from a
    /// preset with a top-level `preset = "NAME"` line. A file named `*.fio` is a
    /// fio job file: its jobs run on the device of `--preset` (docs/fio.md).
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
    /// MQSim's files mapped to a configuration document (`run --mqsim`), in
    /// place of a TOML file.
    #[arg(skip)]
    pub mqsim: Option<nandlab_core::config::mqsim::MqsimInput>,
}

impl ConfigArgs {
    pub fn build(&self) -> anyhow::Result<(nandlab_core::Config, nandlab_core::device::Geometry)> {
        let jobs = self.jobs.iter().map(|spec| format!("job={spec}"));
        let overrides: Vec<String> = self.overrides.iter().cloned().chain(jobs).collect();
        if let Some(path) = self.config.as_deref().filter(|path| fio::is_job_file(path)) {
            let environment = |name: &str| std::env::var(name).ok();
            let run = fio::config_from_job_file(path, self.preset.as_deref(), &overrides, self.seed, &environment)?;
            for warning in &run.warnings {
                eprintln!("warning: {warning}");
            }
            return Ok((run.config, run.geometry));
        }
        let text = match &self.config {
            Some(path) => Some(std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?),
            None => None,
        };
        let origin = self.config.as_ref().map(|path| path.display().to_string()).unwrap_or_default();
        let mqsim = self.mqsim.as_ref().map(|input| Document::Table(input.document.clone()));
        let document = text.as_deref().map(|text| Document::Toml { text, origin: &origin }).or(mqsim);
        Ok(config::from_sources(self.preset.as_deref(), document, &overrides, self.seed)?)
    }
}

/// How to read a trace; shared by every command that reads one.
#[derive(clap::Args, Debug, Clone)]
pub struct TraceInputArgs {
    /// Trace format (native, tracefs, blkparse, msr, umass, fio-v2, fio-v3, mqsim, disksim).
    /// Default: detected from the content.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// Keep only this traced device's requests, when the trace holds several (`8,0` for
    /// tracefs/blkparse, `host,disk` for MSR, the ASU for UMass, the file name for fio, the
    /// device number for MQSim/DiskSim). Default: the only device; several are an error.
    #[arg(long, value_name = "DEVICE")]
    pub trace_device: Option<String>,
}

impl TraceInputArgs {
    pub fn format(&self) -> anyhow::Result<Option<nandlab_trace::Format>> {
        Ok(self.format.as_deref().map(nandlab_trace::Format::from_name).transpose()?)
    }
}

/// `--timing [on|off]`: the same grammar in every command that can simulate
/// time; a bare `--timing` means `on`. Each command documents its default.
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
            "jobs:      {:>10} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>8}",
            "requests", "active s", "offered", "IOPS", "MB/s", "mean us", "p99 us", "flash %", "GC %"
        )?;
        for job in &timed.jobs {
            let (mean, p99) = job.latency.as_ref().map_or((0.0, 0.0), |latency| (latency.mean_us, latency.p99_us));
            let mb_s = job.read_mb_s + job.write_mb_s;
            let offered = job.offered_iops.map_or_else(|| "closed".to_owned(), |iops| format!("{iops:.0}"));
            writeln!(
                out,
                "  {:<8} {:>10} {:>9.3} {offered:>10} {:>10.0} {:>10.2} {mean:>10.0} {p99:>10.0} {:>8.1} {:>8.1}",
                job.name,
                job.requests,
                job.active_s,
                job.iops,
                mb_s,
                100.0 * job.flash_write_share,
                100.0 * job.gc_share
            )?;
        }
        writeln!(out, "           (IOPS and MB/s over each job's active time, first arrival to last completion)")?;
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
            "stripes    {} RMW pages read, {} rewritten, {} stripes merged, {} partial stripes flushed when idle",
            timed.rmw_pages_read, timed.rmw_pages_rewritten, timed.stripes_merged, timed.stripes_flushed_idle
        )?;
    }
    let latency = &timed.latency;
    let rows = [
        ("read", &latency.read),
        ("write", &latency.write),
        ("trim", &latency.trim),
        ("flush", &latency.flush),
        ("priority", &latency.priority),
        ("all", &latency.all),
    ];
    write_latency_table(&mut out, "latency", &rows)?;
    Ok(())
}

/// A table of latency summaries under `heading`, one row per operation that had requests.
pub fn write_latency_table(
    out: &mut impl Write,
    heading: &str,
    rows: &[(&str, &Option<nandlab_core::timing::LatencySummary>)],
) -> std::io::Result<()> {
    writeln!(
        out,
        "  {:<10}{:>10}{:>12}{:>12}{:>12}{:>12}{:>12}",
        heading, "count", "mean us", "p50 us", "p99 us", "p99.9 us", "max us"
    )?;
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
    let mut value = f64_of(count);
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

/// The aging lines of a summary: which kind ran and what it cost, the GC
/// debt paid before measuring, each apart from the measured phase.
fn print_aging(out: &mut impl Write, report: &nandlab_core::Report) -> anyhow::Result<()> {
    let waf = |waf: Option<f64>| waf.map_or_else(|| "-".to_owned(), |waf| format!("{waf:.3}"));
    let Some(aging) = &report.precondition else {
        writeln!(out, "aging      none: the measured phase starts on an empty device")?;
        return Ok(());
    };
    let passes = aging.passes.map(|passes| format!(", {passes} passes")).unwrap_or_default();
    let valid = aging.valid_pages.map(|pages| format!(", {pages} logical pages left valid")).unwrap_or_default();
    writeln!(
        out,
        "aging      {}{passes}: {} host pages written, {} GC copies, WAF {}{valid} (not counted below)",
        aging.kind.name(),
        aging.phase.counters.host_pages_written,
        aging.phase.counters.gc_page_copies,
        waf(aging.phase.waf),
    )?;
    if !aging.steady {
        writeln!(
            out,
            "aging      WARNING: the WAF did not settle within precondition.max_device_writes = {}: the device \
             may not be in its steady state (raise the budget)",
            report.config.precondition.max_device_writes
        )?;
    }
    if let Some(debt) = &aging.debt_paid {
        writeln!(
            out,
            "settling   GC debt paid before measuring: {} GC copies, {} erases (not counted below)",
            debt.counters.gc_page_copies, debt.counters.erases
        )?;
    }
    Ok(())
}

/// A configuration value as users type it (its TOML name, e.g. `delay-d`),
/// never Rust's (`DelayD`).
pub fn config_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        Ok(other) => other.to_string(),
        Err(error) => format!("<{error}>"),
    }
}

/// The summary table of a replayed (or emulated) run; `heading` says what ran.
pub fn print_summary(heading: &str, report: &nandlab_core::Report) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let trace = &report.host;
    let measured = &report.measured.counters;
    let discard = &report.discard;
    writeln!(out, "nandlab {} — {heading}, seed {}", report.nandlab_version, report.seed)?;
    match &report.open_channel {
        None => writeln!(
            out,
            "device     {} logical, ρ = {:.4}, page FTL, gc {}, discard {}, device DISCARD {}",
            bytes(report.device.logical_bytes),
            report.device.over_provisioning,
            config_name(&report.config.ftl.gc_policy),
            config_name(&report.config.discard.policy),
            config_name(&report.config.ftl.discard)
        )?,
        Some(open_channel) => writeln!(
            out,
            "device     {} logical, ρ = {:.4}, open-channel ({} groups x {} PUs x {} chunks of {} pages, ws_min {}, \
             ws_opt {}, lines of {} pages) under pblk, separation {}, discard {}",
            bytes(report.device.logical_bytes),
            report.device.over_provisioning,
            open_channel.geometry.groups,
            open_channel.geometry.pus_per_group,
            open_channel.geometry.chunks_per_pu,
            open_channel.geometry.pages_per_chunk,
            open_channel.geometry.ws_min_pages,
            open_channel.line_layout.ws_opt,
            open_channel.line_layout.line_pages,
            if report.config.pblk.separate { "on" } else { "off" },
            config_name(&report.config.discard.policy)
        )?,
    }

    let seconds = f64_of(trace.span_ns()) / 1e9;
    // A write's PREFLUSH or FUA is a cache flush too: the timed latency table's `flush` row counts both.
    let in_writes = match trace.flushes_in_writes {
        0 => String::new(),
        count => format!(" (+{count} in writes: PREFLUSH/FUA)"),
    };
    writeln!(
        out,
        "trace      {} reads, {} writes, {} discards, {} flushes{in_writes}, {} journal commits over {seconds:.1} s",
        trace.reads, trace.writes, trace.discards, trace.flushes, trace.journal_commits
    )?;
    print_aging(&mut out, report)?;
    let rows = [
        ("DISCARD received", discard.received_commands),
        ("DISCARD issued", discard.issued_commands),
        ("DISCARD merged", discard.merged_commands),
        ("DISCARD split", discard.split_commands),
        ("DISCARD cancelled", discard.cancelled_commands),
        ("DISCARD part-cancelled", discard.partially_cancelled_commands),
        ("DISCARD redundant", discard.redundant_commands),
        ("sectors received", discard.received_sectors),
        ("sectors discarded", discard.issued_sectors),
        ("sectors cancelled", discard.cancelled_sectors),
        ("host pages written", measured.host_pages_written),
        ("host pages trimmed", measured.host_pages_trimmed),
        ("host pages read", measured.host_pages_read),
        ("reads of unwritten pages", measured.unmapped_reads),
        ("flash pages programmed", measured.flash_pages_programmed),
        ("GC page copies", measured.gc_page_copies),
        ("erases", measured.erases),
    ];
    write_counts(&mut out, &rows)?;
    if report.config.ftl.discard == DiscardHandling::Dftl {
        let rows = [
            ("translation reads", measured.translation_pages_read),
            ("translation writes", measured.translation_pages_written),
            ("translation GC copies", measured.translation_gc_copies),
        ];
        write_counts(&mut out, &rows)?;
    }
    for (class, pages) in report.classes.iter().zip(&measured.stream_host_pages_written) {
        writeln!(out, "  {:<24}{pages:>16}", format!("host pages: {class}"))?;
    }
    if let Some(open_channel) = &report.open_channel {
        let pblk = &open_channel.pblk;
        let rows = [
            ("GC lines", pblk.gc_lines),
            ("padding pages", pblk.padded_pages),
            ("line metadata pages", pblk.metadata_pages),
            ("mixed lines closed", pblk.mixed_lines_closed),
            ("user stalls (GC waits)", pblk.user_stalls),
        ];
        write_counts(&mut out, &rows)?;
        let ratios = [
            ("pblk WA (user+gc+pad)", pblk.pblk_wa()),
            ("GC-only WA (user+gc)", pblk.gc_wa()),
            ("padding share", pblk.padding_share()),
        ];
        for (label, value) in ratios {
            writeln!(out, "  {label:<24}{:>16}", value.map_or_else(|| "-".to_owned(), |value| format!("{value:.3}")))?;
        }
    }
    writeln!(out, "  {:<24}{:>16}", "WAF", report.measured.waf.map_or_else(|| "-".to_owned(), |w| format!("{w:.3}")))?;
    drop(out);
    print_lifetime(&report.lifetime)
}

/// One `label  count` line per row of the summary table.
fn write_counts(out: &mut impl Write, rows: &[(&str, u64)]) -> std::io::Result<()> {
    for (label, value) in rows {
        writeln!(out, "  {label:<24}{value:>16}")?;
    }
    Ok(())
}

/// The lifetime forecast's warnings, on stderr whatever the output
/// (`lifetime.warnings` in the JSON).
pub fn warn_lifetime(lifetime: &nandlab_core::metrics::LifetimeForecast) {
    for warning in &lifetime.warnings {
        eprintln!("warning: lifetime forecast: {warning}");
    }
}

/// A time given in years, in the unit that reads best: years from one year up (beyond 1,000
/// "more than 1,000 years"), else days, hours or minutes — a short session's forecast is not
/// "0.00 years".
pub fn duration_in_years(years: Option<f64>) -> String {
    const DAYS_PER_YEAR: f64 = 365.25;
    let Some(years) = years.filter(|years| years.is_finite() && *years >= 0.0) else {
        return "-".to_owned();
    };
    let days = years * DAYS_PER_YEAR;
    if years > 1_000.0 {
        "more than 1,000 years".to_owned()
    } else if years >= 1.0 {
        format!("{years:.2} years")
    } else if days >= 1.0 {
        format!("{days:.1} days")
    } else if days * 24.0 >= 1.0 {
        format!("{:.1} hours", days * 24.0)
    } else {
        format!("{:.1} minutes", days * 24.0 * 60.0)
    }
}

/// The lifetime forecast lines of every report (docs/lifetime.md).
pub fn print_lifetime(lifetime: &nandlab_core::metrics::LifetimeForecast) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let number = |value: Option<f64>, digits: usize| value.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"));
    let Some(to_first) = lifetime.host_gb_to_first_worn else {
        writeln!(out, "lifetime   no erases in the measured phase: no wear to extrapolate")?;
        return Ok(());
    };
    writeln!(
        out,
        "lifetime   rated {} P/E cycles: first block worn after {} host GB, {:.1} % of blocks after {} GB (TBW {} TB, {} DWPD over 5 years)",
        lifetime.rated_pe_cycles,
        number(Some(to_first), 1),
        lifetime.worn_share * 100.0,
        number(lifetime.host_gb_to_share_worn, 1),
        number(lifetime.tbw, 3),
        number(lifetime.dwpd_5_years, 3)
    )?;
    match lifetime.host_gb_per_day {
        Some(rate) => writeln!(
            out,
            "           at {rate:.3} GB/day ({}; {} DWPD): {} to the first worn block, {} to the share",
            lifetime.host_rate_source,
            number(lifetime.dwpd_workload, 3),
            duration_in_years(lifetime.years_to_first_worn),
            duration_in_years(lifetime.years_to_share_worn)
        )?,
        None => writeln!(out, "           years: no host write rate (set lifetime.host_gb_per_day)")?,
    }
    if let Some(limit) = lifetime.rber_limit {
        writeln!(
            out,
            "           RBER (Telomere eq. 27) reaches {limit:e} after {} host GB, {}",
            number(lifetime.host_gb_to_rber_limit, 1),
            duration_in_years(lifetime.years_to_rber_limit)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::duration_in_years;

    #[test]
    fn a_lifetime_is_printed_in_the_unit_that_reads_best() {
        let hour = 1.0 / (365.25 * 24.0);
        assert_eq!(duration_in_years(Some(12.345)), "12.35 years");
        assert_eq!(duration_in_years(Some(0.5)), "182.6 days");
        assert_eq!(duration_in_years(Some(5.0 * hour)), "5.0 hours");
        assert_eq!(duration_in_years(Some(hour / 4.0)), "15.0 minutes");
        assert_eq!(duration_in_years(Some(5_000.0)), "more than 1,000 years");
        assert_eq!(duration_in_years(None), "-");
        assert_eq!(duration_in_years(Some(f64::INFINITY)), "-");
    }
}
