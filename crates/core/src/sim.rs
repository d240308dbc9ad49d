//! The counting-mode simulation driver: builds the FTL from a configuration,
//! preconditions it, runs the measured workload, and assembles the report.

use crate::config::{Config, ConfigError};
use crate::device::Geometry;
use crate::ftl::{FtlError, PageFtl};
use crate::host::{submit, Request};
use crate::metrics::{Counters, EraseStats, WafPoint, WafSeries};
use crate::units::{Lpn, StreamId};
use crate::workload::Synthetic;
use crate::timing::{Arrival, Arrivals, Engine, RequestSource, SyntheticSource, TimedReport};
use serde::Serialize;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("simulation failed")]
    Ftl(#[from] FtlError),
}

/// Which part of a run is under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Fill,
    Overwrite,
    Measure,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Self::Fill => "precondition: fill",
            Self::Overwrite => "precondition: overwrite to steady state",
            Self::Measure => "measure",
        }
    }
}

/// Progress reported to an observer: `done` of `total` requests of `phase`.
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
}

impl PhaseReport {
    pub(crate) fn new(counters: Counters) -> Self {
        let waf = counters.waf();
        Self { counters, waf }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct PreconditionReport {
    #[serde(flatten)]
    pub phase: PhaseReport,
    /// Whether the windowed WAF settled within the tolerance.
    pub steady: bool,
    /// WAF of the last overwrite window.
    pub final_window_waf: Option<f64>,
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

/// Everything a run produced. Serialized as the JSON output.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub nandlab_version: &'static str,
    pub seed: u64,
    pub config: Config,
    pub device: DeviceSummary,
    pub precondition: Option<PreconditionReport>,
    pub measured: PhaseReport,
    pub erase_counts: EraseStats,
    pub waf_series: Vec<WafPoint>,
    pub memory_bytes_per_physical_page: f64,
    /// Throughput and latency of a timed run (`--timing on`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timed: Option<TimedReport>,
}

/// How often (in requests) the observer hears about progress.
const PROGRESS_INTERVAL: u64 = 1 << 16;

/// Runs a whole simulation with the timing model: preconditioning (if
/// enabled, in counting mode), then the measured workload in simulated time.
pub fn run_timed(config: &Config, observer: &mut dyn FnMut(Progress)) -> Result<Report, SimError> {
    let mut simulation = Simulation::new(config)?;
    if config.precondition.enabled {
        simulation.precondition(observer)?;
    }
    let requests = config.workload.total_requests(&simulation.geometry);
    simulation.measure_timed(requests, observer)?;
    Ok(simulation.report())
}

/// Runs a whole simulation in counting mode: preconditioning (if enabled),
/// then the measured workload.
pub fn run(config: &Config, observer: &mut dyn FnMut(Progress)) -> Result<Report, SimError> {
    let mut simulation = Simulation::new(config)?;
    if config.precondition.enabled {
        simulation.precondition(observer)?;
    }
    let requests = config.workload.total_requests(&simulation.geometry);
    simulation.measure(requests, observer)?;
    Ok(simulation.report())
}

/// A simulation in progress: the FTL, the workload, and what was measured.
pub struct Simulation {
    config: Config,
    geometry: Geometry,
    ftl: PageFtl,
    workload: Synthetic,
    lookahead: Lookahead,
    precondition: Option<PreconditionReport>,
    measure_start: Counters,
    series: Vec<WafPoint>,
    timed: Option<TimedReport>,
}

impl Simulation {
    pub fn new(config: &Config) -> Result<Self, SimError> {
        let geometry = config.validate()?;
        config.ftl.validate_for_full_device(&geometry)?;
        let ftl = PageFtl::new(&geometry, &config.ftl, config.seed)?;
        let workload = Synthetic::new(&config.workload, &geometry, config.seed.wrapping_add(1));
        let measure_start = ftl.counters().clone();
        Ok(Self {
            config: config.clone(),
            geometry,
            ftl,
            workload,
            lookahead: Lookahead::default(),
            precondition: None,
            measure_start,
            series: Vec::new(),
            timed: None,
        })
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn ftl(&self) -> &PageFtl {
        &self.ftl
    }

    /// Fills the logical space in order, then overwrites with the workload's
    /// write pattern until the windowed WAF is steady (or the cap is reached).
    /// What it costs is reported apart from the measured phase.
    pub fn precondition(&mut self, observer: &mut dyn FnMut(Progress)) -> Result<&PreconditionReport, SimError> {
        let settings = &self.config.precondition;
        let start = self.ftl.counters().clone();
        if settings.fill {
            fill_sequentially(&mut self.ftl, &self.geometry, StreamId(self.config.workload.stream), observer)?;
        }
        let logical = f64::from(self.geometry.logical_pages);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let window_pages = ((settings.window_device_fraction * logical) as u64).max(1);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let budget_pages = (settings.max_device_writes * logical) as u64;
        let total = budget_pages / u64::from(self.config.workload.request_pages);
        let mut series = WafSeries::new(window_pages, self.ftl.counters());
        let mut steady = SteadyState::new(settings.steady_tolerance, settings.steady_windows);
        for done in 0..total {
            let request = self.lookahead.next(&self.ftl, || self.workload.next_write());
            submit(&mut self.ftl, &request)?;
            if let Some(window_waf) = series.observe(self.ftl.counters()) {
                if steady.observe(window_waf) {
                    break;
                }
            }
            report_progress(observer, Phase::Overwrite, done, total);
        }
        self.measure_start = self.ftl.counters().clone();
        self.lookahead.clear();
        Ok(self.precondition.insert(PreconditionReport {
            phase: PhaseReport::new(self.ftl.counters().since(&start)),
            steady: steady.reached() || total == 0,
            final_window_waf: series.points().last().map(|point| point.waf_window),
        }))
    }

    /// The WAF series of a measured phase of `requests` requests: windows of
    /// `metrics.window_pages`, by default a hundredth of the phase.
    fn phase_series(&self, requests: u64) -> WafSeries {
        let request_pages = u64::from(self.config.workload.request_pages);
        let window_pages = self.config.metrics.window_pages.unwrap_or_else(|| (requests * request_pages / 100).max(1));
        WafSeries::new(window_pages, self.ftl.counters())
    }

    /// Issues `requests` requests of the workload and records the WAF series.
    pub fn measure(&mut self, requests: u64, observer: &mut dyn FnMut(Progress)) -> Result<(), SimError> {
        let mut series = self.phase_series(requests);
        for done in 0..requests {
            let request = self.lookahead.next(&self.ftl, || self.workload.next_request());
            submit(&mut self.ftl, &request)?;
            series.observe(self.ftl.counters());
            report_progress(observer, Phase::Measure, done, requests);
        }
        observer(Progress { phase: Phase::Measure, done: requests, total: requests });
        self.series.extend(series.into_points());
        self.lookahead.clear();
        Ok(())
    }

    /// Issues `requests` writes of the workload with nothing but the FTL in
    /// the loop (for benchmarks of the FTL's write path).
    pub fn write_only(&mut self, requests: u64) -> Result<(), SimError> {
        for _ in 0..requests {
            let request = self.lookahead.next(&self.ftl, || self.workload.next_write());
            submit(&mut self.ftl, &request)?;
        }
        self.lookahead.clear();
        Ok(())
    }

    /// Runs `requests` requests of the configured workload through the
    /// timing model (`[timing]`), on the FTL as preconditioning left it.
    pub fn measure_timed(&mut self, requests: u64, observer: &mut dyn FnMut(Progress)) -> Result<&TimedReport, SimError> {
        let timing = &self.config.timing;
        let iops = (timing.arrival == Arrival::Open).then_some(timing.arrival_iops);
        let arrivals = Arrivals::new(iops, timing.priority_fraction, self.config.seed.wrapping_add(2));
        let mut series = self.phase_series(requests);
        let mut source = SyntheticSource::new(&mut self.workload, arrivals);
        let engine = Engine::new(&self.geometry, timing, &self.config.ftl);
        let report = engine.run_with_waf(&mut self.ftl, &mut source, requests, observer, Some(&mut series))?;
        self.series.extend(series.into_points());
        Ok(self.timed.insert(report))
    }

    /// Like [`Self::measure_timed`], with requests from `source`.
    pub fn measure_timed_from(
        &mut self,
        source: &mut dyn RequestSource,
        requests: u64,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<&TimedReport, SimError> {
        let engine = Engine::new(&self.geometry, &self.config.timing, &self.config.ftl);
        let report = engine.run(&mut self.ftl, source, requests, observer)?;
        Ok(self.timed.insert(report))
    }

    pub fn report(&self) -> Report {
        let geometry = self.geometry;
        #[allow(clippy::cast_precision_loss)]
        let memory_bytes_per_physical_page = self.ftl.memory_bytes() as f64 / f64::from(geometry.physical_pages());
        Report {
            nandlab_version: env!("CARGO_PKG_VERSION"),
            seed: self.config.seed,
            config: self.config.clone(),
            device: DeviceSummary::new(&geometry),
            precondition: self.precondition.clone(),
            measured: PhaseReport::new(self.ftl.counters().since(&self.measure_start)),
            erase_counts: EraseStats::from_counts(self.ftl.flash().erase_counts(), geometry.pe_cycles),
            waf_series: self.series.clone(),
            memory_bytes_per_physical_page,
            timed: self.timed.clone(),
        }
    }
}

fn report_progress(observer: &mut dyn FnMut(Progress), phase: Phase, done: u64, total: u64) {
    if done.is_multiple_of(PROGRESS_INTERVAL) {
        observer(Progress { phase, done, total });
    }
}

fn fill_sequentially(
    ftl: &mut PageFtl,
    geometry: &Geometry,
    stream: StreamId,
    observer: &mut dyn FnMut(Progress),
) -> Result<(), SimError> {
    const CHUNK_PAGES: u32 = 256;
    let total = u64::from(geometry.logical_pages.div_ceil(CHUNK_PAGES));
    let mut first = 0;
    while first < geometry.logical_pages {
        let pages = CHUNK_PAGES.min(geometry.logical_pages - first);
        submit(ftl, &Request { op: crate::host::Op::Write, start: Lpn(first), pages, stream })?;
        report_progress(observer, Phase::Fill, u64::from(first / CHUNK_PAGES), total);
        first += pages;
    }
    Ok(())
}

/// Requests generated a few ahead of their submission, so the FTL's cache
/// lines for them are fetched while earlier requests run. The workload does
/// not depend on the FTL's state, so generating early changes nothing; what
/// is left at the end of a phase is discarded, deterministically.
#[derive(Debug, Default)]
struct Lookahead {
    queue: std::collections::VecDeque<Request>,
}

impl Lookahead {
    const DEPTH: usize = 16;

    fn next(&mut self, ftl: &PageFtl, mut generate: impl FnMut() -> Request) -> Request {
        while self.queue.len() <= Self::DEPTH {
            let request = generate();
            ftl.prefetch_mapping(request.start);
            self.queue.push_back(request);
        }
        if let Some(halfway) = self.queue.get(Self::DEPTH / 2) {
            ftl.prefetch_old_page(halfway.start);
        }
        self.queue.pop_front().unwrap_or_else(generate)
    }

    fn clear(&mut self) {
        self.queue.clear();
    }
}

/// Detects a steady state: `windows` consecutive windows whose WAF differs
/// from the window before by at most `tolerance` (relative).
#[derive(Debug, Clone)]
struct SteadyState {
    tolerance: f64,
    windows: u32,
    previous: Option<f64>,
    streak: u32,
}

impl SteadyState {
    fn new(tolerance: f64, windows: u32) -> Self {
        Self { tolerance, windows, previous: None, streak: 0 }
    }

    /// Takes the next window's WAF; true once the state is steady.
    fn observe(&mut self, waf: f64) -> bool {
        if let Some(previous) = self.previous {
            let change = (waf - previous).abs() / previous.max(f64::MIN_POSITIVE);
            self.streak = if change <= self.tolerance { self.streak + 1 } else { 0 };
        }
        self.previous = Some(waf);
        self.reached()
    }

    fn reached(&self) -> bool {
        self.streak >= self.windows
    }
}
