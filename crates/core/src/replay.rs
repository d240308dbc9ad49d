//! Trace replay: host events from a block trace pass the DISCARD stage and
//! reach the device as page writes, reads and trims, in counting mode
//! ([`Replayer::apply`], event by event) or through the timing model
//! ([`Replayer::run_timed`]: open loop in trace time, or closed loop at the
//! configured queue depth). The front end turns a trace file into
//! [`HostEvent`]s; this module never touches files.

use crate::config::{Config, ConfigError};
use crate::device::Geometry;
use crate::ftl::{FtlError, PageFtl};
use crate::host::discard::{DiscardScheduler, DiscardStats, SectorRange};
use crate::host::{submit, Op, Request};
use crate::metrics::{EraseStats, WafPoint, WafSeries};
use crate::sim::{DeviceSummary, PhaseReport, Progress, SimError};
use crate::timing::{Engine, RequestSource, TimedReport, TimedRequest};
use crate::units::{Lpn, SimNs, StreamId};
use serde::Serialize;
use std::collections::VecDeque;

/// Bytes per sector in [`HostEvent`] addresses.
pub const SECTOR_BYTES: u64 = 512;

/// What a traced request did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HostOp {
    Read,
    Write,
    Discard,
    Flush,
}

/// One request of a block trace, in 512-byte sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostEvent {
    pub time: SimNs,
    pub op: HostOp,
    pub sectors: SectorRange,
    /// The request completes a journal commit (jbd2 FUA/preflush): Delay-D's issue point.
    pub journal_commit: bool,
    pub stream: StreamId,
}

/// Per-operation counts of the replayed trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TraceCounts {
    pub reads: u64,
    pub writes: u64,
    pub discards: u64,
    pub flushes: u64,
    pub journal_commits: u64,
    pub read_sectors: u64,
    pub write_sectors: u64,
    pub discard_sectors: u64,
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    pub nandlab_version: &'static str,
    pub seed: u64,
    pub config: Config,
    pub device: DeviceSummary,
    pub trace: TraceCounts,
    pub discard: DiscardStats,
    pub measured: PhaseReport,
    pub erase_counts: EraseStats,
    /// WAF over time (windows of `metrics.window_pages`, by default a
    /// twentieth of the logical space).
    pub waf_series: Vec<WafPoint>,
    /// Throughput, latencies and run time of a timed replay.
    pub timed: Option<TimedReport>,
}

/// The host side of a replay: counts the trace, runs the DISCARD stage and
/// turns each event into the device requests it causes, in the order the
/// device must see them.
struct HostStage {
    sectors_per_page: u64,
    logical_pages: u32,
    discard: DiscardScheduler,
    issue: Vec<SectorRange>,
    counts: TraceCounts,
    events: u64,
}

impl HostStage {
    /// Appends the requests `event` causes to `out`. Ranges the DISCARD
    /// stage makes due before the event are trimmed before it: a write
    /// arriving now must never be trimmed by an older DISCARD.
    fn requests(&mut self, event: &HostEvent, out: &mut impl Extend<Request>) -> Result<(), FtlError> {
        self.events += 1;
        self.count(event);
        self.discard.advance(event.time, &mut self.issue);
        self.trims(event.stream, out)?;
        match event.op {
            HostOp::Write => {
                self.discard.write(event.sectors);
                out.extend(self.touched(Op::Write, event)?);
            }
            HostOp::Read => out.extend(self.touched(Op::Read, event)?),
            HostOp::Discard => self.discard.discard(event.time, event.sectors, &mut self.issue),
            HostOp::Flush => {}
        }
        if event.journal_commit {
            self.discard.journal_commit(event.time, &mut self.issue);
        }
        self.trims(event.stream, out)
    }

    /// The end of the trace: what the DISCARD stage still holds.
    fn finish(&mut self, out: &mut impl Extend<Request>) -> Result<(), FtlError> {
        self.discard.finish(&mut self.issue);
        self.trims(StreamId(0), out)
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

    /// Every page the request touches: a partial page costs a whole page
    /// program (the read-modify-write's read is not modelled).
    fn touched(&self, op: Op, event: &HostEvent) -> Result<Option<Request>, FtlError> {
        let first = event.sectors.start / self.sectors_per_page;
        let end = event.sectors.end.div_ceil(self.sectors_per_page);
        self.request(op, first, end, event.stream)
    }

    /// Trims the pages wholly inside each issued range: a device cannot
    /// invalidate part of a page.
    fn trims(&mut self, stream: StreamId, out: &mut impl Extend<Request>) -> Result<(), FtlError> {
        for range in std::mem::take(&mut self.issue) {
            let first = range.start.div_ceil(self.sectors_per_page);
            let end = range.end / self.sectors_per_page;
            out.extend(self.request(Op::Trim, first, end, stream)?);
        }
        Ok(())
    }

    fn request(&self, op: Op, first: u64, end: u64, stream: StreamId) -> Result<Option<Request>, FtlError> {
        if end <= first {
            return Ok(None);
        }
        let out_of_range = || FtlError::LpnOutOfRange { lpn: end - 1, logical_pages: self.logical_pages };
        if end > u64::from(self.logical_pages) {
            return Err(out_of_range());
        }
        let start = u32::try_from(first).map_err(|_| out_of_range())?;
        let pages = u32::try_from(end - first).map_err(|_| out_of_range())?;
        Ok(Some(Request { op, start: Lpn(start), pages, stream }))
    }

    fn locate(&self, error: FtlError) -> SimError {
        SimError::Config(ConfigError::new(
            "",
            format!("trace request #{}: {error} (is the device smaller than the trace? try --fit)", self.events),
        ))
    }
}

/// Replays events one by one ([`Replayer::apply`] then [`Replayer::finish`]).
pub struct Replayer {
    config: Config,
    geometry: Geometry,
    ftl: PageFtl,
    host: HostStage,
    requests: Vec<Request>,
    series: WafSeries,
}

impl Replayer {
    pub fn new(config: &Config) -> Result<Self, SimError> {
        let geometry = config.validate()?;
        let ftl = PageFtl::new(&geometry, &config.ftl, config.seed)?;
        let window = config.metrics.window_pages.unwrap_or_else(|| (u64::from(geometry.logical_pages) / 20).max(1));
        let series = WafSeries::new(window, ftl.counters());
        let host = HostStage {
            sectors_per_page: u64::from(geometry.sectors_per_page()),
            logical_pages: geometry.logical_pages,
            discard: DiscardScheduler::new(&config.discard),
            issue: Vec::new(),
            counts: TraceCounts::default(),
            events: 0,
        };
        Ok(Self { config: config.clone(), geometry, ftl, host, requests: Vec::new(), series })
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// Applies one event in counting mode. Errors name the event's position in the trace.
    pub fn apply(&mut self, event: &HostEvent) -> Result<(), SimError> {
        self.host.requests(event, &mut self.requests).map_err(|error| self.host.locate(error))?;
        self.submit_pending()?;
        self.series.observe(self.ftl.counters());
        Ok(())
    }

    /// Issues what the DISCARD stage still holds and reports.
    pub fn finish(mut self) -> Result<ReplayReport, SimError> {
        self.host.finish(&mut self.requests).map_err(|error| self.host.locate(error))?;
        self.submit_pending()?;
        Ok(self.report(None))
    }

    /// Replays `events` through the timing model (`[timing]`): each event's
    /// requests arrive at the event's time (`timing.arrival = "open"`) or as
    /// soon as a queue slot frees (`"closed"`, the device's own pace). Call
    /// it on a fresh replayer, instead of [`Self::apply`].
    pub fn run_timed(
        mut self,
        events: &mut dyn Iterator<Item = HostEvent>,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<ReplayReport, SimError> {
        let engine = Engine::new(&self.geometry, &self.config.timing, &self.config.ftl);
        let mut source = TraceSource { events, host: &mut self.host, pending: VecDeque::new(), error: None, done: false };
        // The trace's length is unknown: progress counts completed requests.
        let mut progress = |update: Progress| observer(Progress { total: 0, ..update });
        let timed = engine.run_with_waf(&mut self.ftl, &mut source, u64::MAX, &mut progress, Some(&mut self.series));
        if let Some(error) = source.error {
            return Err(error);
        }
        let timed = timed.map_err(|error| self.host.locate(error))?;
        Ok(self.report(Some(timed)))
    }

    fn report(self, timed: Option<TimedReport>) -> ReplayReport {
        let geometry = self.geometry;
        ReplayReport {
            nandlab_version: env!("CARGO_PKG_VERSION"),
            seed: self.config.seed,
            device: DeviceSummary::new(&geometry),
            trace: self.host.counts,
            discard: self.host.discard.stats().clone(),
            measured: PhaseReport::new(self.ftl.counters().clone()),
            erase_counts: EraseStats::from_counts(self.ftl.flash().erase_counts(), geometry.pe_cycles),
            waf_series: self.series.into_points(),
            timed,
            config: self.config,
        }
    }

    fn submit_pending(&mut self) -> Result<(), SimError> {
        for request in self.requests.drain(..) {
            submit(&mut self.ftl, &request).map_err(|error| self.host.locate(error))?;
        }
        Ok(())
    }
}

/// The timed engine's request source over a trace: each event passes the
/// DISCARD stage, and the requests it causes arrive at the event's time.
struct TraceSource<'a> {
    events: &'a mut dyn Iterator<Item = HostEvent>,
    host: &'a mut HostStage,
    pending: VecDeque<Request>,
    error: Option<SimError>,
    done: bool,
}

impl TraceSource<'_> {
    /// Turns the next event (or the end of the trace) into pending requests;
    /// `None` when nothing more will come.
    fn refill(&mut self) -> Option<()> {
        if self.done || self.error.is_some() {
            return None;
        }
        let outcome = match self.events.next() {
            Some(event) => self.host.requests(&event, &mut self.pending),
            None => {
                self.done = true;
                self.host.finish(&mut self.pending)
            }
        };
        outcome.map_err(|error| self.error = Some(self.host.locate(error))).ok()
    }
}

impl RequestSource for TraceSource<'_> {
    /// Requests arrive at the time of the event that caused them, counted
    /// from the trace's first event (so a trace with absolute timestamps
    /// starts at once); the DISCARD stage's final issue at the end of the
    /// trace arrives with the last event.
    fn next_request(&mut self) -> Option<TimedRequest> {
        while self.pending.is_empty() {
            self.refill()?;
        }
        let request = self.pending.pop_front()?;
        let counts = &self.host.counts;
        let since_first = counts.last_ns.unwrap_or(0).saturating_sub(counts.first_ns.unwrap_or(0));
        Some(TimedRequest { request, arrival: SimNs(since_first), priority: false })
    }
}

#[cfg(test)]
mod tests;
