//! `nandlab replay`: a block trace through a DISCARD policy onto the
//! simulated SSD, in counting mode or through the timing model.

use crate::commands::run::{bytes, print_timed_summary, ConfigArgs, ProgressReporter, Timing};
use anyhow::Context;
use nandlab_core::ftl::LayerKind;
use nandlab_core::host::classify::WriteFlags;
use nandlab_core::host::discard::{DiscardPolicy, SectorRange};
use nandlab_core::host::event::{HostEvent, HostOp, SECTOR_BYTES};
use nandlab_core::timing::Arrival;
use nandlab_core::units::{SimNs, StreamId};
use nandlab_core::workload::{EventSource, SourceError};
use nandlab_core::{Config, Report, Simulation};
use nandlab_trace::{Flags, Format, Op, ReadOptions, Record, TraceHeader};
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
    /// Write the full report as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
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

/// How `replay` runs a trace: which DISCARD policy, whether the device is
/// scaled to the trace, and in which mode.
#[derive(Clone, Copy, Debug)]
pub struct ReplayMode<'a> {
    pub policy: Option<DiscardPolicy>,
    pub fit: bool,
    /// `None`: counting mode; `Some(arrival)`: timed.
    pub timed: Option<Arrival>,
    /// A trace to age the device with instead of `[precondition]`.
    pub age_with: Option<&'a Path>,
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
    let mode = ReplayMode { policy: args.discard.map(Into::into), fit: args.fit, timed, age_with: args.age_with.as_deref() };
    let mut config = args.config.build()?.0;
    if args.device_mode == DeviceMode::OpenChannel {
        config.ftl.kind = LayerKind::OpenChannel;
    }
    let report = replay(&args.trace, format, args.device.clone(), config, mode)?;
    print_summary(&args.trace, &report)?;
    if let Some(timed) = &report.timed {
        print_timed_summary(timed)?;
    }
    if let Some(path) = &args.json {
        let file = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(file), &report)?;
    }
    Ok(())
}

/// Replays one trace file on the device `config` describes, aged as its
/// `[precondition]` says; shared with `reproduce`.
pub fn replay(
    path: &Path,
    format: Option<Format>,
    device: Option<String>,
    mut config: Config,
    mode: ReplayMode<'_>,
) -> anyhow::Result<Report> {
    let mut trace = nandlab_trace::open(path, format, &ReadOptions { device })?;
    let header = trace.header().clone();
    if let Some(policy) = mode.policy {
        config.discard.policy = policy;
    }
    if mode.fit {
        let size = header
            .device_size_bytes
            .with_context(|| format!("{}: the trace header gives no device size to --fit to", path.display()))?;
        config.device = config.device.fitted_to(size)?;
    }
    if let Some(arrival) = mode.timed {
        config.timing.arrival = arrival;
    }
    let mut simulation = Simulation::with_journal(&config, &journal_sectors(&header))?;
    let mut progress = ProgressReporter::new();
    match mode.age_with {
        Some(aging) => {
            let mut aging_trace = nandlab_trace::open(aging, None, &ReadOptions::default())?;
            let aging_header = aging_trace.header().clone();
            let mut events = TraceEvents::new(&mut aging_trace, &aging_header, aging);
            simulation.age_with(&mut events, &mut |update| progress.update(update))?;
        }
        None => {
            simulation.precondition(&mut |update| progress.update(update))?;
        }
    }
    let mut source = TraceEvents::new(&mut trace, &header, path);
    if mode.timed.is_some() {
        simulation.replay_timed(&mut source, &mut |update| progress.update(update))?;
    } else {
        simulation.replay(&mut source, &mut |update| progress.update(update))?;
    }
    progress.finish();
    Ok(simulation.report())
}

/// A trace file as the driver's event source.
pub(crate) struct TraceEvents<'a, I> {
    records: I,
    header: &'a TraceHeader,
    path: &'a Path,
    commits: CommitDetector,
}

impl<'a, I> TraceEvents<'a, I> {
    pub(crate) fn new(records: I, header: &'a TraceHeader, path: &'a Path) -> Self {
        Self { records, header, path, commits: CommitDetector::default() }
    }
}

impl<I, E> EventSource for TraceEvents<'_, I>
where
    I: Iterator<Item = Result<Record, E>>,
    E: std::fmt::Display,
{
    fn next_event(&mut self) -> Result<Option<HostEvent>, SourceError> {
        match self.records.next() {
            None => Ok(None),
            Some(Ok(record)) => Ok(Some(host_event(&record, self.header, &mut self.commits))),
            Some(Err(error)) => Err(SourceError(format!("{}: {error}", self.path.display()))),
        }
    }
}

/// The journal's extents in 512-byte sectors.
pub(crate) fn journal_sectors(header: &TraceHeader) -> Vec<SectorRange> {
    let scale = (u64::from(header.sector_size_bytes) / SECTOR_BYTES).max(1);
    header.journal.iter().map(|range| SectorRange::new(range.start.0 * scale, range.len * scale)).collect()
}

/// A trace record as the simulator's host sees it, in 512-byte sectors.
pub(crate) fn host_event(record: &Record, header: &TraceHeader, commits: &mut CommitDetector) -> HostEvent {
    let scale = u64::from(header.sector_size_bytes) / SECTOR_BYTES;
    let start = record.start.0 * scale.max(1);
    let sectors = SectorRange::new(start, u64::from(record.len.0) * scale.max(1));
    let op = match record.op {
        Op::Read => HostOp::Read,
        Op::Write => HostOp::Write,
        Op::Discard => HostOp::Discard,
        Op::Flush => HostOp::Flush,
    };
    let flags = WriteFlags {
        sync: record.flags.contains(Flags::SYNC),
        fua: record.flags.contains(Flags::FUA),
        preflush: record.flags.contains(Flags::PREFLUSH),
        meta: record.flags.contains(Flags::META),
    };
    HostEvent {
        flags,
        journal_thread: record.process.as_str().starts_with("jbd2"),
        journal_commit: commits.is_commit(record, header),
        stream: StreamId(record.stream.map_or(0, |tag| tag.0)),
        ..HostEvent::new(SimNs(record.timestamp.0), op, sectors)
    }
}

/// Recognises jbd2 commits. A commit record goes out with PREFLUSH|FUA; a
/// device without FUA (a loop device) gets it as a flush, the write, and a
/// flush. So a commit is an ordered write or flush from `jbd2/...`, an ordered
/// write into the journal, or a flush right after a journal write; when the
/// trace knows neither processes nor the journal, any ordered write or flush.
#[derive(Debug, Default)]
pub(crate) struct CommitDetector {
    last_write_in_journal: bool,
}

impl CommitDetector {
    pub(crate) fn is_commit(&mut self, record: &Record, header: &TraceHeader) -> bool {
        let ordered = record.flags.contains(Flags::FUA) || record.flags.contains(Flags::PREFLUSH) || record.op == Op::Flush;
        let in_journal = !header.journal.is_empty() && header.is_journal(record.start, record.len);
        let commit = match record.op {
            Op::Write => ordered && (in_journal || record.process.as_str().starts_with("jbd2")),
            Op::Flush => self.last_write_in_journal || record.process.as_str().starts_with("jbd2"),
            Op::Read | Op::Discard => false,
        };
        if record.op == Op::Write {
            self.last_write_in_journal = in_journal;
        }
        let nothing_known = header.journal.is_empty() && record.process.is_empty();
        commit || (nothing_known && ordered && matches!(record.op, Op::Write | Op::Flush))
    }
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
    let seconds = trace.last_ns.unwrap_or(0).saturating_sub(trace.first_ns.unwrap_or(0)) as f64 / 1e9;
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
