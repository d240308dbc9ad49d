//! `nandlab replay`: a block trace through a DISCARD policy onto the
//! simulated SSD, in counting mode or through the timing model.

use crate::commands::run::{bytes, print_timed_summary, ConfigArgs, ProgressReporter, Timing};
use anyhow::Context;
use nandlab_core::host::discard::{DiscardPolicy, SectorRange};
use nandlab_core::replay::{HostEvent, HostOp, ReplayReport, Replayer, SECTOR_BYTES};
use nandlab_core::sim::{Phase, Progress};
use nandlab_core::timing::Arrival;
use nandlab_core::Config;
use nandlab_core::units::{SimNs, StreamId};
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
    /// Write the full report as JSON (`-`: to standard output, instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// `page-ftl`: the device-side page-mapped FTL. `open-channel`: an
    /// open-channel device under the pblk-like host FTL (`[pblk]` keys;
    /// `--set pblk.separate=true` gives the journal its own lines).
    #[arg(long, value_enum, default_value_t = DeviceMode::PageFtl)]
    pub device_mode: DeviceMode,
    /// `on`: simulate time with the `[timing]` model (run time, throughput,
    /// latency percentiles, DISCARD cost). `off`: count operations only (fast).
    #[arg(long, value_enum, default_value_t = Timing::Off)]
    pub timing: Timing,
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
pub struct ReplayMode {
    pub policy: Option<DiscardPolicy>,
    pub fit: bool,
    /// `None`: counting mode; `Some(arrival)`: timed.
    pub timed: Option<Arrival>,
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
    if args.device_mode == DeviceMode::OpenChannel {
        if args.timing == Timing::On {
            anyhow::bail!("--timing on is for the page-FTL device; the open-channel mode has its own pblk timing");
        }
        return crate::commands::reproduce_journal::replay_command(&args);
    }
    if args.timing == Timing::Off && args.arrival != ArrivalArg::Trace {
        anyhow::bail!("--arrival needs --timing on");
    }
    let format = args.format.as_deref().map(Format::from_name).transpose()?;
    let timed = (args.timing == Timing::On).then_some(match args.arrival {
        ArrivalArg::Trace => Arrival::Open,
        ArrivalArg::Closed => Arrival::Closed,
    });
    let mode = ReplayMode { policy: args.discard.map(Into::into), fit: args.fit, timed };
    let config = args.config.build()?.0;
    let ([json], to_stdout) = crate::output::open_all([args.json.as_deref()])?;
    let report = replay(&args.trace, format, args.device.clone(), config, mode)?;
    if !to_stdout {
        print_summary(&args.trace, &report)?;
        report.timed.as_ref().map(print_timed_summary).transpose()?;
    }
    json.map(|out| crate::output::write_json(out, &report)).transpose()?;
    Ok(())
}

/// Replays one trace file on the device `config` describes; shared with `reproduce`.
pub fn replay(
    path: &Path,
    format: Option<Format>,
    device: Option<String>,
    mut config: Config,
    mode: ReplayMode,
) -> anyhow::Result<ReplayReport> {
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
    let mut replayer = Replayer::new(&config)?;
    let mut progress = ProgressReporter::new();
    let mut commits = CommitDetector::default();
    let report = if mode.timed.is_some() {
        let mut read_error = None;
        let mut events = (&mut trace).map_while(|record| match record {
            Ok(record) => Some(host_event(&record, &header, &mut commits)),
            Err(error) => {
                read_error = Some(error);
                None
            }
        });
        let report = replayer.run_timed(&mut events, &mut |update| progress.update(update));
        if let Some(error) = read_error {
            return Err(error.into());
        }
        report?
    } else {
        let mut done: u64 = 0;
        for record in &mut trace {
            replayer.apply(&host_event(&record?, &header, &mut commits))?;
            done += 1;
            if done.is_multiple_of(65_536) {
                progress.update(Progress { phase: Phase::Measure, done, total: 0 });
            }
        }
        replayer.finish()?
    };
    progress.finish();
    Ok(report)
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
    HostEvent {
        time: SimNs(record.timestamp.0),
        op,
        sectors,
        journal_commit: commits.is_commit(record, header),
        stream: StreamId(record.stream.map_or(0, |tag| tag.0)),
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
    fn is_commit(&mut self, record: &Record, header: &TraceHeader) -> bool {
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

fn print_summary(path: &Path, report: &ReplayReport) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let trace = &report.trace;
    let measured = &report.measured.counters;
    let discard = &report.discard;
    writeln!(out, "nandlab {} — replay of {}, seed {}", report.nandlab_version, path.display(), report.seed)?;
    writeln!(
        out,
        "device     {} logical, ρ = {:.4}, gc {:?}, discard {:?}",
        bytes(report.device.logical_bytes),
        report.device.over_provisioning,
        report.config.ftl.gc_policy,
        report.config.discard.policy
    )?;
    #[allow(clippy::cast_precision_loss)]
    let seconds = trace.last_ns.unwrap_or(0).saturating_sub(trace.first_ns.unwrap_or(0)) as f64 / 1e9;
    writeln!(
        out,
        "trace      {} reads, {} writes, {} discards, {} flushes, {} journal commits over {seconds:.1} s",
        trace.reads, trace.writes, trace.discards, trace.flushes, trace.journal_commits
    )?;
    let rows = [
        ("DISCARD received", discard.received_commands),
        ("DISCARD issued", discard.issued_commands),
        ("DISCARD merged", discard.merged_commands),
        ("DISCARD cancelled", discard.cancelled_commands),
        ("sectors discarded", discard.issued_sectors),
        ("sectors cancelled", discard.cancelled_sectors),
        ("host pages written", measured.host_pages_written),
        ("host pages trimmed", measured.host_pages_trimmed),
        ("flash pages programmed", measured.flash_pages_programmed),
        ("GC page copies", measured.gc_page_copies),
        ("erases", measured.erases),
    ];
    for (label, value) in rows {
        writeln!(out, "  {label:<24}{value:>16}")?;
    }
    writeln!(out, "  {:<24}{:>16}", "WAF", report.measured.waf.map_or_else(|| "-".to_owned(), |w| format!("{w:.3}")))?;
    Ok(())
}
