//! The one driver of every run: it builds the translation layer the
//! configuration names (`ftl.kind`), ages the device (`[precondition]`, or an
//! aging source), runs a workload source through the host stages
//! (`[discard]`, `[host]`) onto the layer in counting mode or through the
//! timing engine (`[timing]`), and assembles the report. Synthetic runs,
//! trace replays and the open-channel mode all go through it.

use crate::config::{Config, ConfigError};
use crate::device::Geometry;
use crate::ftl::telomere::TelomereFtl;
use crate::ftl::wao_gc::{WaoGcConfig, WaoGcFtl};
use crate::ftl::{FtlError, LayerKind, PageFtl, TranslationLayer};
use crate::host::classify::ClassId;
use crate::host::discard::SectorRange;
use crate::host::pblk::{Pblk, PblkStats};
use crate::host::stages::HostStages;
use crate::metrics::{Counters, WafPoint};
pub use crate::progress::{Phase, Progress};
use crate::timing::TimedReport;
use crate::units::SimNs;
use crate::workload::jobs::{refuse_mixed_in_counting, JobReport};
use crate::workload::{SourceError, Synthetic};
#[cfg(feature = "verify")]
use crate::{
    ftl::{CheckAfter, Checked, FlashOp, InvariantError},
    units::{Lpn, StreamId, UnitId},
};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("simulation failed: {0}")]
    Ftl(#[from] FtlError),
    #[error("{0}")]
    Source(#[from] SourceError),
    /// A request the translation layer refused, with its position in the source.
    #[error("host request #{event}: {error}{hint}")]
    AtEvent { event: u64, error: FtlError, hint: &'static str },
    /// The caller raised the stop flag ([`Simulation::stop_when`]).
    #[error("stopped by the caller")]
    Stopped,
}

/// A synthetic run in counting mode: aging as configured, then the workload.
pub fn run(config: &Config, observer: &mut dyn FnMut(Progress)) -> Result<Report, SimError> {
    refuse_mixed_in_counting(&config.jobs)?;
    run_synthetic(config, Counting::ToEnd, observer)
}

/// A synthetic run through the timing model: aging as configured (in
/// counting mode), then the workload in simulated time.
pub fn run_timed(config: &Config, observer: &mut dyn FnMut(Progress)) -> Result<Report, SimError> {
    run_synthetic(config, Timed, observer)
}

/// Aging as configured, then the synthetic workload (or the `[[job]]`
/// tables) in `mode`.
fn run_synthetic(
    config: &Config,
    mode: impl PhaseMode,
    observer: &mut dyn FnMut(Progress),
) -> Result<Report, SimError> {
    age_and_run(Simulation::new(config)?, config, mode, observer)
}

/// A synthetic run in counting mode on `threads` threads: the report of
/// [`run`], bit for bit. One thread is the single-threaded run itself.
pub fn run_threads(config: &Config, threads: usize, observer: &mut dyn FnMut(Progress)) -> Result<Report, SimError> {
    if threads == 1 {
        return run(config, observer);
    }
    check_threads(config, threads)?;
    let geometry = config.validate()?;
    config.ftl.validate_for_full_device(&geometry, config.host_streams())?;
    let layer = Layer::Partitioned(Partitioned::new(&geometry, config, threads)?);
    age_and_run(Simulation::assemble(config, geometry, &[], layer)?, config, Counting::ToEnd, observer)
}

/// Ages `simulation` as configured, then runs the synthetic workload (or
/// the `[[job]]` tables) on it in `mode`.
fn age_and_run(
    mut simulation: Simulation,
    config: &Config,
    mode: impl PhaseMode,
    observer: &mut dyn FnMut(Progress),
) -> Result<Report, SimError> {
    simulation.precondition(observer)?;
    let workload = if config.jobs.is_empty() {
        Workload::Synthetic(config.workload.total_requests(&simulation.geometry))
    } else {
        Workload::Jobs
    };
    simulation.run_phase(workload, mode, observer)?;
    Ok(simulation.report())
}

/// The translation layers the driver runs (`ftl.kind`). Front ends build
/// one themselves only when configuration cannot describe it (Telomere's
/// admitted partitions, a page FTL with a wear model).
#[derive(Debug, Clone)]
pub enum Layer {
    Page(PageFtl),
    OpenChannel(Pblk),
    WaoGc(WaoGcFtl),
    Telomere(TelomereFtl),
    /// A page FTL under static allocation as independent partitions of its
    /// units, driven on threads ([`run_threads`]).
    Partitioned(Partitioned),
    /// Any of the others, its invariants checked after every call
    /// ([`Simulation::checked`]; `verify` builds only).
    #[cfg(feature = "verify")]
    Checked(Checked<Layer>),
}

impl Layer {
    fn kind(&self) -> LayerKind {
        match self {
            Layer::Page(_) | Layer::Partitioned(_) => LayerKind::Page,
            Layer::OpenChannel(_) => LayerKind::OpenChannel,
            Layer::WaoGc(_) => LayerKind::WaoGc,
            Layer::Telomere(_) => LayerKind::Telomere,
            #[cfg(feature = "verify")]
            Layer::Checked(checked) => checked.inner().kind(),
        }
    }

    /// The open-channel host FTL, when the layer is (or checks) one.
    fn pblk(&self) -> Option<&Pblk> {
        match self {
            Layer::OpenChannel(pblk) => Some(pblk),
            #[cfg(feature = "verify")]
            Layer::Checked(checked) => checked.inner().pblk(),
            _ => None,
        }
    }
}

/// Runs `$body` with `$ftl` bound to the concrete layer, so the hot loops
/// are compiled once per layer with no dynamic dispatch.
macro_rules! on_layer {
    ($layer:expr, $ftl:ident => $body:expr) => {
        match $layer {
            Layer::Page($ftl) => $body,
            Layer::OpenChannel($ftl) => $body,
            Layer::WaoGc($ftl) => $body,
            Layer::Telomere($ftl) => $body,
            Layer::Partitioned($ftl) => $body,
            #[cfg(feature = "verify")]
            Layer::Checked($ftl) => $body,
        }
    };
}

/// The layer in the enum, so that [`Checked`] can wrap any of them: each
/// call goes to the concrete layer.
#[cfg(feature = "verify")]
impl TranslationLayer for Layer {
    fn geometry(&self) -> &Geometry {
        on_layer!(self, ftl => ftl.geometry())
    }
    fn counters(&self) -> &Counters {
        on_layer!(self, ftl => ftl.counters())
    }
    fn erase_counts(&self) -> &[u32] {
        on_layer!(self, ftl => ftl.erase_counts())
    }
    fn memory_bytes(&self) -> usize {
        on_layer!(self, ftl => TranslationLayer::memory_bytes(ftl))
    }
    fn count_request(&mut self) {
        on_layer!(self, ftl => TranslationLayer::count_request(ftl));
    }
    fn write(&mut self, lpn: Lpn, stream: StreamId) -> Result<(), FtlError> {
        on_layer!(self, ftl => TranslationLayer::write(ftl, lpn, stream))
    }
    fn read(&mut self, lpn: Lpn) -> Result<(), FtlError> {
        on_layer!(self, ftl => TranslationLayer::read(ftl, lpn))
    }
    fn trim(&mut self, first: Lpn, pages: u32) -> Result<(), FtlError> {
        on_layer!(self, ftl => TranslationLayer::trim(ftl, first, pages))
    }
    fn flush(&mut self) -> Result<(), FtlError> {
        on_layer!(self, ftl => TranslationLayer::flush(ftl))
    }
    fn is_mapped(&self, lpn: Lpn) -> bool {
        on_layer!(self, ftl => ftl.is_mapped(lpn))
    }
    fn free_blocks(&self, unit: UnitId) -> u32 {
        on_layer!(self, ftl => TranslationLayer::free_blocks(ftl, unit))
    }
    fn collect_one(&mut self, unit: UnitId) -> Result<bool, FtlError> {
        on_layer!(self, ftl => TranslationLayer::collect_one(ftl, unit))
    }
    fn advance(&mut self, now: SimNs) -> Result<(), FtlError> {
        on_layer!(self, ftl => TranslationLayer::advance(ftl, now))
    }
    fn follows_time(&self) -> bool {
        on_layer!(self, ftl => ftl.follows_time())
    }
    fn set_recording(&mut self, on: bool) {
        on_layer!(self, ftl => ftl.set_recording(on));
    }
    fn recorded(&self) -> &[FlashOp] {
        on_layer!(self, ftl => ftl.recorded())
    }
    fn clear_recorded(&mut self) {
        on_layer!(self, ftl => ftl.clear_recorded());
    }
    fn check_invariants(&self) -> Result<(), InvariantError> {
        on_layer!(self, ftl => ftl.check_invariants())
    }
}

/// A run in progress: the device, the host stages, the synthetic workload
/// (the aging pattern of every run), and what was measured.
pub struct Simulation {
    config: Config,
    geometry: Geometry,
    journal: Vec<SectorRange>,
    layer: Layer,
    stages: HostStages,
    workload: Synthetic,
    precondition: Option<PreconditionReport>,
    measure_start: Counters,
    /// Every block's erase count when the measured phase began (the
    /// lifetime forecast's per-block wear rates).
    measure_start_erases: Vec<u32>,
    pblk_start: PblkStats,
    series: Vec<WafPoint>,
    timed: Option<TimedReport>,
    stop: Option<Arc<AtomicBool>>,
    jobs: Vec<JobReport>,
}

impl Simulation {
    pub fn new(config: &Config) -> Result<Self, SimError> {
        Self::with_journal(config, &[])
    }

    /// `journal`: the file system journal's sector ranges, when the workload
    /// source knows them (the classifier stage uses them).
    pub fn with_journal(config: &Config, journal: &[SectorRange]) -> Result<Self, SimError> {
        let geometry = config.validate()?;
        let layer = match config.ftl.kind {
            LayerKind::Page => {
                config.ftl.validate_for_full_device(&geometry, config.host_streams())?;
                Layer::Page(PageFtl::new(&geometry, &config.ftl, config.seed)?)
            }
            LayerKind::OpenChannel => {
                config.pblk.validate(&geometry)?;
                let classes = HostStages::new(&geometry, &config.host, &config.discard, journal)?.classes();
                let journal_class = classes.iter().position(|class| class == "journal");
                let pblk = Pblk::new(&geometry, &config.pblk, classes.len())
                    .map_err(|error| ConfigError::new("pblk", error.to_string()))?
                    .with_log_class(journal_class.and_then(|class| u8::try_from(class).ok()).map(ClassId));
                Layer::OpenChannel(pblk)
            }
            LayerKind::WaoGc => {
                // WAO-GC has one write point and ignores placement hints: a
                // classifier's streams would be silently merged.
                if config.host_streams() > 1 {
                    return Err(ConfigError::new(
                        "host.classifier",
                        "WAO-GC (ftl.kind = \"wao-gc\") writes every stream to one write point: set \
                         host.classifier = \"none\" (and no [[host.class]] tables)",
                    )
                    .into());
                }
                let timing = &config.timing;
                let wao = WaoGcConfig::from_latencies(
                    SimNs(timing.read_ns),
                    SimNs(timing.program_ns),
                    SimNs(timing.erase_ns),
                    config.ftl.gc_threshold_blocks,
                );
                Layer::WaoGc(WaoGcFtl::new(&geometry, wao))
            }
            LayerKind::Telomere => {
                return Err(ConfigError::new(
                    "ftl.kind",
                    "\"telomere\" needs the partitions of an admitted task set: run it with `nandlab admit TASKS --simulate SECONDS`",
                )
                .into())
            }
        };
        Self::assemble(config, geometry, journal, layer)
    }

    /// A run on a layer the caller built (Telomere's planned partitions, a
    /// page FTL with a wear model). The configuration describes the same
    /// device (its geometry must be the layer's); `ftl.kind` is set from
    /// the layer.
    pub fn with_layer(config: &Config, layer: Layer) -> Result<Self, SimError> {
        let mut config = config.clone();
        config.ftl.kind = layer.kind();
        let geometry = config.validate()?;
        let layer_geometry = *on_layer!(&layer, ftl => ftl.geometry());
        if layer_geometry != geometry {
            return Err(ConfigError::new(
                "device",
                format!("describes {geometry:?}, but the translation layer was built for {layer_geometry:?}"),
            )
            .into());
        }
        Self::assemble(&config, geometry, &[], layer)
    }

    fn assemble(config: &Config, geometry: Geometry, journal: &[SectorRange], layer: Layer) -> Result<Self, SimError> {
        let (measure_start, measure_start_erases) =
            on_layer!(&layer, ftl => (ftl.counters().clone(), ftl.erase_counts().to_vec()));
        Ok(Self {
            stages: HostStages::new(&geometry, &config.host, &config.discard, journal)?,
            workload: Synthetic::new(&config.workload, &geometry, config.seed.wrapping_add(1)),
            config: config.clone(),
            geometry,
            journal: journal.to_vec(),
            layer,
            precondition: None,
            measure_start,
            measure_start_erases,
            pblk_start: PblkStats::default(),
            series: Vec::new(),
            timed: None,
            stop: None,
            jobs: Vec::new(),
        })
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The open-channel host FTL, when the run uses it.
    pub fn pblk(&self) -> Option<&Pblk> {
        self.layer.pblk()
    }

    /// The same run with the layer's invariants checked after every
    /// request ([`Checked`]): the next call fails naming the one broken.
    #[cfg(feature = "verify")]
    #[must_use]
    pub fn checked(self) -> Self {
        Self { layer: Layer::Checked(Checked::new(self.layer, CheckAfter::EveryRequest)), ..self }
    }

    /// Checks the translation layer's invariants now
    /// ([`TranslationLayer::check_invariants`]).
    pub fn check_invariants(&self) -> Result<(), crate::ftl::InvariantError> {
        on_layer!(&self.layer, ftl => ftl.check_invariants())
    }

    /// Counting phases stop with [`SimError::Stopped`] soon after `flag` is
    /// raised (they look at it each time they report progress, every
    /// 65,536 events): how a front end stops a long aging on Ctrl-C.
    pub fn stop_when(&mut self, flag: Arc<AtomicBool>) {
        self.stop = Some(flag);
    }

    /// The translation layer the run drives.
    pub fn layer(&self) -> &Layer {
        &self.layer
    }

    /// Erase count of every block (chunk) of the flash.
    pub fn erase_counts(&self) -> &[u32] {
        on_layer!(&self.layer, ftl => ftl.erase_counts())
    }

    /// The layer's cumulative counters (aging included).
    pub fn counters(&self) -> &Counters {
        on_layer!(&self.layer, ftl => ftl.counters())
    }
}

mod aging;
mod ahead;
mod drive;
mod feed;
mod live;
mod parallel;
mod phases;
mod precondition;
mod report;
mod staged;
mod watch;
use aging::{SteadyOrSpent, SteadyRule};
use ahead::{Ahead, Queued};
use drive::{drive, drive_synthetic};
use feed::{at_event, EventFeed};
pub use live::{EventTicket, LiveDevice};
pub use parallel::{check_threads, Partitioned, THREADS_MAX};
pub use phases::{Counting, PhaseMode, StopRule, Timed, Workload};
pub use report::{AgingKind, DeviceSummary, OpenChannelSummary, PhaseReport, PreconditionReport, Report};
use staged::{PageRequests, StagedSource};
use watch::Unwatched;

#[cfg(test)]
mod tests;
