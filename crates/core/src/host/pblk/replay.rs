//! Trace replay in open-channel mode: host events pass the DISCARD stage and
//! the write classifier and reach [`Pblk`], which drives the
//! [`OpenChannelDevice`](crate::device::open_channel::OpenChannelDevice).
//! Reports the counters the page-FTL replay reports (WAF, GC copies,
//! erases, WAF series) plus pblk's own and the timing of a closed-loop,
//! queue-depth-1 replay: each request is issued when the previous one
//! completes, as `fio --ioengine=psync` does, so throughput is what the
//! device sustains, GC included (see `timing.rs` for what the clock models).

use crate::config::{Config, ConfigError};
use crate::device::open_channel::OpenChannelGeometry;
use crate::device::Geometry;
use crate::host::classify::{ClassId, Classifier, ClassifierKind, HotTracker, WriteFlags, WriteInfo};
use crate::host::discard::{DiscardScheduler, DiscardStats, SectorRange};
use crate::host::pblk::{LineLayout, Pblk, PblkError, PblkStats};
use crate::metrics::{EraseStats, WafPoint, WafSeries};
use crate::replay::{HostEvent, HostOp, TraceCounts};
use crate::sim::{DeviceSummary, PhaseReport, SimError};
use crate::timing::LatencySummary;
use crate::units::Lpn;
use hdrhistogram::Histogram;
use serde::Serialize;

/// What the trace says about who issued a request and how.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOrigin<'a> {
    pub process: &'a str,
    pub flags: WriteFlags,
}

/// Time of the closed-loop replay.
#[derive(Clone, Debug, Serialize)]
pub struct OpenChannelTiming {
    pub elapsed_ns: u64,
    /// Host bytes read and written per second of simulated time, MB/s (10^6).
    pub throughput_mb_s: f64,
    pub iops: f64,
    /// Reads, writes and flushes together; the percentiles the timed
    /// page-FTL replay reports, so both modes read alike.
    pub all: Option<LatencySummary>,
    pub writes: Option<LatencySummary>,
    pub flushes: Option<LatencySummary>,
}

#[derive(Clone, Debug, Serialize)]
pub struct OpenChannelReport {
    pub nandlab_version: &'static str,
    pub seed: u64,
    pub config: Config,
    pub device: DeviceSummary,
    pub open_channel: OpenChannelGeometry,
    pub line_layout: LineLayout,
    pub classes: Vec<String>,
    pub trace: TraceCounts,
    pub discard: DiscardStats,
    pub measured: PhaseReport,
    pub pblk: PblkStats,
    /// Lines open at the end that hold pages of more than one class.
    pub mixed_lines_open: usize,
    pub erase_counts: EraseStats,
    pub waf_series: Vec<WafPoint>,
    pub timed: OpenChannelTiming,
}

struct Latencies {
    all: Histogram<u64>,
    writes: Histogram<u64>,
    flushes: Histogram<u64>,
}

/// Replays events one by one; [`OpenChannelReplayer::finish`] issues what
/// the DISCARD stage still holds and reports.
pub struct OpenChannelReplayer {
    config: Config,
    geometry: Geometry,
    pblk: Pblk,
    classifier: Classifier,
    discard: DiscardScheduler,
    issue: Vec<SectorRange>,
    counts: TraceCounts,
    series: WafSeries,
    latencies: Latencies,
    now_ns: u64,
    /// When the measured replay began (after preconditioning).
    started_ns: u64,
    host_bytes: u64,
    events: u64,
}

impl OpenChannelReplayer {
    /// `journal`: the file system journal's sector ranges (trace header).
    pub fn new(config: &Config, journal: &[SectorRange]) -> Result<Self, SimError> {
        let geometry = config.validate()?;
        config.pblk.validate(&geometry)?;
        let hot = (config.pblk.classifier == ClassifierKind::JournalHotCold).then(|| {
            HotTracker::new(geometry.logical_pages, geometry.sectors_per_page(), config.pblk.hot_min_writes, u64::from(geometry.logical_pages))
        });
        let classifier = Classifier::from_kind(config.pblk.classifier, journal, hot)
            .map_err(|error| ConfigError::new("pblk.classifier", error.to_string()))?;
        let pblk = Pblk::new(&geometry, &config.pblk, &config.timing, classifier.classes().len())
            .map_err(|error| ConfigError::new("pblk", error.to_string()))?;
        // Up to an hour; `saturating_record` clamps rather than resizes.
        let histogram = || Histogram::new_with_bounds(1, 3_600_000_000_000, 3).map_err(|error| ConfigError::new("", format!("latency histogram: {error}")));
        Ok(Self {
            series: WafSeries::new(1, pblk.counters()),
            latencies: Latencies { all: histogram()?, writes: histogram()?, flushes: histogram()? },
            config: config.clone(),
            geometry,
            pblk,
            classifier,
            discard: DiscardScheduler::new(&config.discard),
            issue: Vec::new(),
            counts: TraceCounts::default(),
            now_ns: 0,
            started_ns: 0,
            host_bytes: 0,
            events: 0,
        }
        .with_series())
    }

    fn with_series(mut self) -> Self {
        self.series = WafSeries::new(self.window_pages(), self.pblk.counters());
        self
    }

    pub fn pblk(&self) -> &Pblk {
        &self.pblk
    }

    pub fn classifier(&self) -> &Classifier {
        &self.classifier
    }

    /// Ages the device before the trace: every logical page written once,
    /// in order, as data — a drive that held a file system before, with no
    /// DISCARD since. Counters and the clock restart afterwards.
    pub fn precondition_fill(&mut self) -> Result<(), SimError> {
        self.pblk.set_now(0);
        for lpn in 0..self.geometry.logical_pages {
            self.pblk.write(Lpn(lpn), ClassId(0)).map_err(|error| self.locate(&error))?;
        }
        self.now_ns = self.pblk.flush().map_err(|error| self.locate(&error))?;
        self.started_ns = self.now_ns;
        self.pblk.reset_counters();
        self.series = WafSeries::new(self.window_pages(), self.pblk.counters());
        Ok(())
    }

    fn window_pages(&self) -> u64 {
        self.config.metrics.window_pages.unwrap_or_else(|| (u64::from(self.geometry.logical_pages) / 20).max(1))
    }

    /// Applies one event. Errors name the event's position in the trace.
    pub fn apply(&mut self, event: &HostEvent, origin: &WriteOrigin<'_>) -> Result<(), SimError> {
        self.events += 1;
        self.count(event);
        self.discard.advance(event.time, &mut self.issue);
        let result = match event.op {
            HostOp::Write => {
                self.discard.write(event.sectors);
                self.write(event, origin)
            }
            HostOp::Read => self.read(event),
            HostOp::Discard => {
                self.discard.discard(event.time, event.sectors, &mut self.issue);
                Ok(())
            }
            HostOp::Flush => self.flush_request(),
        };
        result.map_err(|error| self.locate(&error))?;
        if event.journal_commit {
            self.discard.journal_commit(event.time, &mut self.issue);
        }
        self.trim_issued().map_err(|error| self.locate(&error))?;
        self.series.observe(self.pblk.counters());
        Ok(())
    }

    pub fn finish(mut self) -> Result<OpenChannelReport, SimError> {
        self.discard.finish(&mut self.issue);
        self.trim_issued().map_err(|error| self.locate(&error))?;
        let geometry = self.geometry;
        #[allow(clippy::cast_precision_loss)]
        let seconds = (self.now_ns - self.started_ns) as f64 / 1e9;
        let per_second = |amount: f64| if seconds > 0.0 { amount / seconds } else { 0.0 };
        #[allow(clippy::cast_precision_loss)]
        let timed = OpenChannelTiming {
            elapsed_ns: self.now_ns - self.started_ns,
            throughput_mb_s: per_second(self.host_bytes as f64 / 1e6),
            iops: per_second(self.latencies.all.len() as f64),
            all: LatencySummary::from_histogram(&self.latencies.all),
            writes: LatencySummary::from_histogram(&self.latencies.writes),
            flushes: LatencySummary::from_histogram(&self.latencies.flushes),
        };
        Ok(OpenChannelReport {
            nandlab_version: env!("CARGO_PKG_VERSION"),
            seed: self.config.seed,
            device: DeviceSummary::new(&geometry),
            open_channel: *self.pblk.device().geometry(),
            line_layout: *self.pblk.layout(),
            classes: self.classifier.classes().to_vec(),
            trace: self.counts,
            discard: self.discard.stats().clone(),
            measured: PhaseReport::new(self.pblk.counters().clone()),
            pblk: self.pblk.stats().clone(),
            mixed_lines_open: self.pblk.mixed_lines(),
            erase_counts: EraseStats::from_counts(self.pblk.device().reset_counts(), geometry.pe_cycles),
            waf_series: self.series.into_points(),
            timed,
            config: self.config,
        })
    }

    fn count(&mut self, event: &HostEvent) {
        let counts = &mut self.counts;
        let sectors = event.sectors.sectors();
        match event.op {
            HostOp::Read => (counts.reads += 1, counts.read_sectors += sectors),
            HostOp::Write => (counts.writes += 1, counts.write_sectors += sectors),
            HostOp::Discard => (counts.discards += 1, counts.discard_sectors += sectors),
            HostOp::Flush => (counts.flushes += 1, ()),
        };
        counts.journal_commits += u64::from(event.journal_commit);
        counts.first_ns.get_or_insert(event.time.0);
        counts.last_ns = Some(event.time.0);
    }

    /// Waits for buffer room, buffers every touched page under the write's
    /// class; `PREFLUSH` flushes before, `FUA` after (pblk exposes a
    /// volatile write cache without FUA, so the block layer turns both into
    /// flushes).
    fn write(&mut self, event: &HostEvent, origin: &WriteOrigin<'_>) -> Result<(), PblkError> {
        let started = self.now_ns;
        if origin.flags.preflush {
            self.pblk.set_now(self.now_ns);
            self.now_ns = self.pblk.flush()?;
        }
        let class = self.classifier.classify(&WriteInfo { sectors: event.sectors, process: origin.process, flags: origin.flags });
        let pages = self.touched_pages(event.sectors);
        self.pblk.count_request();
        self.pblk.set_now(self.now_ns);
        self.now_ns = self.pblk.buffer_room_at(pages.len().try_into().unwrap_or(u32::MAX));
        self.pblk.set_now(self.now_ns);
        for lpn in pages.clone() {
            self.pblk.write(Lpn(lpn), class)?;
        }
        if origin.flags.fua {
            self.now_ns = self.pblk.flush()?;
        }
        self.host_bytes += u64::from(pages.end - pages.start) * u64::from(self.geometry.page_size);
        self.record(started, Some(class));
        Ok(())
    }

    fn read(&mut self, event: &HostEvent) -> Result<(), PblkError> {
        let started = self.now_ns;
        self.pblk.count_request();
        self.pblk.set_now(self.now_ns);
        let pages = self.touched_pages(event.sectors);
        for lpn in pages.clone() {
            self.now_ns = self.now_ns.max(self.pblk.read(Lpn(lpn))?);
        }
        self.host_bytes += u64::from(pages.end - pages.start) * u64::from(self.geometry.page_size);
        self.record(started, None);
        Ok(())
    }

    fn flush_request(&mut self) -> Result<(), PblkError> {
        let started = self.now_ns;
        self.pblk.set_now(self.now_ns);
        self.now_ns = self.pblk.flush()?;
        let waited = self.now_ns - started;
        self.latencies.flushes.saturating_record(waited);
        self.latencies.all.saturating_record(waited);
        Ok(())
    }

    fn record(&mut self, started: u64, write_class: Option<ClassId>) {
        let waited = self.now_ns - started;
        self.latencies.all.saturating_record(waited);
        if write_class.is_some() {
            self.latencies.writes.saturating_record(waited);
        }
    }

    /// Trims the pages wholly inside each issued range.
    fn trim_issued(&mut self) -> Result<(), PblkError> {
        let sectors_per_page = u64::from(self.geometry.sectors_per_page());
        for range in std::mem::take(&mut self.issue) {
            let first = range.start.div_ceil(sectors_per_page);
            let end = range.end / sectors_per_page;
            if end > first {
                let first = u32::try_from(first).unwrap_or(u32::MAX);
                let pages = u32::try_from(end - u64::from(first)).unwrap_or(u32::MAX);
                self.pblk.trim(Lpn(first), pages)?;
            }
        }
        Ok(())
    }

    fn touched_pages(&self, sectors: SectorRange) -> std::ops::Range<u32> {
        let sectors_per_page = u64::from(self.geometry.sectors_per_page());
        let clamp = |page: u64| u32::try_from(page).unwrap_or(u32::MAX);
        clamp(sectors.start / sectors_per_page)..clamp(sectors.end.div_ceil(sectors_per_page))
    }

    fn locate(&self, error: &PblkError) -> SimError {
        SimError::Config(ConfigError::new(
            "",
            format!("trace request #{}: {error} (is the device smaller than the trace? try --fit)", self.events),
        ))
    }
}
