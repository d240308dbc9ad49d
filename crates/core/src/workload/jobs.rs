//! Several workloads at once, as fio's job sections and MQSim's flows: each
//! `[[job]]` has its own synthetic workload (pattern, request size, mix,
//! distribution) over its own slice of the logical space, its own arrival
//! (a closed loop at a queue depth, or a rate), stream hint and priority.
//! [`JobsSource`] merges the jobs into one event stream whose events carry
//! their job's index, so the driver can credit what each request cost
//! (host pages, flash programs, GC copies, erases) to its job.

use crate::device::Geometry;
use crate::error::ConfigError;
use crate::host::discard::SectorRange;
use crate::host::event::{HostEvent, HostOp};
use crate::metrics::Counters;
use crate::units::SimNs;
use crate::workload::Arrivals;
use crate::workload::{EventSource, SourceError, Synthetic, WorkloadConfig};
use nandlab_convert::{f64_of, saturating};
use serde::{Deserialize, Serialize};

/// Most jobs one run may have (job indices are `u16`).
pub const JOBS_MAX: usize = 1024;

/// One `[[job]]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobConfig {
    /// Names the job in reports; unique within the run.
    pub name: String,
    /// Where the job's addresses lie: `[range_start, range_end)` as fractions
    /// of the logical space.
    #[serde(default)]
    pub range_start: f64,
    #[serde(default = "whole")]
    pub range_end: f64,
    /// Closed loop: this many requests outstanding on the job's own host
    /// queue (ignored when `rate_iops` is set).
    #[serde(default = "one")]
    pub queue_depth: u32,
    /// Open loop: Poisson arrivals at this mean rate.
    #[serde(default)]
    pub rate_iops: Option<u64>,
    /// Open loop: requests come in bursts of this many, `burst_gap_us`
    /// apart, the way one application's run of synchronous requests does;
    /// bursts start as a Poisson stream at `rate_iops / burst_len` (the
    /// gaps inside bursts lower the mean rate by `(burst_len - 1) ×
    /// burst_gap_us` per burst). 1: every request arrives on its own.
    #[serde(default = "one")]
    pub burst_len: u32,
    #[serde(default)]
    pub burst_gap_us: u64,
    /// Every request of the job is a priority request (priority-aware cleaning).
    #[serde(default)]
    pub priority: bool,
    /// The workload: the `[workload]` keys (pattern, request_pages,
    /// read_fraction, trim_fraction, distribution, …, stream, and one of
    /// requests / bytes / device_writes, the last counted over the job's range).
    #[serde(flatten)]
    pub workload: WorkloadConfig,
    /// Keys neither of the above takes (serde cannot deny them through a
    /// flattened struct); [`JobConfig::validate`] refuses them by name.
    #[serde(flatten, skip_serializing)]
    pub unknown: std::collections::BTreeMap<String, serde::de::IgnoredAny>,
}

fn whole() -> f64 {
    1.0
}

fn one() -> u32 {
    1
}

impl JobConfig {
    /// Checks the job against the device; errors name `job.NAME.KEY`.
    pub fn validate(&self, geometry: &Geometry, streams: u32) -> Result<(), ConfigError> {
        let key = |leaf: &str| format!("job.{}.{leaf}", self.name);
        if self.name.is_empty() {
            return Err(ConfigError::new("job.name", "every job needs a name"));
        }
        if let Some(unknown) = self.unknown.keys().next() {
            return Err(ConfigError::new(key(unknown), "unknown key of a [[job]] table"));
        }
        let (start, end) = (self.range_start, self.range_end);
        if !(start.is_finite() && (0.0..1.0).contains(&start)) {
            return Err(ConfigError::new(
                key("range_start"),
                format!("{start} is not a fraction of the logical space in [0, 1)"),
            ));
        }
        if !(end.is_finite() && start < end && end <= 1.0) {
            return Err(ConfigError::new(
                key("range_end"),
                format!("{end} is not a fraction of the logical space in (range_start = {start}, 1]"),
            ));
        }
        if self.queue_depth == 0 {
            return Err(ConfigError::new(key("queue_depth"), "must be at least 1"));
        }
        if self.rate_iops == Some(0) {
            return Err(ConfigError::new(key("rate_iops"), "must be at least 1 (leave it out for a closed loop)"));
        }
        if self.burst_len == 0 {
            return Err(ConfigError::new(key("burst_len"), "must be at least 1"));
        }
        if self.burst_len > 1 && self.rate_iops.is_none_or(|rate| rate < u64::from(self.burst_len)) {
            return Err(ConfigError::new(
                key("burst_len"),
                "bursts need a rate_iops of at least burst_len (a closed loop has no arrival times)",
            ));
        }
        if self.burst_gap_us.checked_mul(1000).is_none() {
            return Err(ConfigError::new(key("burst_gap_us"), "too large"));
        }
        let range = self.range_geometry(geometry).map_err(|reason| ConfigError::new(key("range_end"), reason))?;
        self.workload.validate(&range, streams).map_err(|error| {
            ConfigError::new(error.key.replacen("workload", &format!("job.{}", self.name), 1), error.reason)
        })
    }

    /// The first logical page of the job's range.
    fn first_page(&self, geometry: &Geometry) -> u32 {
        saturating::<u32>((self.range_start * f64::from(geometry.logical_pages)).floor())
    }

    /// The device as the job sees it: its range as the whole logical space.
    fn range_geometry(&self, geometry: &Geometry) -> Result<Geometry, String> {
        let end = saturating::<u32>((self.range_end * f64::from(geometry.logical_pages)).floor());
        let pages = end.saturating_sub(self.first_page(geometry));
        if pages == 0 {
            return Err("the range holds no whole page".to_owned());
        }
        let mut range = *geometry;
        range.logical_pages = pages;
        Ok(range)
    }

    /// Poisson arrivals at `rate` requests/s, in bursts when `burst_len` > 1
    /// (every arrival of the burst process starts one).
    fn arrivals(&self, rate: u64, seed: u64) -> Arrivals {
        if self.burst_len > 1 {
            Arrivals::new(Some(rate / u64::from(self.burst_len)), 1.0, seed)
                .with_priority_bursts(self.burst_len, self.burst_gap_us.saturating_mul(1000))
        } else {
            Arrivals::new(Some(rate), 0.0, seed)
        }
    }

    /// The mean rate the job's requests arrive at ([`Self::arrivals`]);
    /// `None` for a closed loop. In bursts, each of ⌊rate_iops / burst_len⌋
    /// burst starts a second (mean gap 1 / that) is followed by the
    /// burst's `burst_len − 1` gaps before the next gap is drawn, so a cycle
    /// of `burst_len` requests lasts the mean gap plus those gaps.
    pub fn offered_iops(&self) -> Option<f64> {
        let rate = self.rate_iops?;
        if self.burst_len <= 1 {
            return Some(f64_of(rate));
        }
        let bursts_per_s = rate / u64::from(self.burst_len);
        let cycle_s = 1.0 / f64_of(bursts_per_s) + f64::from(self.burst_len - 1) * f64_of(self.burst_gap_us) / 1e6;
        Some(f64::from(self.burst_len) / cycle_s)
    }

    /// Requests the job issues.
    pub fn total_requests(&self, geometry: &Geometry) -> u64 {
        self.range_geometry(geometry).map_or(0, |range| self.workload.total_requests(&range))
    }
}

/// Checks the jobs together: each valid, names unique. Whether open and
/// closed jobs may run together depends on the mode ([`refuse_mixed_in_counting`]).
pub fn validate_jobs(jobs: &[JobConfig], geometry: &Geometry, streams: u32) -> Result<(), ConfigError> {
    if jobs.len() > JOBS_MAX {
        return Err(ConfigError::new("job", format!("{} jobs; at most {JOBS_MAX}", jobs.len())));
    }
    for (index, job) in jobs.iter().enumerate() {
        job.validate(geometry, streams)?;
        if jobs[..index].iter().any(|other| other.name == job.name) {
            return Err(ConfigError::new(format!("job.{}.name", job.name), "two jobs have this name"));
        }
    }
    Ok(())
}

/// Counting mode: refuses open-loop (rate) jobs beside closed-loop ones.
/// It has no time to weigh a rate against a queue depth; the timing model
/// runs both (each closed job on its own queue, the open ones arriving on
/// shared ones).
pub fn refuse_mixed_in_counting(jobs: &[JobConfig]) -> Result<(), ConfigError> {
    let open = jobs.iter().filter(|job| job.rate_iops.is_some()).count();
    if open > 0 && open < jobs.len() {
        return Err(ConfigError::new(
            "job.rate_iops",
            "give every job a rate_iops or none in counting mode: it has no time to weigh a rate against a \
             queue depth (the timing model, --timing on, runs rate jobs beside closed-loop ones)",
        ));
    }
    Ok(())
}

/// One job while it runs: its generator, what is left, and when its next request is due.
#[derive(Debug)]
struct Running {
    synthetic: Synthetic,
    first_page: u32,
    remaining: u64,
    arrivals: Option<Arrivals>,
    /// The next request's arrival: ns for an open job, requests per queue slot for a closed one.
    due: f64,
    queue_depth: u32,
    issued: u64,
    priority: bool,
    time: SimNs,
}

/// The jobs merged into one event stream: the job whose next request is due
/// first goes next (ties: the job listed first). Open jobs are due at their
/// Poisson arrival times; closed jobs (no time in counting mode) are due in
/// proportion to their queue depths, so a job at depth 4 issues four
/// requests for each one of a job at depth 1. Beside open jobs (the timing
/// model only), the stream carries the open jobs alone: the engine asks
/// each closed job for its requests ([`EventSource::next_event_of`]).
/// Every event carries its job's index.
#[derive(Debug)]
pub struct JobsSource {
    jobs: Vec<Running>,
    /// Some job has a rate: the merged stream holds the open jobs only.
    open_stream: bool,
    sectors_per_page: u64,
    total: u64,
}

impl JobsSource {
    /// `jobs` must have passed [`validate_jobs`]; job `i` draws from seed `seed + 16 + 2i`.
    pub fn new(jobs: &[JobConfig], geometry: &Geometry, seed: u64) -> Self {
        let running: Vec<Running> = jobs
            .iter()
            .zip(0u64..)
            .map(|(job, index)| {
                let range = job.range_geometry(geometry).unwrap_or(*geometry);
                let job_seed = seed.wrapping_add(16 + 2 * index);
                let arrivals = job.rate_iops.map(|rate| job.arrivals(rate, job_seed.wrapping_add(1)));
                let mut running = Running {
                    synthetic: Synthetic::new(&job.workload, &range, job_seed),
                    first_page: job.first_page(geometry),
                    remaining: job.total_requests(geometry),
                    arrivals,
                    due: 0.0,
                    queue_depth: job.queue_depth,
                    issued: 0,
                    priority: job.priority,
                    time: SimNs(0),
                };
                running.advance();
                running
            })
            .collect();
        let total = running.iter().map(|job| job.remaining).sum();
        let open_stream = running.iter().any(|job| job.arrivals.is_some());
        Self { jobs: running, open_stream, sectors_per_page: u64::from(geometry.sectors_per_page()), total }
    }
}

impl Running {
    /// Sets when the job's next request is due.
    fn advance(&mut self) {
        match &mut self.arrivals {
            Some(arrivals) => {
                let (time, _) = arrivals.next();
                self.time = time;
                let due = f64_of(time.0);
                self.due = due;
            }
            None => {
                let due = f64_of(self.issued) / f64::from(self.queue_depth);
                self.due = due;
            }
        }
    }
}

impl JobsSource {
    /// Job `index`'s next request as an event; `None` once the job has issued all.
    fn issue(&mut self, index: usize) -> Option<HostEvent> {
        let job = self.jobs.get_mut(index).filter(|job| job.remaining > 0)?;
        let request = job.synthetic.next_request();
        let op = HostOp::from(request.op);
        let start = u64::from(job.first_page + request.start.0) * self.sectors_per_page;
        let sectors = SectorRange::new(start, u64::from(request.pages) * self.sectors_per_page);
        let event = HostEvent {
            priority: job.priority,
            stream: request.stream,
            job: u16::try_from(index).unwrap_or(u16::MAX),
            ..HostEvent::new(job.time, op, sectors)
        };
        job.remaining -= 1;
        job.issued += 1;
        job.advance();
        Some(event)
    }
}

impl EventSource for JobsSource {
    fn next_event(&mut self) -> Result<Option<HostEvent>, SourceError> {
        let next = self
            .jobs
            .iter()
            .enumerate()
            .filter(|(_, job)| job.remaining > 0 && (job.arrivals.is_some() || !self.open_stream))
            .min_by(|(_, a), (_, b)| a.due.total_cmp(&b.due))
            .map(|(index, _)| index);
        Ok(next.and_then(|index| self.issue(index)))
    }

    /// A closed job's next request, asked for when one of its requests completed.
    fn next_event_of(&mut self, job: u16) -> Result<Option<HostEvent>, SourceError> {
        Ok(self.issue(usize::from(job)))
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.total)
    }
}

/// What one job did and what it cost the device, counted per request:
/// flash programs, GC copies and erases that happen while a request runs
/// are credited to that request's job (GC a write triggers is its job's).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct JobReport {
    pub name: String,
    pub requests: u64,
    pub host_pages_written: u64,
    pub host_pages_read: u64,
    pub host_pages_trimmed: u64,
    pub flash_pages_programmed: u64,
    pub gc_page_copies: u64,
    pub erases: u64,
    /// The job's share of the device's flash programs over the measured phase.
    pub flash_write_share: f64,
    /// The job's share of the GC page copies.
    pub gc_share: f64,
}

/// Credits each request's counter changes to its job.
#[derive(Debug)]
pub struct JobTally {
    jobs: Vec<JobReport>,
    last: Counters,
}

impl JobTally {
    /// Starts counting from `start` (the counters when the measured phase begins).
    pub fn new(jobs: &[JobConfig], start: &Counters) -> Self {
        let jobs = jobs.iter().map(|job| JobReport { name: job.name.clone(), ..JobReport::default() }).collect();
        Self { jobs, last: start.clone() }
    }

    /// `counters` after a request of job `job` ran.
    pub fn observe(&mut self, job: u16, counters: &Counters) {
        let change = counters.since(&self.last);
        if let Some(report) = self.jobs.get_mut(usize::from(job)) {
            report.requests += change.requests;
            report.host_pages_written += change.host_pages_written;
            report.host_pages_read += change.host_pages_read;
            report.host_pages_trimmed += change.host_pages_trimmed;
            report.flash_pages_programmed += change.flash_pages_programmed;
            report.gc_page_copies += change.gc_page_copies;
            report.erases += change.erases;
        }
        self.last.clone_from(counters);
    }

    /// The per-job reports with their shares of the totals.
    pub fn finish(mut self) -> Vec<JobReport> {
        let programmed: u64 = self.jobs.iter().map(|job| job.flash_pages_programmed).sum();
        let copies: u64 = self.jobs.iter().map(|job| job.gc_page_copies).sum();
        let share = |part: u64, whole: u64| if whole == 0 { 0.0 } else { f64_of(part) / f64_of(whole) };
        for job in &mut self.jobs {
            job.flash_write_share = share(job.flash_pages_programmed, programmed);
            job.gc_share = share(job.gc_page_copies, copies);
        }
        self.jobs
    }
}
