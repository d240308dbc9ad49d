//! `nandlab replay`: a block trace through a DISCARD policy onto the
//! simulated SSD, in counting mode or through the timing model (the replay
//! itself is `nandlab_lab::replay`).

use crate::shared::{bytes, print_summary, print_timed_summary, ConfigArgs, ProgressReporter, Timing, TraceInputArgs};
use nandlab_convert::f64_of;
use nandlab_core::device::{DeviceConfig, Geometry};
use nandlab_core::ftl::LayerKind;
use nandlab_core::host::discard::DiscardPolicy;
use nandlab_core::host::stages::HostCounts;
use nandlab_core::sim::{Phase, Progress};
use nandlab_core::timing::Arrival;
use nandlab_core::Report;
use nandlab_dhrd::parse_byte_size;
use nandlab_lab::document::Document;
use nandlab_lab::replay::{fit_error, fit_size, fitted_device, replay, FitSize, ReplayMode, SizeOrigin, TraceSource};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The trace (nandlab, tracefs text, blkparse text, MSR/UMass CSV, fio iolog, MQSim or DiskSim ASCII).
    pub trace: PathBuf,
    #[command(flatten)]
    pub input: TraceInputArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// DISCARD policy: off (dropped), online (as issued), delay-d, periodic (fstrim-like).
    /// Default: the configuration's `discard.policy` (`online` in every preset).
    #[arg(long, value_enum)]
    pub discard: Option<DiscardArg>,
    /// Scale the device (blocks per plane, same over-provisioning) so its
    /// logical capacity equals the traced device's size: `--device-size`
    /// when given, else the trace header's, else up to the highest sector
    /// the trace touches (raw traces give no size); says which it used.
    /// When the preset's parallel units would each get too few spare blocks
    /// for the GC reserve, takes fewer units (or, below one unit's worth, a
    /// larger device), and prints the geometry it chose.
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
    /// A bare `--timing` means `on`.
    #[arg(long, value_enum, default_value_t = Timing::Off, num_args = 0..=1, default_missing_value = "on")]
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
    let format = args.input.format()?;
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
    let source = TraceSource { path: &args.trace, format, device: args.input.trace_device.as_deref() };
    // Resolved once here, so the replay does not scan the trace for its extent again.
    if let Some(size) = fit_size(&source, &mode)? {
        let fitted = fitted_device(&config, size).map_err(|error| fit_error(error, size))?;
        eprintln!("replay: device scaled to {}", describe_fit(&config.device, &fitted, size));
        mode.device_size = Some(size);
    }
    let mut progress = ProgressReporter::new();
    let started = Instant::now();
    let mut clock = ReplayClock::new(started);
    let report = replay(&source, config, mode, &mut |update| {
        clock.observe(update);
        progress.update(update);
        Ok(())
    });
    progress.finish();
    let report = report?;
    crate::shared::warn_lifetime(&report.lifetime);
    let speed = clock.speed(&report.host);
    if !(args.quiet || to_stdout) {
        print_summary(&format!("replay of {}", args.trace.display()), &report)?;
        report.timed.as_ref().map(print_timed_summary).transpose()?;
        println!(
            "speed      {} requests replayed at {:.0} requests/s ({:.2} s of wall time, aging excluded)",
            speed.requests, speed.requests_per_s, speed.wall_s
        );
    }
    let wall = started.elapsed();
    let replayed = ReplayDocument { report: &report, replay_speed: speed };
    let document = Document::new(&replayed, wall);
    json.map(|out| crate::output::write_json(out, &document)).transpose()?;
    parquet.map(|out| crate::output::write_document_parquet(out, &document)).transpose()?;
    Ok(())
}

/// What `--fit` chose, for the user: the capacity, where its size came
/// from, and the geometry when it is not the configuration's own units
/// with more or fewer blocks.
fn describe_fit(config: &DeviceConfig, fitted: &DeviceConfig, size: FitSize) -> String {
    let geometry = Geometry::from_config(fitted).ok();
    let logical = geometry.map_or(size.bytes, |geometry| geometry.logical_bytes());
    let mut text = format!("{} logical, from {}", bytes(logical), size.origin);
    if logical > size.bytes {
        text += &format!(
            " (which gives {}: one parallel unit of that size has too few spare blocks for the GC reserve, \
             so the device is larger, at the same over-provisioning)",
            bytes(size.bytes)
        );
    }
    text += &format!(
        "; {} channels x {} chips x {} dies x {} planes of {} blocks of {} x {} B pages",
        fitted.channels,
        fitted.chips_per_channel,
        fitted.dies_per_chip,
        fitted.planes_per_die,
        fitted.blocks_per_plane,
        fitted.pages_per_block,
        fitted.page_size
    );
    if fitted.units() < config.units() {
        text += &format!(
            " ({} parallel units instead of {}: with all of them each would have too few spare blocks for \
             the GC reserve)",
            fitted.units(),
            config.units()
        );
    }
    text
}

/// The JSON document of a replay: the report and how fast the trace replayed.
#[derive(serde::Serialize)]
struct ReplayDocument<'a> {
    #[serde(flatten)]
    report: &'a Report,
    replay_speed: ReplaySpeed,
}

/// The measured trace's requests per second of wall time. Aging (the
/// `[precondition]` or `--age-with`) and the `--fit` pass are left out, so
/// the figure is the replay's own speed whatever precedes it.
#[derive(serde::Serialize, Debug, Clone, Copy)]
struct ReplaySpeed {
    /// Trace requests the measured replay took (reads, writes, DISCARDs, flushes).
    requests: u64,
    /// Wall time of the measured replay.
    wall_s: f64,
    requests_per_s: f64,
}

/// Times the measured phase from the progress updates: the clock starts at
/// the first update of the measured phase, which comes after its first
/// [`nandlab_lab::OBSERVER_INTERVAL`] requests, and the rate is taken over
/// the requests after it. A trace too short for any update is timed from
/// the start of the run (aging included).
struct ReplayClock {
    started: Instant,
    measure_started: Option<(Instant, u64)>,
}

impl ReplayClock {
    fn new(started: Instant) -> Self {
        Self { started, measure_started: None }
    }

    fn observe(&mut self, update: Progress) {
        if update.phase == Phase::Measure && self.measure_started.is_none() {
            self.measure_started = Some((Instant::now(), update.done));
        }
    }

    fn speed(&self, host: &HostCounts) -> ReplaySpeed {
        let requests = host.reads + host.writes + host.discards + host.flushes;
        let (since, before) = self.measure_started.unwrap_or((self.started, 0));
        let wall_s = since.elapsed().as_secs_f64();
        let requests_per_s = if wall_s > 0.0 { f64_of(requests.saturating_sub(before)) / wall_s } else { 0.0 };
        ReplaySpeed { requests, wall_s, requests_per_s }
    }
}
