//! `nandlab replay`: a block trace through a DISCARD policy onto the
//! simulated SSD, in counting mode or through the timing model (the replay
//! itself is `nandlab_lab::replay`).

use crate::shared::{bytes, print_summary, print_timed_summary, ConfigArgs, ProgressReporter, Timing};
use nandlab_core::ftl::LayerKind;
use nandlab_core::host::discard::DiscardPolicy;
use nandlab_core::timing::Arrival;
use nandlab_dhrd::parse_byte_size;
use nandlab_lab::document::Document;
use nandlab_lab::replay::{fit_size, replay, FitSize, ReplayMode, SizeOrigin, TraceSource};
use nandlab_trace::Format;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The trace (nandlab, tracefs text, blkparse text, MSR/UMass CSV, fio iolog, MQSim or DiskSim ASCII).
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
    /// logical capacity equals the traced device's size: `--device-size`
    /// when given, else the trace header's, else up to the highest sector
    /// the trace touches (raw traces give no size); says which it used.
    #[arg(long)]
    pub fit: bool,
    /// The traced device's size (K, M, G, T or KiB … TiB: powers of 1024;
    /// KB … TB: powers of 1000); the device is scaled to it as `--fit` does.
    #[arg(long, value_name = "SIZE", value_parser = parse_byte_size)]
    pub device_size: Option<u64>,
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
    let mut mode = ReplayMode {
        policy: args.discard.map(Into::into),
        fit: args.fit,
        device_size: args.device_size.map(|bytes| FitSize { bytes, origin: SizeOrigin::Given }),
        timed,
        age_with: args.age_with.as_deref(),
    };
    let mut config = args.config.build()?.0;
    if args.device_mode == DeviceMode::OpenChannel {
        config.ftl.kind = LayerKind::OpenChannel;
    }
    let ([json, parquet], to_stdout) = crate::output::open_all([args.json.as_deref(), args.parquet.as_deref()])?;
    let source = TraceSource { path: &args.trace, format, device: args.device.as_deref() };
    // Resolved once here, so the replay does not scan the trace for its extent again.
    if let Some(size) = fit_size(&source, &mode)? {
        eprintln!("replay: device scaled to {} logical, from {}", bytes(size.bytes), size.origin);
        mode.device_size = Some(size);
    }
    let mut progress = ProgressReporter::new();
    let started = std::time::Instant::now();
    let report = replay(&source, config, mode, &mut |update| {
        progress.update(update);
        Ok(())
    });
    progress.finish();
    let report = report?;
    if !(args.quiet || to_stdout) {
        print_summary(&format!("replay of {}", args.trace.display()), &report)?;
        report.timed.as_ref().map(print_timed_summary).transpose()?;
    }
    let wall = started.elapsed();
    let document = Document::new(&report, wall);
    json.map(|out| crate::output::write_json(out, &document)).transpose()?;
    parquet.map(|out| crate::output::write_document_parquet(out, &document)).transpose()?;
    Ok(())
}
