//! Device counters and latency histograms (hdrhistogram), and their text rendering for the stats file.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::chunk::lock;

/// Latencies above this are clamped; no single request should take an hour.
const LATENCY_NS_MAX: u64 = 3_600_000_000_000;

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) reads: AtomicU64,
    pub(crate) writes: AtomicU64,
    pub(crate) discards: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) read_bytes: AtomicU64,
    pub(crate) written_bytes: AtomicU64,
    pub(crate) discarded_bytes: AtomicU64,
    /// Read case 2 (section 3.3.2): chunk pieces served from the backing store.
    pub(crate) reads_from_backing: AtomicU64,
    /// Write case 1: chunk pieces that waited for the copier.
    pub(crate) writes_waited_for_copy: AtomicU64,
    /// Write case 3: chunk pieces written to the backing store only.
    pub(crate) writes_backing_only: AtomicU64,
    /// Chunks whose copy was suspended by case-3 writers.
    pub(crate) copier_waits: AtomicU64,
}

pub(crate) fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

pub(crate) struct LatencyRecorder {
    histogram: Mutex<Histogram<u64>>,
}

impl LatencyRecorder {
    pub(crate) fn new() -> LatencyRecorder {
        LatencyRecorder { histogram: Mutex::new(latency_histogram()) }
    }

    pub(crate) fn record(&self, elapsed: Duration) {
        record_latency(&mut lock(&self.histogram), elapsed);
    }

    pub(crate) fn summary(&self) -> LatencySummary {
        summarize(&lock(&self.histogram))
    }
}

/// A latency histogram in nanoseconds: 1 ns .. 1 h at three significant digits (bounded memory).
pub(crate) fn latency_histogram() -> Histogram<u64> {
    // Constant, valid bounds: construction cannot fail.
    Histogram::new_with_bounds(1, LATENCY_NS_MAX, 3).expect("hdrhistogram accepts constant bounds 1..1h at 3 digits")
}

pub(crate) fn record_latency(histogram: &mut Histogram<u64>, elapsed: Duration) {
    let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(LATENCY_NS_MAX);
    histogram.saturating_record(ns.clamp(1, LATENCY_NS_MAX));
}

pub(crate) fn summarize(histogram: &Histogram<u64>) -> LatencySummary {
    LatencySummary {
        count: histogram.len(),
        p50_ns: histogram.value_at_quantile(0.50),
        p90_ns: histogram.value_at_quantile(0.90),
        p99_ns: histogram.value_at_quantile(0.99),
        p999_ns: histogram.value_at_quantile(0.999),
        max_ns: histogram.max(),
    }
}

/// Latency percentiles of one request kind, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencySummary {
    pub count: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

/// Fast-initialization progress (section 3.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitProgress {
    pub chunks_initialized: u64,
    pub chunks_total: u64,
    /// Time from `Device::open` until the last chunk was copied; `None` while copying.
    pub finished_after: Option<Duration>,
    /// Why the copier stopped early, if it did; the rest is then served from the backing store.
    pub copier_error: Option<String>,
}

impl InitProgress {
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.chunks_initialized == self.chunks_total
    }

    /// Percent of chunks initialized, in tenths of a percent (integer, no rounding surprises).
    #[must_use]
    pub fn permille(&self) -> u64 {
        (self.chunks_initialized * 1000).checked_div(self.chunks_total).unwrap_or(1000)
    }
}

/// A consistent-enough copy of all device statistics (counters are read one by one).
#[derive(Clone, Debug)]
pub struct StatsSnapshot {
    pub size_bytes: u64,
    pub chunk_bytes: u64,
    pub durability: String,
    pub direct_io: bool,
    pub reads: u64,
    pub writes: u64,
    pub discards: u64,
    pub flushes: u64,
    pub read_bytes: u64,
    pub written_bytes: u64,
    pub discarded_bytes: u64,
    pub reads_from_backing: u64,
    pub writes_waited_for_copy: u64,
    pub writes_backing_only: u64,
    pub copier_waits: u64,
    pub init: InitProgress,
    pub read_latency: LatencySummary,
    pub write_latency: LatencySummary,
}

impl Counters {
    pub(crate) fn load(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

impl fmt::Display for StatsSnapshot {
    /// One `key value` pair per line, stable names, easy to grep and parse.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let init = &self.init;
        writeln!(f, "size_bytes {}", self.size_bytes)?;
        writeln!(f, "chunk_bytes {}", self.chunk_bytes)?;
        writeln!(f, "durability {}", self.durability)?;
        writeln!(f, "direct_io {}", self.direct_io)?;
        writeln!(f, "reads {}", self.reads)?;
        writeln!(f, "writes {}", self.writes)?;
        writeln!(f, "discards {}", self.discards)?;
        writeln!(f, "flushes {}", self.flushes)?;
        writeln!(f, "read_bytes {}", self.read_bytes)?;
        writeln!(f, "written_bytes {}", self.written_bytes)?;
        writeln!(f, "discarded_bytes {}", self.discarded_bytes)?;
        writeln!(f, "init_chunks_initialized {}", init.chunks_initialized)?;
        writeln!(f, "init_chunks_total {}", init.chunks_total)?;
        writeln!(f, "init_permille {}", init.permille())?;
        match init.finished_after {
            Some(elapsed) => writeln!(f, "init_finished_after_ms {}", elapsed.as_millis())?,
            None => writeln!(f, "init_finished_after_ms running")?,
        }
        if let Some(error) = &init.copier_error {
            writeln!(f, "init_copier_error {error}")?;
        }
        writeln!(f, "init_reads_from_backing {}", self.reads_from_backing)?;
        writeln!(f, "init_writes_waited_for_copy {}", self.writes_waited_for_copy)?;
        writeln!(f, "init_writes_backing_only {}", self.writes_backing_only)?;
        writeln!(f, "init_copier_waits {}", self.copier_waits)?;
        for (name, latency) in [("read", &self.read_latency), ("write", &self.write_latency)] {
            writeln!(f, "{name}_latency_count {}", latency.count)?;
            writeln!(f, "{name}_latency_p50_ns {}", latency.p50_ns)?;
            writeln!(f, "{name}_latency_p90_ns {}", latency.p90_ns)?;
            writeln!(f, "{name}_latency_p99_ns {}", latency.p99_ns)?;
            writeln!(f, "{name}_latency_p999_ns {}", latency.p999_ns)?;
            writeln!(f, "{name}_latency_max_ns {}", latency.max_ns)?;
        }
        Ok(())
    }
}
