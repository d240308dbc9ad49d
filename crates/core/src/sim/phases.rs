//! The measured phase of a run, the one way to run one: a workload (the
//! synthetic workload, `[[job]]` tables, a source of host events, or
//! ready-made timed requests), a mode (counting, to the end or until a stop
//! rule holds; or timed), and an observer. Every workload passes the host
//! stages; where they would pass the synthetic workload's pages unchanged,
//! its page requests skip the detour through host events (same requests,
//! counts and errors).

use super::{
    drive, drive_synthetic, EventFeed, Layer, PageRequests, Phase, Progress, SimError, Simulation, StagedSource,
    Unwatched,
};
use crate::config::ConfigError;
use crate::host::event::HostEvent;
use crate::metrics::{Counters, WafSeries};
use crate::timing::{Arrival, Arrivals, Engine, Interface, RequestSource, TimedReport};
use crate::workload::jobs::{refuse_mixed_in_counting, JobTally, JobsSource};
use crate::workload::{page_event, EventSource, SourceError, SyntheticEvents};

/// Where a measured phase's requests come from.
pub enum Workload<'a> {
    /// This many requests of the synthetic workload (`[workload]`).
    Synthetic(u64),
    /// This many writes of the synthetic workload, without a WAF series:
    /// nothing but the driver and the layer in the loop (the write-path
    /// benchmark).
    Writes(u64),
    /// The `[[job]]` tables together (see [`JobsSource`]), each request's
    /// cost credited to its job.
    Jobs,
    /// Every event of a source (a trace replay), then what the DISCARD
    /// stage still holds.
    Events(&'a mut dyn EventSource),
    /// This many ready-made timed requests (the timing experiments' own
    /// sources), each a host event at its own arrival time.
    Requests(&'a mut dyn RequestSource, u64),
}

/// Decides after each request whether a counting phase ends, shown the
/// layer's cumulative counters and every block's erase count.
pub type StopRule<'a> = &'a mut dyn FnMut(&Counters, &[u32]) -> bool;

/// How a measured phase runs its requests: [`Counting`] or [`Timed`].
/// Contract: `run` runs `workload` on the simulation's device through its
/// host stages and returns what the mode measures beyond the counts.
pub trait PhaseMode {
    /// What the phase returns: nothing in counting mode, the timed report
    /// when timed.
    type Outcome<'s>;

    /// Runs `workload` on `simulation` in this mode.
    fn run<'s>(
        self,
        simulation: &'s mut Simulation,
        workload: Workload<'_>,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<Self::Outcome<'s>, SimError>;
}

/// Counting mode: the layer's counts, no time.
pub enum Counting<'a> {
    /// Every request of the workload.
    ToEnd,
    /// Until the rule holds (or the workload ends).
    Until(StopRule<'a>),
}

/// Through the timing model (`[timing]`): events arrive at their times
/// counted from the first (`timing.arrival = "open"`) or as soon as a
/// queue slot frees (`"closed"`); ready-made timed requests keep their own
/// arrival times; the synthetic workload draws its arrivals from
/// `timing.arrival_iops` and `timing.priority_fraction`.
pub struct Timed;

impl PhaseMode for Counting<'_> {
    type Outcome<'s> = ();

    fn run(
        self,
        simulation: &mut Simulation,
        workload: Workload<'_>,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<(), SimError> {
        let until = match self {
            Self::ToEnd => None,
            Self::Until(rule) => Some(rule),
        };
        simulation.counting_phase(workload, until, observer)
    }
}

impl PhaseMode for Timed {
    type Outcome<'s> = &'s TimedReport;

    fn run<'s>(
        self,
        simulation: &'s mut Simulation,
        workload: Workload<'_>,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<&'s TimedReport, SimError> {
        simulation.timed_phase(workload, observer)
    }
}

impl Simulation {
    pub(super) fn start_measuring(&mut self) {
        self.measure_start = self.counters().clone();
        self.measure_start_erases = self.erase_counts().to_vec();
        if let Some(pblk) = self.layer.pblk() {
            self.pblk_start = pblk.stats().clone();
        }
    }

    /// The WAF series of a measured phase: windows of `metrics.window_pages`,
    /// by default a hundredth of the phase's pages (or, when its length is
    /// unknown, a twentieth of the logical space).
    pub(super) fn phase_series(&self, pages: Option<u64>) -> WafSeries {
        let default = || match pages {
            Some(pages) => (pages / 100).max(1),
            None => (u64::from(self.geometry.logical_pages) / 20).max(1),
        };
        WafSeries::new(self.config.metrics.window_pages.unwrap_or_else(default), self.counters())
    }

    /// Runs a measured phase: `workload` through the host stages onto the
    /// device as aging left it, in `mode` ([`Counting`] or [`Timed`]),
    /// telling `observer` how far it got. The one way to run one.
    pub fn run_phase<M: PhaseMode>(
        &mut self,
        workload: Workload<'_>,
        mode: M,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<M::Outcome<'_>, SimError> {
        mode.run(self, workload, observer)
    }

    /// A measured phase in counting mode, until `until` holds when given.
    /// The synthetic workload's loops are built without a check after each
    /// request when there is no stop rule: the write-path benchmark's loop
    /// is 5 % more instructions with one.
    fn counting_phase(
        &mut self,
        workload: Workload<'_>,
        mut until: Option<StopRule<'_>>,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<(), SimError> {
        let mut stops = |counters: &Counters, erase_counts: &[u32]| {
            until.as_mut().is_some_and(|until| until(counters, erase_counts))
        };
        let (requests, writes_only) = match workload {
            Workload::Synthetic(requests) => (requests, false),
            Workload::Writes(requests) => (requests, true),
            Workload::Jobs => return self.count_jobs(observer, &mut stops),
            Workload::Events(source) => return self.count_events(source, observer, &mut stops),
            Workload::Requests(source, requests) => {
                let mut events = RequestEvents::new(source, requests, self.geometry.sectors_per_page());
                return self.count_events(&mut events, observer, &mut stops);
            }
        };
        let pages = requests * u64::from(self.config.workload.request_pages);
        let mut series = (!writes_only).then(|| self.phase_series(Some(pages)));
        let mut source = SyntheticEvents::new(&mut self.workload, &self.geometry, requests, None);
        if writes_only {
            source = source.writes_only();
        }
        let stop = self.stop.as_deref();
        match (series.as_mut(), until) {
            (None, None) => {
                on_layer!(&mut self.layer, ftl => drive_synthetic(ftl, &mut self.stages, &mut source, Phase::Measure, observer, Unwatched, stop))?;
            }
            (Some(series), None) => {
                on_layer!(&mut self.layer, ftl => drive_synthetic(ftl, &mut self.stages, &mut source, Phase::Measure, observer, &mut *series, stop))?;
            }
            (series, Some(rule)) => {
                let mut series = series;
                let observe = |_, counters: &Counters, erase_counts: &[u32]| {
                    if let Some(series) = series.as_deref_mut() {
                        series.observe(counters);
                    }
                    rule(counters, erase_counts)
                };
                on_layer!(&mut self.layer, ftl => drive_synthetic(ftl, &mut self.stages, &mut source, Phase::Measure, observer, observe, stop))?;
            }
        }
        self.series.extend(series.into_iter().flat_map(WafSeries::into_points));
        Ok(())
    }

    /// The `[[job]]` tables together in counting mode.
    fn count_jobs(
        &mut self,
        observer: &mut dyn FnMut(Progress),
        stops: &mut dyn FnMut(&Counters, &[u32]) -> bool,
    ) -> Result<(), SimError> {
        refuse_mixed_in_counting(&self.config.jobs)?;
        let mut source = JobsSource::new(&self.config.jobs, &self.geometry, self.config.seed);
        let pages = self
            .config
            .jobs
            .iter()
            .map(|job| job.total_requests(&self.geometry) * u64::from(job.workload.request_pages));
        let mut series = self.phase_series(Some(pages.sum()));
        let mut tally = JobTally::new(&self.config.jobs, self.counters());
        let observe = |job, counters: &Counters, erase_counts: &[u32]| {
            series.observe(counters);
            tally.observe(job, counters);
            stops(counters, erase_counts)
        };
        on_layer!(&mut self.layer, ftl => drive(ftl, &mut self.stages, EventFeed::new(&mut source), Phase::Measure, observer, observe, self.stop.as_deref()))?;
        self.series.extend(series.into_points());
        self.jobs = tally.finish();
        Ok(())
    }

    /// Every event of `source` in counting mode.
    fn count_events(
        &mut self,
        source: &mut dyn EventSource,
        observer: &mut dyn FnMut(Progress),
        stops: &mut dyn FnMut(&Counters, &[u32]) -> bool,
    ) -> Result<(), SimError> {
        let mut series = self.phase_series(None);
        let observe = |_, counters: &Counters, erase_counts: &[u32]| {
            series.observe(counters);
            stops(counters, erase_counts)
        };
        on_layer!(&mut self.layer, ftl => drive(ftl, &mut self.stages, EventFeed::new(source), Phase::Measure, observer, observe, self.stop.as_deref()))?;
        self.series.extend(series.into_points());
        Ok(())
    }

    fn timed_phase(
        &mut self,
        workload: Workload<'_>,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<&TimedReport, SimError> {
        match workload {
            Workload::Synthetic(requests) => self.time_synthetic(requests, false, observer),
            Workload::Writes(requests) => self.time_synthetic(requests, true, observer),
            Workload::Jobs => self.time_jobs(observer),
            Workload::Events(source) => {
                // The source's length is unknown: progress counts completed requests.
                let mut progress = |update: Progress| observer(Progress { total: 0, ..update });
                self.time_events(source, false, u64::MAX, &mut progress)
            }
            Workload::Requests(source, requests) => {
                let mut events = RequestEvents::new(source, requests, self.geometry.sectors_per_page());
                self.time_events(&mut events, true, requests, observer)
            }
        }
    }

    /// Every event of `source` (at most `requests` requests) through the
    /// timing model; `keep_arrivals`: at their own times, not counted from
    /// the first event's.
    fn time_events<S: EventSource + ?Sized>(
        &mut self,
        source: &mut S,
        keep_arrivals: bool,
        requests: u64,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<&TimedReport, SimError> {
        let mut series = self.phase_series(None);
        let mut staged = StagedSource::new(source, &mut self.stages);
        if keep_arrivals {
            staged = staged.keeping_arrivals();
        }
        let engine = Engine::new(&self.geometry, &self.config.timing, &self.config.ftl);
        let report = on_layer!(&mut self.layer, ftl => engine.run_with_waf(ftl, &mut staged, requests, observer, Some(&mut series)));
        let report = staged.result(report)?;
        self.series.extend(series.into_points());
        Ok(self.timed.insert(report))
    }

    /// `requests` requests of the synthetic workload (`writes_only`: its
    /// writes, without a WAF series) through the timing model.
    fn time_synthetic(
        &mut self,
        requests: u64,
        writes_only: bool,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<&TimedReport, SimError> {
        let timing = &self.config.timing;
        let iops = (timing.arrival == Arrival::Open).then_some(timing.arrival_iops);
        let arrivals = Arrivals::new(iops, timing.priority_fraction, self.config.seed.wrapping_add(2));
        let pages = requests * u64::from(self.config.workload.request_pages);
        let mut series = (!writes_only).then(|| self.phase_series(Some(pages)));
        let mut source = SyntheticEvents::new(&mut self.workload, &self.geometry, requests, Some(arrivals));
        if writes_only {
            source = source.writes_only();
        }
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
            on_layer!(&mut self.layer, ftl => engine.run_with_waf(ftl, feed, requests, observer, series.as_mut()));
        let report = staged.result(report)?;
        self.series.extend(series.into_iter().flat_map(WafSeries::into_points));
        Ok(self.timed.insert(report))
    }

    /// The `[[job]]` tables together through the timing model: open jobs
    /// (`rate_iops`) arrive at their Poisson times on round-robin queues;
    /// closed jobs each keep their own host queue at their `queue_depth`
    /// ([`Engine::with_job_queues`]), beside the open ones when both kinds
    /// run. Per-job IOPS, MB/s and latency go to `timed.jobs`.
    fn time_jobs(&mut self, observer: &mut dyn FnMut(Progress)) -> Result<&TimedReport, SimError> {
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
}

/// Ready-made timed requests as host events, `left` more of them: each a
/// read, write, trim or flush of its pages at its arrival time, with its
/// priority, deadline and job.
struct RequestEvents<'a> {
    source: &'a mut dyn RequestSource,
    left: u64,
    sectors_per_page: u64,
}

impl<'a> RequestEvents<'a> {
    fn new(source: &'a mut dyn RequestSource, requests: u64, sectors_per_page: u32) -> Self {
        Self { source, left: requests, sectors_per_page: u64::from(sectors_per_page) }
    }
}

impl EventSource for RequestEvents<'_> {
    fn next_event(&mut self) -> Result<Option<HostEvent>, SourceError> {
        if self.left == 0 {
            return Ok(None);
        }
        let Some(timed) = self.source.next_request() else { return Ok(None) };
        self.left -= 1;
        let event = page_event(&timed.request, timed.arrival, timed.priority, self.sectors_per_page);
        Ok(Some(HostEvent { deadline: timed.deadline, job: timed.job.unwrap_or(0), ..event }))
    }
}
