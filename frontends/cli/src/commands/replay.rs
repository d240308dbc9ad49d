//! `nandlab replay`: a block trace through a DISCARD policy onto the
//! simulated SSD, in counting mode or through the timing model (the replay
//! itself is `nandlab_lab::replay`).

use crate::shared::{bytes, print_timed_summary, ConfigArgs, ProgressReporter, Timing};
use nandlab_core::ftl::LayerKind;
use nandlab_core::host::discard::DiscardPolicy;
use nandlab_core::timing::Arrival;
use nandlab_lab::document::Document;
use nandlab_lab::replay::{replay, ReplayMode, TraceSource};
use nandlab_lab::Report;
use nandlab_trace::Format;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The trace (nandlab, tracefs text, blkparse text, MSR/UMass CSV, fio iolog).
    pub trace: PathBuf,
    /// Trace format; detected from the content when omitted.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// Keep only this device's requests (e.g. `7,0`), when the trace holds several.
    #[arg(long)]
    pub device: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// DISCARD policy: off (dropped), online (as issued), delay-d, periodic (fstrim-like).
    #[arg(long, value_enum)]
    pub discard: Option<DiscardArg>,
    /// Scale the device (blocks per plane, same over-provisioning) so its
    /// logical capacity equals the traced device's size from the trace header.
    #[arg(long)]
    pub fit: bool,
    /// Write the full report as JSON (`-`: to standard output, instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the report as a one-row Parquet table: every scalar of the JSON
    /// document, nested keys joined with `.` (`-`: to standard output).
    #[arg(long, value_name = "FILE")]
    pub parquet: Option<PathBuf>,
    /// Print no summary table.
    #[arg(long, short)]
    pub quiet: bool,
    /// `page-ftl`: the device-side page-mapped FTL. `open-channel`: an
    /// open-channel device under the pblk-like host FTL (the same as
    /// `--set ftl.kind=open-channel`; `[pblk]` keys; `--set
    /// host.classifier=journal --set pblk.separate=true` gives the journal
    /// its own lines).
    #[arg(long, value_enum, default_value_t = DeviceMode::PageFtl)]
    pub device_mode: DeviceMode,
    /// `on`: simulate time with the `[timing]` model (run time, throughput,
    /// latency percentiles, DISCARD cost). `off`: count operations only (fast).
    #[arg(long, value_enum, default_value_t = Timing::Off)]
    pub timing: Timing,
    /// Age the device by replaying this trace first (instead of `[precondition]`);
    /// its counts are reported apart from the measured replay.
    #[arg(long, value_name = "TRACE")]
    pub age_with: Option<PathBuf>,
    /// With `--timing on`: `trace` issues each request at its trace timestamp
    /// (open loop); `closed` keeps `timing.queue_depth` requests outstanding,
    /// so the trace runs as fast as the device allows.
    #[arg(long, value_enum, default_value_t = ArrivalArg::Trace)]
    pub arrival: ArrivalArg,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrivalArg {
    Trace,
    Closed,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceMode {
    PageFtl,
    OpenChannel,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscardArg {
    Off,
    Online,
    DelayD,
    Periodic,
}

impl From<DiscardArg> for DiscardPolicy {
    fn from(arg: DiscardArg) -> Self {
        match arg {
            DiscardArg::Off => Self::Off,
            DiscardArg::Online => Self::Online,
            DiscardArg::DelayD => Self::DelayD,
            DiscardArg::Periodic => Self::Periodic,
        }
    }
}

pub fn run(args: ReplayArgs) -> anyhow::Result<()> {
    if args.timing == Timing::Off && args.arrival != ArrivalArg::Trace {
        anyhow::bail!("--arrival needs --timing on");
    }
    let format = args.format.as_deref().map(Format::from_name).transpose()?;
    let timed = (args.timing == Timing::On).then_some(match args.arrival {
        ArrivalArg::Trace => Arrival::Open,
        ArrivalArg::Closed => Arrival::Closed,
    });
    let mode =
        ReplayMode { policy: args.discard.map(Into::into), fit: args.fit, timed, age_with: args.age_with.as_deref() };
    let mut config = args.config.build()?.0;
    if args.device_mode == DeviceMode::OpenChannel {
        config.ftl.kind = LayerKind::OpenChannel;
    }
    let ([json, parquet], to_stdout) = crate::output::open_all([args.json.as_deref(), args.parquet.as_deref()])?;
    let source = TraceSource { path: &args.trace, format, device: args.device.as_deref() };
    let mut progress = ProgressReporter::new();
    let started = std::time::Instant::now();
    let report = replay(&source, config, mode, &mut |update| {
        progress.update(update);
        Ok(())
    });
    progress.finish();
    let report = report?;
    if !(args.quiet || to_stdout) {
        print_summary(&args.trace, &report)?;
        report.timed.as_ref().map(print_timed_summary).transpose()?;
    }
    let wall = started.elapsed();
    let document = Document::new(&report, wall);
    json.map(|out| crate::output::write_json(out, &document)).transpose()?;
    parquet.map(|out| crate::output::write_document_parquet(out, &document)).transpose()?;
    Ok(())
}

fn print_summary(path: &Path, report: &Report) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let trace = &report.host;
    let measured = &report.measured.counters;
    let discard = &report.discard;
    writeln!(out, "nandlab {} — replay of {}, seed {}", report.nandlab_version, path.display(), report.seed)?;
    match &report.open_channel {
        None => writeln!(
            out,
            "device     {} logical, ρ = {:.4}, page FTL, gc {:?}, discard {:?}",
            bytes(report.device.logical_bytes),
            report.device.over_provisioning,
            report.config.ftl.gc_policy,
            report.config.discard.policy
        )?,
        Some(open_channel) => writeln!(
            out,
            "device     {} logical, ρ = {:.4}, open-channel ({} groups x {} PUs x {} chunks of {} pages, ws_min {}, \
             lines of {} pages) under pblk, separation {}, discard {:?}",
            bytes(report.device.logical_bytes),
            report.device.over_provisioning,
            open_channel.geometry.groups,
            open_channel.geometry.pus_per_group,
            open_channel.geometry.chunks_per_pu,
            open_channel.geometry.pages_per_chunk,
            open_channel.geometry.ws_min_pages,
            open_channel.line_layout.line_pages,
            if report.config.pblk.separate { "on" } else { "off" },
            report.config.discard.policy
        )?,
    }

    #[allow(clippy::cast_precision_loss)]
    let seconds = trace.span_ns() as f64 / 1e9;
    writeln!(
        out,
        "trace      {} reads, {} writes, {} discards, {} flushes, {} journal commits over {seconds:.1} s",
        trace.reads, trace.writes, trace.discards, trace.flushes, trace.journal_commits
    )?;
    match &report.precondition {
        Some(aging) => writeln!(
            out,
            "aging      {:?}: {} host pages written, {} GC copies, WAF {} (steady: {}; not counted below)",
            aging.kind,
            aging.phase.counters.host_pages_written,
            aging.phase.counters.gc_page_copies,
            aging.phase.waf.map_or_else(|| "-".to_owned(), |waf| format!("{waf:.3}")),
            aging.steady
        )?,
        None => writeln!(out, "aging      none: the replay starts on an empty device")?,
    }
    let rows = [
        ("DISCARD received", discard.received_commands),
        ("DISCARD issued", discard.issued_commands),
        ("DISCARD merged", discard.merged_commands),
        ("DISCARD cancelled", discard.cancelled_commands),
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
    for (label, value) in rows {
        writeln!(out, "  {label:<24}{value:>16}")?;
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
        ];
        for (label, value) in rows {
            writeln!(out, "  {label:<24}{value:>16}")?;
        }
    }
    writeln!(out, "  {:<24}{:>16}", "WAF", report.measured.waf.map_or_else(|| "-".to_owned(), |w| format!("{w:.3}")))?;
    Ok(())
}
