//! The measured phases of a run: the synthetic workload, `[[job]]` tables
//! and trace replays, in counting mode or through the timing engine.

use super::{
    drive, drive_synthetic, EventFeed, Layer, PageRequests, Phase, Progress, SimError, Simulation, StagedSource,
};
use crate::config::ConfigError;
use crate::metrics::{Counters, WafSeries};
use crate::timing::{Arrival, Arrivals, Engine, Interface, RequestSource, TimedReport};
use crate::workload::jobs::{refuse_mixed_in_counting, JobTally, JobsSource};
use crate::workload::{EventSource, SyntheticEvents};

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

    /// Runs `requests` requests of the synthetic workload in counting mode.
    pub fn measure(&mut self, requests: u64, observer: &mut dyn FnMut(Progress)) -> Result<(), SimError> {
        let mut series = self.phase_series(Some(requests * u64::from(self.config.workload.request_pages)));
        let mut source = SyntheticEvents::new(&mut self.workload, &self.geometry, requests, None);
        let observe = |_, counters: &Counters, _: &[u32]| {
            series.observe(counters);
            false
        };
        on_layer!(&mut self.layer, ftl => drive_synthetic(ftl, &mut self.stages, &mut source, Phase::Measure, observer, observe, self.stop.as_deref()))?;
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
        on_layer!(&mut self.layer, ftl => drive_synthetic(ftl, &mut self.stages, &mut source, Phase::Measure, &mut |_| {}, |_, _, _| false, self.stop.as_deref()))
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
}
