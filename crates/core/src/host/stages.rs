//! The host stages between a workload source and the translation layer, in
//! order: the DISCARD policy (off, online, Delay-D, periodic), the write
//! classifier (a class per write, given to the translation layer as its
//! placement hint), and request priority. Each stage works on host events
//! in 512-byte sectors; the last step turns what survives into page
//! requests. Every source and every translation layer goes through them.

use crate::device::Geometry;
use crate::error::ConfigError;
use crate::ftl::FtlError;
use crate::host::classify::{Classifier, ClassifierKind, HotTracker, WriteInfo};
use crate::host::discard::{DiscardConfig, DiscardPolicy, DiscardScheduler, DiscardStats, SectorRange};
use crate::host::event::{HostEvent, HostOp};
use crate::host::{Op, Request};
use crate::units::{Lpn, SimNs, StreamId};
use serde::{Deserialize, Serialize};

/// The `[host]` section: which stages besides DISCARD (`[discard]`) run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// Classifies writes into classes that become placement hints (streams
    /// of the page FTL, lines of the open-channel host FTL).
    #[serde(default)]
    pub classifier: ClassifierKind,
    /// `journal-hot-cold`: a page is hot once written this many times
    /// (counts halve every `logical pages` writes).
    #[serde(default = "default_hot_min_writes")]
    pub hot_min_writes: u8,
    /// Which requests are priority requests for priority-aware cleaning.
    #[serde(default)]
    pub priority: PriorityRule,
}

fn default_hot_min_writes() -> u8 {
    4
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            classifier: ClassifierKind::default(),
            hot_min_writes: default_hot_min_writes(),
            priority: PriorityRule::default(),
        }
    }
}

impl HostConfig {
    /// Classes the classifier names must be streams the translation layer has.
    pub fn validate(&self, streams: u32) -> Result<(), ConfigError> {
        let classes = self.class_count()?;
        if classes > streams as usize {
            return Err(ConfigError::new(
                "host.classifier",
                format!("names {classes} classes, but the translation layer has {streams} streams (ftl.streams)"),
            ));
        }
        if self.hot_min_writes == 0 {
            return Err(ConfigError::new("host.hot_min_writes", "must be at least 1"));
        }
        Ok(())
    }

    /// How many classes the classifier names (0 without one): a write's
    /// class is the stream it is written in, whatever its source said.
    pub fn class_count(&self) -> Result<usize, ConfigError> {
        if self.classifier == ClassifierKind::None {
            return Ok(0);
        }
        let classes = Classifier::from_kind(self.classifier, &[], None)
            .map_err(|error| ConfigError::new("host.classifier", error.to_string()))?
            .classes()
            .len();
        // Without a tracker the hot class is not built, but a run has one.
        Ok(if self.classifier == ClassifierKind::JournalHotCold { classes + 1 } else { classes })
    }
}

/// Which requests are priority requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PriorityRule {
    /// As the source marks them (synthetic: `timing.priority_fraction`).
    #[default]
    Source,
    /// Synchronous requests (`REQ_SYNC`, reads, flushes) from a trace too.
    Sync,
}

/// What the host stages received, by operation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HostCounts {
    pub reads: u64,
    pub writes: u64,
    pub discards: u64,
    /// Flush commands (an empty request with only a cache flush).
    pub flushes: u64,
    /// Cache flushes that came with writes — a PREFLUSH before the data, a
    /// FUA after it — each a flush request to the device as a flush command
    /// is; a timed report's `flush` latencies count both kinds.
    pub flushes_in_writes: u64,
    pub journal_commits: u64,
    pub priority: u64,
    pub read_sectors: u64,
    pub write_sectors: u64,
    pub discard_sectors: u64,
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
}

impl HostCounts {
    #[inline]
    fn count(&mut self, event: &HostEvent, priority: bool) {
        self.count_op(event.op, event.sectors.sectors(), event.time, priority);
        self.journal_commits += u64::from(event.journal_commit);
        if event.op == HostOp::Write {
            self.flushes_in_writes += u64::from(event.flags.preflush) + u64::from(event.flags.fua);
        }
    }

    #[inline]
    fn count_op(&mut self, op: HostOp, sectors: u64, time: SimNs, priority: bool) {
        match op {
            HostOp::Read => (self.reads += 1, self.read_sectors += sectors),
            HostOp::Write => (self.writes += 1, self.write_sectors += sectors),
            HostOp::Discard => (self.discards += 1, self.discard_sectors += sectors),
            HostOp::Flush => (self.flushes += 1, ()),
        };
        self.priority += u64::from(priority);
        self.first_ns.get_or_insert(time.0);
        self.last_ns = Some(time.0);
    }

    /// Simulated time from the first event to the last.
    pub fn span_ns(&self) -> u64 {
        self.last_ns.unwrap_or(0).saturating_sub(self.first_ns.unwrap_or(0))
    }
}

/// Sector-to-page arithmetic, by shifts when a page holds a power of two of sectors.
#[derive(Clone, Copy, Debug)]
struct Pages {
    sectors_per_page: u64,
    shift: Option<u32>,
}

impl Pages {
    fn new(sectors_per_page: u64) -> Self {
        Self { sectors_per_page, shift: sectors_per_page.is_power_of_two().then(|| sectors_per_page.trailing_zeros()) }
    }

    #[inline]
    fn floor(self, sector: u64) -> u64 {
        match self.shift {
            Some(shift) => sector >> shift,
            None => sector / self.sectors_per_page,
        }
    }

    #[inline]
    fn ceil(self, sector: u64) -> u64 {
        match self.shift {
            Some(shift) => (sector + self.sectors_per_page - 1) >> shift,
            None => sector.div_ceil(self.sectors_per_page),
        }
    }
}

/// The stages of one run. Feed it events in order with [`Self::requests`],
/// then call [`Self::finish`] once.
#[derive(Debug)]
pub struct HostStages {
    pages: Pages,
    logical_pages: u32,
    discard: DiscardScheduler,
    classifier: Option<Classifier>,
    priority: PriorityRule,
    issue: Vec<SectorRange>,
    counts: HostCounts,
    events: u64,
    /// See [`Self::passes_pages`].
    passes_pages: bool,
}

impl HostStages {
    /// `journal`: the file system journal's sector ranges, when the source knows them.
    pub fn new(
        geometry: &Geometry,
        host: &HostConfig,
        discard: &DiscardConfig,
        journal: &[SectorRange],
    ) -> Result<Self, ConfigError> {
        let classifier = match host.classifier {
            ClassifierKind::None => None,
            kind => {
                let hot = (kind == ClassifierKind::JournalHotCold).then(|| {
                    let halve_every = u64::from(geometry.logical_pages);
                    HotTracker::new(
                        geometry.logical_pages,
                        geometry.sectors_per_page(),
                        host.hot_min_writes,
                        halve_every,
                    )
                });
                let classifier = Classifier::from_kind(kind, journal, hot)
                    .map_err(|error| ConfigError::new("host.classifier", error.to_string()))?;
                Some(classifier)
            }
        };
        Ok(Self {
            pages: Pages::new(u64::from(geometry.sectors_per_page())),
            logical_pages: geometry.logical_pages,
            discard: DiscardScheduler::new(discard),
            passes_pages: classifier.is_none() && matches!(discard.policy, DiscardPolicy::Off | DiscardPolicy::Online),
            classifier,
            priority: host.priority,
            issue: Vec::new(),
            counts: HostCounts::default(),
            events: 0,
        })
    }

    /// The classes the classifier names (`["data"]` without one).
    pub fn classes(&self) -> Vec<String> {
        self.classifier.as_ref().map_or_else(|| vec!["data".to_owned()], |classifier| classifier.classes().to_vec())
    }

    pub fn counts(&self) -> &HostCounts {
        &self.counts
    }

    pub fn discard_stats(&self) -> &DiscardStats {
        self.discard.stats()
    }

    /// Events received so far (the position of the last one, for errors).
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Appends the requests `event` causes to `out`, each with its priority.
    /// Ranges the DISCARD stage makes due before the event are trimmed
    /// before it: a write arriving now must never be trimmed by an older DISCARD.
    #[inline]
    pub fn requests(&mut self, event: &HostEvent, out: &mut impl Extend<(Request, bool)>) -> Result<(), FtlError> {
        self.events += 1;
        let priority = event.priority || (self.priority == PriorityRule::Sync && is_sync(event));
        self.counts.count(event, priority);
        self.discard.advance(event.time, &mut self.issue);
        self.trims(out)?;
        let flush = || (Request { op: Op::Flush, start: Lpn(0), pages: 0, stream: event.stream }, priority);
        match event.op {
            HostOp::Write => {
                // The block layer runs REQ_PREFLUSH as a flush before the
                // write and REQ_FUA as one after it on a device with a
                // volatile write cache (pblk exposes one, without FUA).
                if event.flags.preflush {
                    out.extend(Some(flush()));
                }
                self.discard.write(event.sectors);
                let stream = self.classify(event);
                let first = self.pages.floor(event.sectors.start);
                let end = self.pages.ceil(event.sectors.end);
                if let Some(request) = self.request(Op::Write, first, end, stream)? {
                    out.extend(Some((request, priority)));
                }
                if event.flags.fua {
                    out.extend(Some(flush()));
                }
            }
            HostOp::Read => {
                let first = self.pages.floor(event.sectors.start);
                let end = self.pages.ceil(event.sectors.end);
                if let Some(request) = self.request(Op::Read, first, end, event.stream)? {
                    out.extend(Some((request, priority)));
                }
            }
            HostOp::Discard => self.discard.discard(event.time, event.sectors, &mut self.issue),
            HostOp::Flush => out.extend(Some(flush())),
        }
        if event.journal_commit {
            self.discard.journal_commit(event.time, &mut self.issue);
        }
        self.trims(out)
    }

    /// Whether every stage passes a read or write of whole pages without
    /// flags unchanged: no classifier, and a DISCARD policy (off, online)
    /// that holds nothing a write could cancel and issues nothing by time.
    /// A source that makes page requests may then hand such reads and
    /// writes in with [`Self::page_request`] instead of as events (the
    /// counting loop's and the timed synthetic source's fast path, chosen once per run).
    pub fn passes_pages(&self) -> bool {
        self.passes_pages
    }

    /// Exactly what [`Self::requests`] does with a read or write event of
    /// `request`'s pages at `time`, without flags or journal marks, that
    /// its source marked `priority`, when [`Self::passes_pages`]: counts it
    /// and checks its range. Returns the request's priority, `None` when it
    /// holds no page (nothing to submit).
    #[inline]
    pub fn page_request(&mut self, request: &Request, time: SimNs, priority: bool) -> Result<Option<bool>, FtlError> {
        debug_assert!(self.passes_pages && self.issue.is_empty());
        debug_assert!(matches!(request.op, Op::Read | Op::Write));
        self.events += 1;
        let read = request.op == Op::Read;
        let priority = priority || (read && self.priority == PriorityRule::Sync);
        let op = if read { HostOp::Read } else { HostOp::Write };
        self.counts.count_op(op, u64::from(request.pages) * self.pages.sectors_per_page, time, priority);
        let first = u64::from(request.start.0);
        let end = first + u64::from(request.pages);
        if end > u64::from(self.logical_pages) {
            return Err(FtlError::LpnOutOfRange { lpn: end - 1, logical_pages: self.logical_pages });
        }
        Ok((end > first).then_some(priority))
    }

    /// The end of the workload: what the DISCARD stage still holds.
    pub fn finish(&mut self, out: &mut impl Extend<(Request, bool)>) -> Result<(), FtlError> {
        self.discard.finish(&mut self.issue);
        self.trims(out)
    }

    fn classify(&mut self, event: &HostEvent) -> StreamId {
        match &mut self.classifier {
            None => event.stream,
            Some(classifier) => {
                let write =
                    WriteInfo { sectors: event.sectors, journal_thread: event.journal_thread, flags: event.flags };
                StreamId(classifier.classify(&write).0)
            }
        }
    }

    /// Trims the pages wholly inside each issued range: a device cannot
    /// invalidate part of a page.
    #[inline]
    fn trims(&mut self, out: &mut impl Extend<(Request, bool)>) -> Result<(), FtlError> {
        if self.issue.is_empty() {
            return Ok(());
        }
        self.issue_trims(out)
    }

    #[inline(never)]
    fn issue_trims(&mut self, out: &mut impl Extend<(Request, bool)>) -> Result<(), FtlError> {
        for range in std::mem::take(&mut self.issue) {
            let first = self.pages.ceil(range.start);
            let end = self.pages.floor(range.end);
            if let Some(request) = self.request(Op::Trim, first, end, StreamId(0))? {
                out.extend(Some((request, false)));
            }
        }
        Ok(())
    }

    #[inline]
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
}

/// Reads, flushes and writes marked `REQ_SYNC` or `REQ_FUA`: someone waits for them.
fn is_sync(event: &HostEvent) -> bool {
    match event.op {
        HostOp::Read | HostOp::Flush => true,
        HostOp::Write => event.flags.sync || event.flags.fua,
        HostOp::Discard => false,
    }
}
