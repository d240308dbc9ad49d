//! The one driver of every run: it builds the translation layer the
//! configuration names (`ftl.kind`), ages the device (`[precondition]`, or an
//! aging source), runs a workload source through the host stages
//! (`[discard]`, `[host]`) onto the layer in counting mode or through the
//! timing engine (`[timing]`), and assembles the report. Synthetic runs,
//! trace replays and the open-channel mode all go through it.

use crate::config::{Config, ConfigError};
use crate::device::open_channel::OpenChannelGeometry;
use crate::device::Geometry;
use crate::ftl::telomere::TelomereFtl;
use crate::ftl::wao_gc::{WaoGcConfig, WaoGcFtl};
use crate::ftl::{FtlError, LayerKind, PageFtl, TranslationLayer};
use crate::host::classify::ClassId;
use crate::host::discard::{DiscardStats, SectorRange};
use crate::host::event::{HostEvent, HostOp};
use crate::host::pblk::{LineLayout, Pblk, PblkStats};
use crate::host::stages::{HostCounts, HostStages};
use crate::host::{submit, Op, Request};
use crate::metrics::{Counters, EraseStats, LifetimeForecast, WafPoint, WafSeries, WearInputs};
use crate::timing::{Arrival, Arrivals, Engine, Interface, RequestSource, TimedReport, TimedRequest};
use crate::units::{SimNs, StreamId};
use crate::workload::jobs::{refuse_mixed_in_counting, JobReport, JobTally, JobsSource};
use crate::workload::{AgingChoice, EventSource, IterEvents, SourceError, Synthetic, SyntheticEvents};
#[cfg(feature = "verify")]
use crate::{
    ftl::{CheckAfter, Checked, FlashOp, InvariantError},
    units::{Lpn, UnitId},
};
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Which part of a run is under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Fill,
    Overwrite,
    /// Workload aging: passes of a trace before the measured phase.
    AgingTrace,
    Measure,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Self::Fill => "precondition: fill",
            Self::Overwrite => "precondition: overwrite to steady state",
            Self::AgingTrace => "aging: workload passes",
            Self::Measure => "measure",
        }
    }
}

/// Progress reported to an observer: `done` of `total` requests of `phase`
/// (`total` 0 when the source's length is unknown).
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub phase: Phase,
    pub done: u64,
    pub total: u64,
}

/// Counts of one phase with derived figures.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseReport {
    #[serde(flatten)]
    pub counters: Counters,
    pub waf: Option<f64>,
    /// `ftl.discard = "dftl"`: the share of mapping uses that found their
    /// translation page cached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map_cache_hit_ratio: Option<f64>,
}

impl PhaseReport {
    pub(crate) fn new(counters: Counters) -> Self {
        let waf = counters.waf();
        let uses = counters.map_cache_hits + counters.map_cache_misses;
        let map_cache_hit_ratio = crate::metrics::ratio(counters.map_cache_hits, uses);
        Self { counters, waf, map_cache_hit_ratio }
    }
}

/// How the device was aged before the measured phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgingKind {
    /// A fraction of the logical space written once, in order.
    Fill,
    /// Filled, then overwritten with the workload's own mix until the WAF settled.
    FillSteady,
    /// Overwritten with the workload's own mix until the WAF settled (no fill).
    Steady,
    /// Workload aging (`precondition.kind = "workload"`): from an empty
    /// device, the workload itself repeated until the WAF settled.
    Workload,
}

impl AgingKind {
    /// The name the report gives it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fill => "fill",
            Self::FillSteady => "fill-steady",
            Self::Steady => "steady",
            Self::Workload => "workload",
        }
    }
}

/// What aging did and cost, apart from the measured phase.
#[derive(Clone, Debug, Serialize)]
pub struct PreconditionReport {
    pub kind: AgingKind,
    /// Fraction of the logical space the fill wrote.
    pub fill_fraction: f64,
    #[serde(flatten)]
    pub phase: PhaseReport,
    /// Whether the windowed WAF settled within the tolerance (true for
    /// aging that does not look for a steady state).
    pub steady: bool,
    /// WAF of the last overwrite window.
    pub final_window_waf: Option<f64>,
    /// Workload aging of a replay: whole passes of the aging trace run (a
    /// pass cut short by the budget not counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passes: Option<u64>,
    /// Logical pages holding data when aging ended (workload aging: only
    /// what the workload wrote).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_pages: Option<u64>,
    /// The GC debt aging left, paid before the measured phase
    /// ([`Simulation::settle`]); not counted in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debt_paid: Option<PhaseReport>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DeviceSummary {
    #[serde(flatten)]
    pub geometry: Geometry,
    pub parallel_units: u32,
    pub blocks: u32,
    pub physical_pages: u32,
    pub over_provisioning: f64,
    pub physical_bytes: u64,
    pub logical_bytes: u64,
}

impl DeviceSummary {
    pub fn new(geometry: &Geometry) -> Self {
        Self {
            geometry: *geometry,
            parallel_units: geometry.units(),
            blocks: geometry.blocks(),
            physical_pages: geometry.physical_pages(),
            over_provisioning: geometry.over_provisioning(),
            physical_bytes: geometry.physical_bytes(),
            logical_bytes: geometry.logical_bytes(),
        }
    }
}

/// The open-channel device and its host FTL, as the report shows them.
#[derive(Clone, Debug, Serialize)]
pub struct OpenChannelSummary {
    pub geometry: OpenChannelGeometry,
    pub line_layout: LineLayout,
    /// pblk's own counts over the measured phase.
    pub pblk: PblkStats,
    /// Lines open at the end that hold pages of more than one class.
    pub mixed_lines_open: usize,
}

/// Everything a run produced. Serialized as the JSON output.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub nandlab_version: &'static str,
    pub seed: u64,
    pub config: Config,
    pub device: DeviceSummary,
    /// Present when `ftl.kind = "open-channel"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_channel: Option<OpenChannelSummary>,
    pub precondition: Option<PreconditionReport>,
    /// What the host stages received in the measured phase.
    pub host: HostCounts,
    pub discard: DiscardStats,
    /// The write classes (placement hints) of the classifier stage.
    pub classes: Vec<String>,
    pub measured: PhaseReport,
    pub erase_counts: EraseStats,
    pub waf_series: Vec<WafPoint>,
    pub memory_bytes_per_physical_page: f64,
    /// Throughput and latency of a timed run (`--timing on`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timed: Option<TimedReport>,
    /// How long the device lasts at the measured workload (docs/lifetime.md).
    pub lifetime: LifetimeForecast,
    /// Per-job results of a run with `[[job]]` tables (absent without).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobReport>,
}

/// How often (in events) the observer hears about progress.
const PROGRESS_INTERVAL: u64 = 1 << 16;

/// Requests turned from events ahead of their submission, so the layer's
/// mapping entries for them are in cache when they run. Sources and host
/// stages never depend on the layer's state, so this changes nothing else.
const LOOKAHEAD: usize = 16;

/// A synthetic run in counting mode: aging as configured, then the workload.
pub fn run(config: &Config, observer: &mut dyn FnMut(Progress)) -> Result<Report, SimError> {
    refuse_mixed_in_counting(&config.jobs)?;
    let mut simulation = Simulation::new(config)?;
    simulation.precondition(observer)?;
    if config.jobs.is_empty() {
        let requests = config.workload.total_requests(&simulation.geometry);
        simulation.measure(requests, observer)?;
    } else {
        simulation.measure_jobs(observer)?;
    }
    Ok(simulation.report())
}

/// A synthetic run through the timing model: aging as configured (in
/// counting mode), then the workload in simulated time.
pub fn run_timed(config: &Config, observer: &mut dyn FnMut(Progress)) -> Result<Report, SimError> {
    let mut simulation = Simulation::new(config)?;
    simulation.precondition(observer)?;
    if config.jobs.is_empty() {
        let requests = config.workload.total_requests(&simulation.geometry);
        simulation.measure_timed(requests, observer)?;
    } else {
        simulation.measure_jobs_timed(observer)?;
    }
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

    /// Ages the device as `[precondition]` says (`kind`, by default random
    /// fill): nothing; random fill — a sequential fill of `fill_fraction` of
    /// the logical space and/or overwrites with the workload's own mix
    /// (`[workload]`, trims and reads included) until the windowed WAF is
    /// steady or the budget is spent; or workload aging — the same
    /// overwrites from an empty device, windows counted once the device
    /// has turned over. Reported apart from the measured phase.
    pub fn precondition(
        &mut self,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<Option<&PreconditionReport>, SimError> {
        let settings = self.config.precondition.clone();
        let kind = match (settings.kind_or(AgingChoice::RandomFill), settings.fill, settings.overwrite) {
            (AgingChoice::None, _, _) | (AgingChoice::RandomFill, false, false) => return Ok(None),
            (AgingChoice::Workload, _, _) => AgingKind::Workload,
            (AgingChoice::RandomFill, true, false) => AgingKind::Fill,
            (AgingChoice::RandomFill, true, true) => AgingKind::FillSteady,
            (AgingChoice::RandomFill, false, true) => AgingKind::Steady,
        };
        let start = self.counters().clone();
        let fills = settings.fill && kind != AgingKind::Workload;
        let fill_fraction = if fills { settings.fill_fraction } else { 0.0 };
        if fills {
            self.fill(fill_fraction, observer)?;
        }
        let (steady, final_window_waf) = match kind {
            AgingKind::Workload => self.overwrite_to_steady(self.turnover_pages(), observer)?,
            _ if settings.overwrite => self.overwrite_to_steady(0, observer)?,
            _ => (true, None),
        };
        let phase = PhaseReport::new(self.counters().since(&start));
        self.start_measuring();
        let report = PreconditionReport {
            kind,
            fill_fraction,
            phase,
            steady,
            final_window_waf,
            passes: None,
            valid_pages: None,
            debt_paid: None,
        };
        Ok(Some(self.precondition.insert(report)))
    }

    /// Ages the device by running `source` (an aging trace) through fresh
    /// host stages; reported apart from the measured phase.
    pub fn age_with(
        &mut self,
        source: &mut dyn EventSource,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<&PreconditionReport, SimError> {
        self.age_with_until(source, observer, &mut |_| false)
    }

    /// [`Simulation::age_with`] that also stops as soon as `settled` says
    /// so, shown the layer's cumulative counters after each request: how a
    /// caller ages with a looping trace until its own steady-state rule holds.
    pub fn age_with_until(
        &mut self,
        source: &mut dyn EventSource,
        observer: &mut dyn FnMut(Progress),
        settled: &mut dyn FnMut(&Counters) -> bool,
    ) -> Result<&PreconditionReport, SimError> {
        let start = self.counters().clone();
        let mut stages = HostStages::new(&self.geometry, &self.config.host, &self.config.discard, &self.journal)?;
        on_layer!(&mut self.layer, ftl => drive(ftl, &mut stages, EventFeed::new(source), Phase::AgingTrace, observer, |_, counters: &Counters, _: &[u32]| settled(counters), self.stop.as_deref()))?;
        on_layer!(&mut self.layer, ftl => TranslationLayer::flush(ftl))?;
        let phase = PhaseReport::new(self.counters().since(&start));
        self.start_measuring();
        let report = PreconditionReport {
            kind: AgingKind::Workload,
            fill_fraction: 0.0,
            phase,
            steady: true,
            final_window_waf: None,
            passes: None,
            valid_pages: None,
            debt_paid: None,
        };
        Ok(self.precondition.insert(report))
    }

    fn fill(&mut self, fraction: f64, observer: &mut dyn FnMut(Progress)) -> Result<(), SimError> {
        const CHUNK_PAGES: u32 = 256;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let pages = (f64::from(self.geometry.logical_pages) * fraction).round() as u32;
        let stream = self.config.workload.stream;
        let sectors_per_page = u64::from(self.geometry.sectors_per_page());
        let chunks = (0..pages).step_by(CHUNK_PAGES as usize).map(move |first| {
            let length = CHUNK_PAGES.min(pages - first);
            let sectors = SectorRange::new(u64::from(first) * sectors_per_page, u64::from(length) * sectors_per_page);
            HostEvent { stream: StreamId(stream), ..HostEvent::new(SimNs(0), HostOp::Write, sectors) }
        });
        let mut source = IterEvents(chunks);
        let mut stages = self.aging_stages()?;
        on_layer!(&mut self.layer, ftl => drive(ftl, &mut stages, EventFeed::new(&mut source), Phase::Fill, observer, Unwatched, self.stop.as_deref()))?;
        on_layer!(&mut self.layer, ftl => TranslationLayer::flush(ftl))?;
        Ok(())
    }

    /// Overwrites with the workload's own mix until `steady_windows` windows
    /// in a row change the WAF by at most `steady_tolerance`, or
    /// `max_device_writes` of host page writes are spent; returns whether
    /// the WAF settled and the last window's WAF. Windows begin once
    /// `warmup_pages` host pages are written.
    fn overwrite_to_steady(
        &mut self,
        warmup_pages: u64,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<(bool, Option<f64>), SimError> {
        let settings = &self.config.precondition;
        let logical = f64::from(self.geometry.logical_pages);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let window_pages = ((settings.window_device_fraction * logical) as u64).max(1);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let budget_pages = (settings.max_device_writes * logical) as u64;
        let workload = &self.config.workload;
        // Reads and trims spend requests, not the write budget: draw enough
        // requests for the budget's writes (a mix without writes stops at once).
        let write_fraction = 1.0 - workload.read_fraction - workload.trim_fraction;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
        let requests = if write_fraction > 0.0 {
            ((budget_pages / u64::from(workload.request_pages)) as f64 / write_fraction).ceil() as u64
        } else {
            0
        };
        let mut rule = SteadyRule::new(settings, window_pages, warmup_pages, self.counters());
        let observe = SteadyOrSpent::new(&mut rule, self.counters().host_pages_written, budget_pages);
        let mut stages = self.aging_stages()?;
        let mut source = SyntheticEvents::new(&mut self.workload, &self.geometry, requests, None);
        on_layer!(&mut self.layer, ftl => drive_synthetic(ftl, &mut stages, &mut source, Phase::Overwrite, observer, observe, self.stop.as_deref()))?;
        Ok((rule.reached() || requests == 0, rule.last_window_waf()))
    }

    /// Host stages for synthetic aging: DISCARDs pass at once, no classes.
    fn aging_stages(&self) -> Result<HostStages, ConfigError> {
        let discard = crate::host::discard::DiscardConfig::default();
        let host = crate::host::stages::HostConfig::default();
        HostStages::new(&self.geometry, &host, &discard, &[])
    }

    fn start_measuring(&mut self) {
        self.measure_start = self.counters().clone();
        self.measure_start_erases = self.erase_counts().to_vec();
        if let Some(pblk) = self.layer.pblk() {
            self.pblk_start = pblk.stats().clone();
        }
    }

    /// The WAF series of a measured phase: windows of `metrics.window_pages`,
    /// by default a hundredth of the phase's pages (or, when its length is
    /// unknown, a twentieth of the logical space).
    fn phase_series(&self, pages: Option<u64>) -> WafSeries {
        let default = || match pages {
            Some(pages) => (pages / 100).max(1),
            None => (u64::from(self.geometry.logical_pages) / 20).max(1),
        };
        WafSeries::new(self.config.metrics.window_pages.unwrap_or_else(default), self.counters())
    }

    /// Runs `requests` requests of the synthetic workload in counting mode.
    pub fn measure(&mut self, requests: u64, observer: &mut dyn FnMut(Progress)) -> Result<(), SimError> {
        let mut series = self.phase_series(Some(requests * u64::from(self.config.workload.request_pages)));
        let mut source = SyntheticEvents::new(&mut self.workload, &self.geometry, requests, None);
        on_layer!(&mut self.layer, ftl => drive_synthetic(ftl, &mut self.stages, &mut source, Phase::Measure, observer, &mut series, self.stop.as_deref()))?;
        self.series.extend(series.into_points());
        Ok(())
    }

    /// Runs the `[[job]]` tables together in counting mode (see
    /// [`JobsSource`]), crediting each request's cost to its job.
    pub fn measure_jobs(&mut self, observer: &mut dyn FnMut(Progress)) -> Result<(), SimError> {
        refuse_mixed_in_counting(&self.config.jobs)?;
        let mut source = JobsSource::new(&self.config.jobs, &self.geometry, self.config.seed);
        let pages = self
            .config
            .jobs
            .iter()
            .map(|job| job.total_requests(&self.geometry) * u64::from(job.workload.request_pages));
        let mut series = self.phase_series(Some(pages.sum()));
        let mut tally = JobTally::new(&self.config.jobs, self.counters());
        let observe = |job, counters: &Counters, _: &[u32]| {
            series.observe(counters);
            tally.observe(job, counters);
            false
        };
        on_layer!(&mut self.layer, ftl => drive(ftl, &mut self.stages, EventFeed::new(&mut source), Phase::Measure, observer, observe, self.stop.as_deref()))?;
        self.series.extend(series.into_points());
        self.jobs = tally.finish();
        Ok(())
    }

    /// Runs the `[[job]]` tables together through the timing model: open
    /// jobs (`rate_iops`) arrive at their Poisson times on round-robin
    /// queues; closed jobs each keep their own host queue at their
    /// `queue_depth` ([`Engine::with_job_queues`]), beside the open ones
    /// when both kinds run. Per-job IOPS, MB/s and latency go to `timed.jobs`.
    pub fn measure_jobs_timed(&mut self, observer: &mut dyn FnMut(Progress)) -> Result<&TimedReport, SimError> {
        let closed_jobs: Vec<(u16, u32)> = (0u16..)
            .zip(&self.config.jobs)
            .filter(|(_, job)| job.rate_iops.is_none())
            .map(|(index, job)| (index, job.queue_depth))
            .collect();
        if !closed_jobs.is_empty() && self.config.timing.interface == Interface::Sata {
            let reason =
                "closed-loop jobs each need their own host queue; SATA has one (give the jobs a rate_iops or use nvme)";
            return Err(ConfigError::new("timing.interface", reason).into());
        }
        let closed = closed_jobs.len() == self.config.jobs.len();
        let requests = self.config.jobs.iter().map(|job| job.total_requests(&self.geometry)).sum();
        let mut source = JobsSource::new(&self.config.jobs, &self.geometry, self.config.seed);
        let mut series = self.phase_series(None);
        let mut staged = StagedSource::new(&mut source, &mut self.stages).with_jobs(self.config.jobs.len());
        let mut timing = self.config.timing.clone();
        timing.arrival = if closed { Arrival::Closed } else { Arrival::Open };
        let mut engine = Engine::new(&self.geometry, &timing, &self.config.ftl);
        if !closed_jobs.is_empty() {
            engine = engine.with_job_queues(&closed_jobs);
        }
        let report = on_layer!(&mut self.layer, ftl => engine.run_with_waf(ftl, &mut staged, requests, observer, Some(&mut series)));
        let mut report = staged.result(report)?;
        for (job, config) in report.jobs.iter_mut().zip(&self.config.jobs) {
            job.name.clone_from(&config.name);
            job.offered_iops = config.offered_iops();
        }
        self.series.extend(series.into_points());
        Ok(self.timed.insert(report))
    }

    /// Runs every event of `source` through the host stages in counting mode
    /// (a trace replay), then issues what the DISCARD stage still holds.
    pub fn replay(&mut self, source: &mut dyn EventSource, observer: &mut dyn FnMut(Progress)) -> Result<(), SimError> {
        let mut series = self.phase_series(None);
        let observe = |_, counters: &Counters, _: &[u32]| {
            series.observe(counters);
            false
        };
        on_layer!(&mut self.layer, ftl => drive(ftl, &mut self.stages, EventFeed::new(source), Phase::Measure, observer, observe, self.stop.as_deref()))?;
        self.series.extend(series.into_points());
        Ok(())
    }

    /// Like [`Self::replay`], stopping early once `stop` says so; it sees the
    /// counters and the erase count of every block after each request.
    pub fn replay_until(
        &mut self,
        source: &mut dyn EventSource,
        observer: &mut dyn FnMut(Progress),
        stop: &mut dyn FnMut(&Counters, &[u32]) -> bool,
    ) -> Result<(), SimError> {
        let mut series = self.phase_series(None);
        let mut observe = |_, counters: &Counters, erase_counts: &[u32]| {
            series.observe(counters);
            stop(counters, erase_counts)
        };
        on_layer!(&mut self.layer, ftl => drive(ftl, &mut self.stages, EventFeed::new(source), Phase::Measure, observer, &mut observe, self.stop.as_deref()))?;
        self.series.extend(series.into_points());
        Ok(())
    }

    /// Issues `requests` writes of the workload with nothing but the driver
    /// and the layer in the loop (the write-path benchmark).
    pub fn write_only(&mut self, requests: u64) -> Result<(), SimError> {
        let mut source = SyntheticEvents::new(&mut self.workload, &self.geometry, requests, None).writes_only();
        on_layer!(&mut self.layer, ftl => drive_synthetic(ftl, &mut self.stages, &mut source, Phase::Measure, &mut |_| {}, Unwatched, self.stop.as_deref()))
    }

    /// Runs `requests` requests of the synthetic workload through the timing
    /// model (`[timing]`), on the device as aging left it.
    pub fn measure_timed(
        &mut self,
        requests: u64,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<&TimedReport, SimError> {
        let timing = &self.config.timing;
        let iops = (timing.arrival == Arrival::Open).then_some(timing.arrival_iops);
        let arrivals = Arrivals::new(iops, timing.priority_fraction, self.config.seed.wrapping_add(2));
        let mut series = self.phase_series(Some(requests * u64::from(self.config.workload.request_pages)));
        let mut source = SyntheticEvents::new(&mut self.workload, &self.geometry, requests, Some(arrivals));
        let passes_pages = self.stages.passes_pages();
        let mut staged = StagedSource::new(&mut source, &mut self.stages);
        let engine = Engine::new(&self.geometry, &self.config.timing, &self.config.ftl);
        let mut pages;
        let feed: &mut dyn RequestSource = if passes_pages {
            pages = PageRequests(&mut staged);
            &mut pages
        } else {
            &mut staged
        };
        let report =
            on_layer!(&mut self.layer, ftl => engine.run_with_waf(ftl, feed, requests, observer, Some(&mut series)));
        let report = staged.result(report)?;
        self.series.extend(series.into_points());
        Ok(self.timed.insert(report))
    }

    /// Replays `source` through the host stages and the timing model: each
    /// event's requests arrive at the event's time counted from the first
    /// event (`timing.arrival = "open"`), or as soon as a queue slot frees
    /// (`"closed"`, the device's own pace).
    pub fn replay_timed(
        &mut self,
        source: &mut dyn EventSource,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<&TimedReport, SimError> {
        let mut series = self.phase_series(None);
        let mut staged = StagedSource::new(source, &mut self.stages);
        let engine = Engine::new(&self.geometry, &self.config.timing, &self.config.ftl);
        // The source's length is unknown: progress counts completed requests.
        let mut progress = |update: Progress| observer(Progress { total: 0, ..update });
        let report = on_layer!(&mut self.layer, ftl => engine.run_with_waf(ftl, &mut staged, u64::MAX, &mut progress, Some(&mut series)));
        let report = staged.result(report)?;
        self.series.extend(series.into_points());
        Ok(self.timed.insert(report))
    }

    /// Runs `requests` ready-made timed requests (the timing experiments'
    /// own sources) through the timing model, past the host stages.
    pub fn measure_timed_from(
        &mut self,
        source: &mut dyn RequestSource,
        requests: u64,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<&TimedReport, SimError> {
        let engine = Engine::new(&self.geometry, &self.config.timing, &self.config.ftl);
        let report = on_layer!(&mut self.layer, ftl => engine.run(ftl, source, requests, observer))?;
        Ok(self.timed.insert(report))
    }

    pub fn report(&self) -> Report {
        let geometry = self.geometry;
        let (memory, erase_counts) = on_layer!(&self.layer, ftl => (ftl.memory_bytes(), EraseStats::from_counts(ftl.erase_counts(), geometry.pe_cycles)));
        let measured = self.counters().since(&self.measure_start);
        let lifetime = on_layer!(&self.layer, ftl => LifetimeForecast::new(&WearInputs {
            geometry: &geometry,
            erase_counts: ftl.erase_counts(),
            erase_counts_at_start: &self.measure_start_erases,
            measured: &measured,
            measured_ns: self.measured_ns(),
            seed: self.config.seed,
            aged_steady: self.precondition.as_ref().map(|aging| aging.steady),
        }, &self.config.lifetime));
        #[allow(clippy::cast_precision_loss)]
        let memory_bytes_per_physical_page = memory as f64 / f64::from(geometry.physical_pages());
        let open_channel = self.pblk().map(|pblk| OpenChannelSummary {
            geometry: *pblk.device().geometry(),
            line_layout: *pblk.layout(),
            pblk: pblk.stats().since(&self.pblk_start),
            mixed_lines_open: pblk.mixed_lines(),
        });
        Report {
            nandlab_version: env!("CARGO_PKG_VERSION"),
            seed: self.config.seed,
            config: self.config.clone(),
            device: DeviceSummary::new(&geometry),
            open_channel,
            precondition: self.precondition.clone(),
            host: self.stages.counts().clone(),
            discard: self.stages.discard_stats().clone(),
            classes: self.stages.classes(),
            measured: PhaseReport::new(measured),
            erase_counts,
            waf_series: self.series.clone(),
            memory_bytes_per_physical_page,
            timed: self.timed.clone(),
            lifetime,
            jobs: self.jobs.clone(),
        }
    }

    /// Simulated time of the measured phase: the timed run's, else the trace's span.
    fn measured_ns(&self) -> Option<u64> {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let timed = self.timed.as_ref().map(|timed| (timed.simulated_s * 1e9) as u64);
        timed.or(Some(self.stages.counts().span_ns())).filter(|&ns| ns > 0)
    }
}

/// Where a request the layer refused came from, with a hint when the device
/// is smaller than the workload.
fn at_event(stages: &HostStages, error: FtlError) -> SimError {
    let hint = match error {
        FtlError::LpnOutOfRange { .. } => " (is the device smaller than the trace? try --fit)",
        _ => "",
    };
    SimError::AtEvent { event: stages.events(), error, hint }
}

/// The counting-mode loop every phase shares: requests from `feed` (events
/// through `stages`) onto `ftl`, a few requests ahead for the caches,
/// `after_each` called with the request's job (its event's; the DISCARD
/// stage's final issue: the last event's) and the counters after every
/// request (true stops the phase).
fn drive<T: TranslationLayer + 'static, F: Feed<T>>(
    ftl: &mut T,
    stages: &mut HostStages,
    mut feed: F,
    phase: Phase,
    observer: &mut dyn FnMut(Progress),
    mut after_each: impl Watch,
    stop: Option<&AtomicBool>,
) -> Result<(), SimError> {
    if (ftl as &dyn std::any::Any).is::<Partitioned>() {
        return parallel::drive(ftl, stages, feed, phase, observer, &mut after_each, stop);
    }
    let mut events = EventCount::new(phase, feed.len_hint(), stop);
    let mut ahead = Ahead::with_capacity(4 * LOOKAHEAD);
    // A layer that follows time must see each event's time just before the
    // event's own requests, so it gets no requests ahead.
    let lookahead = if ftl.follows_time() { 0 } else { LOOKAHEAD };
    let mut dry = false;
    loop {
        while !dry && ahead.len() <= lookahead {
            let before = ahead.len();
            if feed.refill(ftl, stages, &mut ahead)? {
                events.count(observer)?;
            } else {
                dry = true;
            }
            for index in before..ahead.len() {
                if let Some(request) = ahead.get(index) {
                    ftl.prefetch_mapping(request.start);
                }
            }
        }
        let Some(Queued { request, job }) = ahead.pop() else {
            break;
        };
        if let Some(halfway) = ahead.get(LOOKAHEAD / 2) {
            ftl.prefetch_old_page(halfway.start);
        }
        submit(ftl, &request).map_err(|error| at_event(stages, error))?;
        if after_each.observe(job, ftl.counters(), ftl.erase_counts()) {
            break;
        }
    }
    events.finish(observer);
    Ok(())
}

/// The events a counting phase has taken: the observer hears of them every
/// [`PROGRESS_INTERVAL`], and the caller's stop flag is looked at then.
struct EventCount<'s> {
    phase: Phase,
    total: u64,
    done: u64,
    stop: Option<&'s AtomicBool>,
}

impl<'s> EventCount<'s> {
    /// `total`: the events the source will yield, when known.
    fn new(phase: Phase, total: Option<u64>, stop: Option<&'s AtomicBool>) -> Self {
        Self { phase, total: total.unwrap_or(0), done: 0, stop }
    }

    /// One more event; [`SimError::Stopped`] once the stop flag is seen raised.
    #[inline]
    fn count(&mut self, observer: &mut dyn FnMut(Progress)) -> Result<(), SimError> {
        self.done += 1;
        if self.done.is_multiple_of(PROGRESS_INTERVAL) {
            self.finish(observer);
            if self.stop.is_some_and(|flag| flag.load(Ordering::Relaxed)) {
                return Err(SimError::Stopped);
            }
        }
        Ok(())
    }

    /// Tells the observer how far the phase got.
    fn finish(&self, observer: &mut dyn FnMut(Progress)) {
        observer(Progress { phase: self.phase, done: self.done, total: self.total });
    }
}

/// A counting phase of the synthetic workload: its page requests straight
/// into the loop when the stages would pass them unchanged and the layer
/// ignores time (the same requests, counts and errors, without the detour
/// through host events), else its events through the stages.
fn drive_synthetic<T: TranslationLayer + 'static>(
    ftl: &mut T,
    stages: &mut HostStages,
    source: &mut SyntheticEvents<'_>,
    phase: Phase,
    observer: &mut dyn FnMut(Progress),
    after_each: impl Watch,
    stop: Option<&AtomicBool>,
) -> Result<(), SimError> {
    if stages.passes_pages() && source.untimed() && !ftl.follows_time() {
        drive(ftl, stages, PageFeed(source), phase, observer, after_each, stop)
    } else {
        drive(ftl, stages, EventFeed::new(source), phase, observer, after_each, stop)
    }
}

/// Where the counting loop's requests come from.
trait Feed<T: TranslationLayer> {
    /// Queues the requests of the next event on `ahead`; false, after
    /// queuing what the stages still hold, once the source is dry.
    fn refill(&mut self, ftl: &mut T, stages: &mut HostStages, ahead: &mut Ahead) -> Result<bool, SimError>;

    /// Events the source will yield, when known (for progress).
    fn len_hint(&self) -> Option<u64>;
}

/// Every event of a source through the host stages; what the DISCARD
/// stage issues at the end belongs to the last event's job.
struct EventFeed<'a, S: EventSource + ?Sized> {
    source: &'a mut S,
    last_job: u16,
}

impl<'a, S: EventSource + ?Sized> EventFeed<'a, S> {
    fn new(source: &'a mut S) -> Self {
        Self { source, last_job: 0 }
    }
}

impl<T: TranslationLayer, S: EventSource + ?Sized> Feed<T> for EventFeed<'_, S> {
    #[inline]
    fn refill(&mut self, ftl: &mut T, stages: &mut HostStages, ahead: &mut Ahead) -> Result<bool, SimError> {
        let Some(event) = self.source.next_event()? else {
            stages.finish(&mut ahead.for_job(self.last_job)).map_err(|error| at_event(stages, error))?;
            return Ok(false);
        };
        if ftl.follows_time() {
            ftl.advance(event.time).map_err(|error| at_event(stages, error))?;
        }
        self.last_job = event.job;
        stages.requests(&event, &mut ahead.for_job(event.job)).map_err(|error| at_event(stages, error))?;
        Ok(true)
    }

    fn len_hint(&self) -> Option<u64> {
        self.source.len_hint()
    }
}

/// The synthetic workload's reads and writes as page requests, counted by
/// the stages ([`HostStages::page_request`]); its trims as events through them.
struct PageFeed<'a, 'w>(&'a mut SyntheticEvents<'w>);

impl PageFeed<'_, '_> {
    #[inline(never)]
    fn event_through_stages(
        &self,
        request: Request,
        stages: &mut HostStages,
        ahead: &mut Ahead,
    ) -> Result<(), SimError> {
        let event = self.0.event(request, SimNs(0), false);
        stages.requests(&event, &mut ahead.for_job(0)).map_err(|error| at_event(stages, error))
    }
}

impl<T: TranslationLayer> Feed<T> for PageFeed<'_, '_> {
    #[inline(always)]
    fn refill(&mut self, _: &mut T, stages: &mut HostStages, ahead: &mut Ahead) -> Result<bool, SimError> {
        let Some(request) = self.0.next_page_request() else {
            stages.finish(&mut ahead.for_job(0)).map_err(|error| at_event(stages, error))?;
            return Ok(false);
        };
        if matches!(request.op, Op::Read | Op::Write) {
            if stages.page_request(&request, SimNs(0), false).map_err(|error| at_event(stages, error))?.is_some() {
                ahead.push(request, 0);
            }
        } else {
            self.event_through_stages(request, stages, ahead)?;
        }
        Ok(true)
    }

    fn len_hint(&self) -> Option<u64> {
        self.0.len_hint()
    }
}

/// Appends items one by one: `VecDeque::extend` of the stages' one-request
/// iterators costs several times a `push_back` per request.
struct PushBack<'q, T>(&'q mut VecDeque<T>);

impl<T> Extend<T> for PushBack<'_, T> {
    #[inline]
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for item in items {
            self.0.push_back(item);
        }
    }
}

/// The timed engine's request source over events: each event passes the
/// host stages, and the requests it causes arrive at the event's time,
/// counted from the first event (so absolute timestamps start at once); the
/// DISCARD stage's final issue arrives with the last event.
struct StagedSource<'a, S: EventSource + ?Sized> {
    source: &'a mut S,
    stages: &'a mut HostStages,
    pending: VecDeque<(Request, bool)>,
    /// The job of each pending request, when the run has jobs.
    pending_jobs: Option<VecDeque<u16>>,
    /// Closed-loop jobs: which jobs have issued every request.
    dry_jobs: Vec<bool>,
    arrival: SimNs,
    deadline: Option<SimNs>,
    first_ns: Option<u64>,
    error: Option<SimError>,
    done: bool,
}

impl<'a, S: EventSource + ?Sized> StagedSource<'a, S> {
    fn new(source: &'a mut S, stages: &'a mut HostStages) -> Self {
        Self {
            source,
            stages,
            pending: VecDeque::new(),
            pending_jobs: None,
            dry_jobs: Vec::new(),
            arrival: SimNs(0),
            deadline: None,
            first_ns: None,
            error: None,
            done: false,
        }
    }

    /// Carries each event's job (of `jobs`) onto its requests.
    fn with_jobs(mut self, jobs: usize) -> Self {
        self.pending_jobs = Some(VecDeque::new());
        self.dry_jobs = vec![false; jobs];
        self
    }

    /// An event at `time` arrived: its requests arrive at `time` counted from the first event.
    #[inline]
    fn arrive_at(&mut self, time: SimNs) -> u64 {
        let first = *self.first_ns.get_or_insert(time.0);
        self.arrival = SimNs(time.0.saturating_sub(first));
        first
    }

    /// Passes `event` through the stages into the pending requests.
    #[inline]
    fn stage(&mut self, event: &HostEvent) -> Result<(), SimError> {
        let first = self.arrive_at(event.time);
        self.deadline = event.deadline.map(|deadline| SimNs(deadline.0.saturating_sub(first)));
        let before = self.pending.len();
        let outcome =
            self.stages.requests(event, &mut PushBack(&mut self.pending)).map_err(|error| at_event(self.stages, error));
        if let Some(jobs) = &mut self.pending_jobs {
            jobs.extend(std::iter::repeat_n(event.job, self.pending.len() - before));
        }
        outcome
    }

    /// Passes job `job`'s next event through the stages; false once the job
    /// has issued everything (or the source or the stages failed).
    fn refill_of(&mut self, job: u16) -> bool {
        if self.error.is_some() {
            return false;
        }
        let outcome = match self.source.next_event_of(job) {
            Ok(Some(event)) => self.stage(&event),
            Ok(None) => return false,
            Err(error) => Err(SimError::Source(error)),
        };
        outcome.map_err(|error| self.error = Some(error)).is_ok()
    }

    /// Turns the next event (or the end of the source) into pending
    /// requests; `None` when nothing more will come.
    #[inline]
    fn refill(&mut self) -> Option<()> {
        if self.done || self.error.is_some() {
            return None;
        }
        let outcome = match self.source.next_event() {
            Ok(Some(event)) => self.stage(&event),
            Ok(None) => {
                self.done = true;
                self.deadline = None;
                self.stages.finish(&mut self.pending).map_err(|error| at_event(self.stages, error))
            }
            Err(error) => Err(SimError::Source(error)),
        };
        outcome.map_err(|error| self.error = Some(error)).ok()
    }

    /// The engine's result, unless the source or the stages failed first.
    fn result(self, engine: Result<TimedReport, FtlError>) -> Result<TimedReport, SimError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        engine.map_err(|error| at_event(self.stages, error))
    }
}

impl<S: EventSource + ?Sized> RequestSource for StagedSource<'_, S> {
    #[inline]
    fn next_request(&mut self) -> Option<TimedRequest> {
        while self.pending.is_empty() {
            self.refill()?;
        }
        let (request, priority) = self.pending.pop_front()?;
        let job = self.pending_jobs.as_mut().and_then(VecDeque::pop_front);
        Some(TimedRequest { request, arrival: self.arrival, priority, deadline: self.deadline, job })
    }

    /// Job `job`'s next request: one its events already put through the
    /// stages, else one from its next event. Once every job has issued
    /// everything, what the stages still hold (a DISCARD stage's last issue,
    /// credited to no job) goes to whichever job asks.
    fn next_request_of(&mut self, job: u16) -> Option<TimedRequest> {
        loop {
            let jobs = self.pending_jobs.as_mut()?;
            if let Some(at) = jobs.iter().position(|&pending| pending == job) {
                jobs.remove(at);
                let (request, priority) = self.pending.remove(at)?;
                return Some(TimedRequest { request, arrival: self.arrival, priority, deadline: None, job: Some(job) });
            }
            if !self.refill_of(job) {
                break;
            }
        }
        *self.dry_jobs.get_mut(usize::from(job))? = true;
        if self.dry_jobs.iter().all(|&dry| dry) {
            while !self.done && self.pending.is_empty() {
                self.refill()?;
            }
            let (request, priority) = self.pending.pop_front()?;
            return Some(TimedRequest { request, arrival: self.arrival, priority, deadline: None, job: None });
        }
        None
    }
}

impl StagedSource<'_, SyntheticEvents<'_>> {
    /// [`RequestSource::next_request`] when the stages pass pages
    /// ([`HostStages::passes_pages`]): the workload's reads and writes go
    /// straight to the engine, counted by the stages
    /// ([`HostStages::page_request`]), without the detour through host
    /// events; its trims, and what the stages hold at the end, go the
    /// events' way.
    #[inline]
    fn next_page_request(&mut self) -> Option<TimedRequest> {
        while self.pending.is_empty() && self.error.is_none() {
            let Some((request, time, priority)) = self.source.next_timed_page_request() else { break };
            if !matches!(request.op, Op::Read | Op::Write) {
                let event = self.source.event(request, time, priority);
                if let Err(error) = self.stage(&event) {
                    self.error = Some(error);
                }
                continue;
            }
            self.arrive_at(time);
            match self.stages.page_request(&request, time, priority) {
                Ok(Some(priority)) => {
                    return Some(TimedRequest { request, arrival: self.arrival, priority, deadline: None, job: None });
                }
                Ok(None) => {}
                Err(error) => self.error = Some(at_event(self.stages, error)),
            }
        }
        if self.error.is_some() {
            return None;
        }
        self.next_request()
    }
}

/// The synthetic workload's timed requests by
/// [`StagedSource::next_page_request`]: the engine's source when the stages
/// pass pages.
struct PageRequests<'s, 'a, 'w>(&'s mut StagedSource<'a, SyntheticEvents<'w>>);

impl RequestSource for PageRequests<'_, '_, '_> {
    #[inline]
    fn next_request(&mut self) -> Option<TimedRequest> {
        self.0.next_page_request()
    }
}

mod aging;
mod ahead;
mod live;
mod parallel;
use aging::{SteadyOrSpent, SteadyRule};
use ahead::{Ahead, Queued};
pub use live::{EventTicket, LiveDevice};
pub use parallel::{check_threads, run_threads, Partitioned, THREADS_MAX};
use parallel::{Unwatched, Watch};

#[cfg(test)]
mod tests;
