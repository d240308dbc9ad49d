//! Metrics: counters the FTL updates, summaries derived from them, and the
//! windowed WAF series. Metrics observe the simulation and never steer it.

mod lifetime;
mod series;

pub use lifetime::{LifetimeConfig, LifetimeForecast, WearInputs};
pub use series::{WafPoint, WafSeries};

use nandlab_convert::f64_of;
use serde::{Deserialize, Serialize};

/// The `[metrics]` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Host pages per point of the WAF-over-time series; default: 1/100 of
    /// the run length.
    #[serde(default)]
    pub window_pages: Option<u64>,
}

/// Cumulative counters of one FTL instance. Per-stream vectors are indexed by
/// stream id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub requests: u64,
    pub host_pages_written: u64,
    pub host_pages_read: u64,
    pub host_pages_trimmed: u64,
    /// Reads of logical pages that hold no data (never written or trimmed).
    pub unmapped_reads: u64,
    pub flash_pages_programmed: u64,
    pub flash_pages_read: u64,
    pub gc_page_copies: u64,
    pub erases: u64,
    pub stream_host_pages_written: Vec<u64>,
    /// `ftl.discard = "dftl"`: translation pages written back (a dirty
    /// cached one evicted, or a GC-moved entry's page updated), read in on a
    /// cache miss, and copied by GC. The writes and copies are also in
    /// `flash_pages_programmed`, the copies in `gc_page_copies`.
    pub translation_pages_written: u64,
    pub translation_pages_read: u64,
    pub translation_gc_copies: u64,
    /// `ftl.discard = "dftl"`: uses of a mapping entry whose translation
    /// page was cached (`ftl.map_cache_fraction`), and that was not.
    #[serde(skip_serializing_if = "is_zero")]
    pub map_cache_hits: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub map_cache_misses: u64,
}

/// Counters of a mode that does not use them are left out of the report.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde's signature
fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Counters {
    pub fn new(streams: usize) -> Self {
        Self { stream_host_pages_written: vec![0; streams], ..Self::default() }
    }

    /// Counts accumulated since `earlier`, a snapshot of the same counters.
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            requests: self.requests - earlier.requests,
            host_pages_written: self.host_pages_written - earlier.host_pages_written,
            host_pages_read: self.host_pages_read - earlier.host_pages_read,
            host_pages_trimmed: self.host_pages_trimmed - earlier.host_pages_trimmed,
            unmapped_reads: self.unmapped_reads - earlier.unmapped_reads,
            flash_pages_programmed: self.flash_pages_programmed - earlier.flash_pages_programmed,
            flash_pages_read: self.flash_pages_read - earlier.flash_pages_read,
            gc_page_copies: self.gc_page_copies - earlier.gc_page_copies,
            erases: self.erases - earlier.erases,
            translation_pages_written: self.translation_pages_written - earlier.translation_pages_written,
            translation_pages_read: self.translation_pages_read - earlier.translation_pages_read,
            translation_gc_copies: self.translation_gc_copies - earlier.translation_gc_copies,
            map_cache_hits: self.map_cache_hits - earlier.map_cache_hits,
            map_cache_misses: self.map_cache_misses - earlier.map_cache_misses,
            stream_host_pages_written: self
                .stream_host_pages_written
                .iter()
                .zip(&earlier.stream_host_pages_written)
                .map(|(now, then)| now - then)
                .collect(),
        }
    }

    /// Write amplification: flash pages programmed per host page written.
    pub fn waf(&self) -> Option<f64> {
        ratio(self.flash_pages_programmed, self.host_pages_written)
    }
}

pub fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| f64_of(numerator) / f64_of(denominator))
}

/// Distribution of per-block erase counts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EraseStats {
    pub min: u32,
    pub max: u32,
    pub mean: f64,
    pub stddev: f64,
    /// Blocks erased at least as often as their rated P/E cycles.
    pub worn_out_blocks: u64,
}

impl EraseStats {
    pub fn from_counts(counts: &[u32], rated_pe_cycles: u32) -> Self {
        let n = counts.len().max(1) as f64;
        let mean = counts.iter().map(|&c| f64::from(c)).sum::<f64>() / n;
        let variance = counts.iter().map(|&c| (f64::from(c) - mean).powi(2)).sum::<f64>() / n;
        Self {
            min: counts.iter().copied().min().unwrap_or(0),
            max: counts.iter().copied().max().unwrap_or(0),
            mean,
            stddev: variance.sqrt(),
            worn_out_blocks: counts.iter().filter(|&&c| c >= rated_pe_cycles).count() as u64,
        }
    }
}
