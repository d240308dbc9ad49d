//! Trace replay in counting mode: host events from a block trace pass the
//! DISCARD stage and reach the FTL as page writes, reads and trims. The
//! front end turns a trace file into [`HostEvent`]s; this module never
//! touches files.

use crate::config::{Config, ConfigError};
use crate::device::Geometry;
use crate::ftl::{FtlError, PageFtl};
use crate::host::discard::{DiscardScheduler, DiscardStats, SectorRange};
use crate::metrics::{EraseStats, WafPoint, WafSeries};
use crate::sim::{DeviceSummary, PhaseReport, SimError};
use crate::units::{Lpn, SimNs, StreamId};
use serde::Serialize;

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
    pub waf_series: Vec<WafPoint>,
}

/// Replays events one by one; [`Replayer::finish`] issues what the DISCARD
/// stage still holds and reports.
pub struct Replayer {
    config: Config,
    geometry: Geometry,
    ftl: PageFtl,
    discard: DiscardScheduler,
    issue: Vec<SectorRange>,
    counts: TraceCounts,
    series: WafSeries,
    events: u64,
}

impl Replayer {
    pub fn new(config: &Config) -> Result<Self, SimError> {
        let geometry = config.validate()?;
        let ftl = PageFtl::new(&geometry, &config.ftl, config.seed)?;
        let window = config.metrics.window_pages.unwrap_or_else(|| (u64::from(geometry.logical_pages) / 20).max(1));
        let series = WafSeries::new(window, ftl.counters());
        Ok(Self {
            config: config.clone(),
            geometry,
            ftl,
            discard: DiscardScheduler::new(&config.discard),
            issue: Vec::new(),
            counts: TraceCounts::default(),
            series,
            events: 0,
        })
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// Applies one event. Errors name the event's position in the trace.
    pub fn apply(&mut self, event: &HostEvent) -> Result<(), SimError> {
        self.events += 1;
        self.count(event);
        self.discard.advance(event.time, &mut self.issue);
        let result = match event.op {
            HostOp::Write => {
                self.discard.write(event.sectors);
                self.write(event)
            }
            HostOp::Read => self.read(event),
            HostOp::Discard => {
                self.discard.discard(event.time, event.sectors, &mut self.issue);
                Ok(())
            }
            HostOp::Flush => Ok(()),
        };
        result.map_err(|error| self.locate(error))?;
        if event.journal_commit {
            self.discard.journal_commit(event.time, &mut self.issue);
        }
        self.trim_issued().map_err(|error| self.locate(error))?;
        self.series.observe(self.ftl.counters());
        Ok(())
    }

    pub fn finish(mut self) -> Result<ReplayReport, SimError> {
        self.discard.finish(&mut self.issue);
        self.trim_issued()?;
        let geometry = self.geometry;
        Ok(ReplayReport {
            nandlab_version: env!("CARGO_PKG_VERSION"),
            seed: self.config.seed,
            device: DeviceSummary::new(&geometry),
            trace: self.counts,
            discard: self.discard.stats().clone(),
            measured: PhaseReport::new(self.ftl.counters().clone()),
            erase_counts: EraseStats::from_counts(self.ftl.flash().erase_counts(), geometry.pe_cycles),
            waf_series: self.series.into_points(),
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

    /// Every page the request touches is written: a partial page costs a
    /// whole page program (the read-modify-write's read is not modelled here).
    fn write(&mut self, event: &HostEvent) -> Result<(), FtlError> {
        self.ftl.count_request();
        for lpn in self.touched_pages(event.sectors) {
            self.ftl.write(Lpn(lpn), event.stream)?;
        }
        Ok(())
    }

    fn read(&mut self, event: &HostEvent) -> Result<(), FtlError> {
        self.ftl.count_request();
        for lpn in self.touched_pages(event.sectors) {
            self.ftl.read(Lpn(lpn))?;
        }
        Ok(())
    }

    /// Trims the pages wholly inside each issued range: a device cannot
    /// invalidate part of a page.
    fn trim_issued(&mut self) -> Result<(), FtlError> {
        let sectors_per_page = u64::from(self.geometry.sectors_per_page());
        for range in self.issue.drain(..) {
            let first = range.start.div_ceil(sectors_per_page);
            let end = range.end / sectors_per_page;
            if end > first {
                let first = page_number(first, &self.geometry)?;
                let pages = u32::try_from(end - u64::from(first)).map_err(|_| out_of_range(end, &self.geometry))?;
                self.ftl.trim(Lpn(first), pages)?;
            }
        }
        Ok(())
    }

    fn touched_pages(&self, sectors: SectorRange) -> std::ops::Range<u32> {
        let sectors_per_page = u64::from(self.geometry.sectors_per_page());
        let first = sectors.start / sectors_per_page;
        let end = sectors.end.div_ceil(sectors_per_page);
        let clamp = |page: u64| u32::try_from(page).unwrap_or(u32::MAX);
        clamp(first)..clamp(end)
    }

    fn locate(&self, error: FtlError) -> SimError {
        SimError::Config(ConfigError::new(
            "",
            format!("trace request #{}: {error} (is the device smaller than the trace? try --fit)", self.events),
        ))
    }
}

fn page_number(page: u64, geometry: &Geometry) -> Result<u32, FtlError> {
    u32::try_from(page).map_err(|_| out_of_range(page, geometry))
}

fn out_of_range(page: u64, geometry: &Geometry) -> FtlError {
    FtlError::LpnOutOfRange { lpn: page, logical_pages: geometry.logical_pages }
}
