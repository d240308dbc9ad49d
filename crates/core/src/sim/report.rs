//! What a run reports: the phases' counts with derived figures, the aging,
//! the device, and the whole report the JSON output serializes.

use super::{Layer, Simulation};
use crate::config::Config;
use crate::device::open_channel::OpenChannelGeometry;
use crate::device::Geometry;
use crate::ftl::TranslationLayer;
use crate::host::discard::DiscardStats;
use crate::host::pblk::{LineLayout, PblkStats};
use crate::host::stages::HostCounts;
use crate::metrics::{Counters, EraseStats, LifetimeForecast, WafPoint, WearInputs};
use crate::timing::TimedReport;
use crate::workload::jobs::JobReport;
use nandlab_convert::{f64_of, saturating};
use serde::Serialize;

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

impl Simulation {
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
        let memory_bytes_per_physical_page = f64_of(memory) / f64::from(geometry.physical_pages());
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
    pub(super) fn measured_ns(&self) -> Option<u64> {
        let timed = self.timed.as_ref().map(|timed| saturating::<u64>(timed.simulated_s * 1e9));
        timed.or(Some(self.stages.counts().span_ns())).filter(|&ns| ns > 0)
    }
}
