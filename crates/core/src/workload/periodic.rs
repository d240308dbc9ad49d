//! Periodic real-time tasks as a workload (Telomere Section 3.1, Table 1).
//! This file owns the task model the simulator runs, the job stream it
//! releases as host events ([`PeriodicEvents`], a request source of the one
//! pipeline), and a seeded task-set generator (Section 6.2).
//!
//! Layout: task i owns `w_i · (l_i + 1)` logical pages, a ring of `l_i + 1`
//! write slots. Write job k fills slot `k mod (l_i + 1)` and its data expire
//! at `release + (l_i + 1) · T_i^w` (eq. (3)-(4): the lifetime plus the extra
//! period), the moment the slot is written again. A page-mapped FTL that
//! knows nothing of lifetimes therefore sees each task overwrite its own data
//! exactly when it expires. A read job reads the task's `r_i` newest pages.

use crate::device::Geometry;
use crate::ftl::{FtlError, TranslationLayer};
use crate::host::discard::SectorRange;
use crate::host::event::{HostEvent, HostOp};
use crate::units::{Lpn, SimNs, StreamId};
use crate::workload::source::{EventSource, SourceError};
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;

/// One periodic task τ_i. A task with `write_pages = 0` does not write, one
/// with `read_pages = 0` does not read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PeriodicTask {
    /// r_i and T_i^r.
    pub read_pages: u32,
    pub read_period: SimNs,
    /// w_i and T_i^w.
    pub write_pages: u32,
    pub write_period: SimNs,
    /// l_i^w: write periods during which written data stays valid.
    pub lifetime_periods: u32,
}

impl PeriodicTask {
    /// K(τ_i) = w_i · (l_i^w + 1) of eq. (5): the task's logical pages.
    pub fn region_pages(&self) -> u64 {
        u64::from(self.write_pages) * (u64::from(self.lifetime_periods) + 1)
    }

    /// T_i^w · (l_i^w + 1): how long a written page occupies flash.
    pub fn data_lifetime(&self) -> SimNs {
        SimNs(self.write_period.0.saturating_mul(u64::from(self.lifetime_periods) + 1))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PeriodicError {
    #[error("task {task}: {what} period is 0 while it moves {pages} pages per period")]
    ZeroPeriod { task: usize, what: &'static str, pages: u32 },
    #[error("the tasks need {needed} logical pages, more than the {available} the device maps")]
    TooLarge { needed: u64, available: u64 },
    #[error("{tasks} tasks, but a lifetime-aware run tells tasks apart by stream and has {max}")]
    TooManyTasks { tasks: usize, max: usize },
    #[error("task generator: {0}")]
    Generator(String),
}

/// Read or write job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKind {
    Write,
    Read,
}

/// One released job: `pages` logical pages of task `task`'s ring, starting at
/// ring index `first`, due by `deadline` (deadline = period).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    pub task: usize,
    pub kind: JobKind,
    pub release: SimNs,
    pub deadline: SimNs,
    pub pages: u32,
    /// When the data written by a write job expire (eq. (4)).
    pub expires: SimNs,
    region_start: u32,
    region_pages: u32,
    first: u32,
}

impl Job {
    /// The logical page of the job's `page`-th page.
    pub fn lpn(&self, page: u32) -> Lpn {
        Lpn(self.region_start + (self.first + page) % self.region_pages.max(1))
    }
}

/// The job stream of a task set: jobs in release order, simultaneous releases
/// earliest deadline first (then task, writes before reads).
#[derive(Debug, Clone)]
pub struct PeriodicWorkload {
    tasks: Vec<PeriodicTask>,
    region_start: Vec<u32>,
    /// Pages each task has written so far.
    written: Vec<u64>,
    /// (release, deadline, task, kind) of every task's next job.
    pending: BinaryHeap<Reverse<(SimNs, SimNs, usize, JobKind)>>,
}

impl PeriodicWorkload {
    /// Tasks laid out one after the other from logical page 0; reads start at
    /// `reads_from` (the Cosmos run of Figure 14 starts them at t ≈ 97 s).
    pub fn new(tasks: Vec<PeriodicTask>, logical_pages: u32, reads_from: SimNs) -> Result<Self, PeriodicError> {
        let mut region_start = Vec::with_capacity(tasks.len());
        let mut next = 0u64;
        let mut pending = BinaryHeap::new();
        for (i, task) in tasks.iter().enumerate() {
            for (what, pages, period) in
                [("write", task.write_pages, task.write_period), ("read", task.read_pages, task.read_period)]
            {
                if pages > 0 && period.0 == 0 {
                    return Err(PeriodicError::ZeroPeriod { task: i, what, pages });
                }
            }
            region_start.push(u32::try_from(next).unwrap_or(u32::MAX));
            next += task.region_pages();
            if task.write_pages > 0 {
                pending.push(Reverse((SimNs(0), task.write_period, i, JobKind::Write)));
            }
            if task.read_pages > 0 {
                let first = reads_from.0.div_ceil(task.read_period.0) * task.read_period.0;
                pending.push(Reverse((SimNs(first), SimNs(first + task.read_period.0), i, JobKind::Read)));
            }
        }
        if next > u64::from(logical_pages) {
            return Err(PeriodicError::TooLarge { needed: next, available: u64::from(logical_pages) });
        }
        let written = vec![0; tasks.len()];
        Ok(Self { tasks, region_start, written, pending })
    }

    pub fn tasks(&self) -> &[PeriodicTask] {
        &self.tasks
    }

    /// The next job, or `None` when no task releases jobs.
    pub fn next_job(&mut self) -> Option<Job> {
        let Reverse((release, deadline, task, kind)) = self.pending.pop()?;
        let spec = &self.tasks[task];
        let region_pages = u32::try_from(spec.region_pages()).unwrap_or(u32::MAX);
        let period = match kind {
            JobKind::Write => spec.write_period,
            JobKind::Read => spec.read_period,
        };
        self.pending.push(Reverse((deadline, SimNs(deadline.0 + period.0), task, kind)));
        let (pages, first, expires) = match kind {
            JobKind::Write => {
                let written = self.written[task];
                self.written[task] += u64::from(spec.write_pages);
                let expires = SimNs(release.0 + spec.data_lifetime().0);
                (spec.write_pages, ring_index(written, region_pages), expires)
            }
            JobKind::Read => {
                let readable = self.written[task].min(u64::from(spec.read_pages));
                let readable = u32::try_from(readable).unwrap_or(u32::MAX);
                let first =
                    ring_index(self.written[task] + u64::from(region_pages) - u64::from(readable), region_pages);
                (readable, first, release)
            }
        };
        let region_start = self.region_start[task];
        Some(Job { task, kind, release, deadline, pages, expires, region_start, region_pages, first })
    }
}

fn ring_index(position: u64, region_pages: u32) -> u32 {
    // The remainder is below `region_pages`, a u32.
    #[allow(clippy::cast_possible_truncation)]
    let index = (position % u64::from(region_pages.max(1))) as u32;
    index
}

/// Applies one job to `ftl` without timing, page by page, the way the
/// driver would (time first, then the pages, the task as placement hint);
/// returns the pages read that held no data (0 for a correct FTL).
pub fn apply_job<T: TranslationLayer + ?Sized>(ftl: &mut T, job: &Job) -> Result<u32, FtlError> {
    ftl.advance(job.release)?;
    ftl.count_request();
    let mut missing = 0;
    for page in 0..job.pages {
        match job.kind {
            JobKind::Write => ftl.write(job.lpn(page), task_stream(job.task))?,
            JobKind::Read => {
                let lpn = job.lpn(page);
                missing += u32::from(!ftl.is_mapped(lpn));
                ftl.read(lpn)?;
            }
        }
    }
    Ok(missing)
}

/// Task i's placement hint; [`PeriodicEvents::new`] refuses sets with more
/// tasks than stream numbers.
fn task_stream(task: usize) -> StreamId {
    StreamId(u8::try_from(task).unwrap_or(u8::MAX))
}

/// Most tasks a set may have when each task is its own placement hint.
pub const TASK_STREAMS_MAX: usize = 1 << u8::BITS;

/// A task set's jobs as host events (Telomere's workload through the one
/// pipeline): each job is a request released at its release time with its
/// deadline, the task as placement hint when `task_streams` is on (the
/// lifetime-aware FTL needs it; other layers take stream 0). A write job
/// fills one slot of its ring and never wraps (slots are w pages, the ring
/// w·(l+1)); a read job whose newest pages wrap is two requests.
#[derive(Debug)]
pub struct PeriodicEvents {
    workload: PeriodicWorkload,
    until: SimNs,
    task_streams: bool,
    sectors_per_page: u64,
    /// The second half of a read job that wrapped its ring.
    pending: Option<HostEvent>,
    released: Vec<ReleasedPages>,
}

/// Pages a task's jobs asked for so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReleasedPages {
    pub written: u64,
    pub read: u64,
}

impl PeriodicEvents {
    /// Jobs released before `until`, on a device of `geometry`'s page size.
    pub fn new(
        workload: PeriodicWorkload,
        geometry: &Geometry,
        until: SimNs,
        task_streams: bool,
    ) -> Result<Self, PeriodicError> {
        let tasks = workload.tasks().len();
        if task_streams && tasks > TASK_STREAMS_MAX {
            return Err(PeriodicError::TooManyTasks { tasks, max: TASK_STREAMS_MAX });
        }
        let sectors_per_page = u64::from(geometry.sectors_per_page());
        Ok(Self {
            workload,
            until,
            task_streams,
            sectors_per_page,
            pending: None,
            released: vec![ReleasedPages::default(); tasks],
        })
    }

    /// Pages each task's jobs asked for so far (a timed run completes them all).
    pub fn released(&self) -> &[ReleasedPages] {
        &self.released
    }

    fn event(&self, job: &Job, first_page: u32, pages: u32) -> HostEvent {
        let op = match job.kind {
            JobKind::Write => HostOp::Write,
            JobKind::Read => HostOp::Read,
        };
        let start = u64::from(job.lpn(first_page).0) * self.sectors_per_page;
        let sectors = SectorRange::new(start, u64::from(pages) * self.sectors_per_page);
        let stream = if self.task_streams { task_stream(job.task) } else { StreamId(0) };
        HostEvent { stream, deadline: Some(job.deadline), ..HostEvent::new(job.release, op, sectors) }
    }
}

impl EventSource for PeriodicEvents {
    fn next_event(&mut self) -> Result<Option<HostEvent>, SourceError> {
        if let Some(event) = self.pending.take() {
            return Ok(Some(event));
        }
        loop {
            let Some(job) = self.workload.next_job().filter(|job| job.release < self.until) else {
                return Ok(None);
            };
            if job.pages == 0 {
                continue;
            }
            let released = &mut self.released[job.task];
            match job.kind {
                JobKind::Write => released.written += u64::from(job.pages),
                JobKind::Read => released.read += u64::from(job.pages),
            }
            // Pages up to the end of the ring, then the rest from its start.
            let contiguous = (1..job.pages).find(|&page| job.lpn(page).0 != job.lpn(0).0 + page).unwrap_or(job.pages);
            if contiguous < job.pages {
                self.pending = Some(self.event(&job, contiguous, job.pages - contiguous));
            }
            return Ok(Some(self.event(&job, 0, contiguous)));
        }
    }
}

/// Parameters of a random task set (Telomere Section 6.2: "each task set
/// contains 10 tasks that are generated with relative standard deviation
/// v = 70"). Each task's share of the storage and its write rate are drawn
/// from log-normal distributions with relative standard deviation `rsd`; the
/// lifetime follows from the storage share as in eq. (23):
/// l_i = ⌈U_i^s · S_pages / w_i⌉ − 1 (the −1 because K = w·(l+1) here).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TaskSetSpec {
    pub tasks: u32,
    pub rsd: f64,
    /// Pages all tasks keep valid together: Σ w_i (l_i + 1).
    pub storage_pages: u64,
    pub write_period: SimNs,
    /// Mean pages per write job.
    pub mean_write_pages: f64,
}

impl fmt::Display for TaskSetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} tasks, rsd {}, {} pages", self.tasks, self.rsd, self.storage_pages)
    }
}

/// Draws a task set; the same spec and seed give the same set.
pub fn random_task_set(spec: &TaskSetSpec, seed: u64) -> Result<Vec<PeriodicTask>, PeriodicError> {
    if spec.tasks == 0 || !(spec.rsd.is_finite() && spec.rsd >= 0.0) || spec.mean_write_pages < 1.0 {
        return Err(PeriodicError::Generator(format!("{spec}: need ≥ 1 task, rsd ≥ 0, ≥ 1 page per job")));
    }
    // A log-normal with relative standard deviation v has σ² = ln(1 + v²).
    let sigma = (1.0 + spec.rsd * spec.rsd).ln().sqrt();
    let lognormal = |mean: f64| {
        LogNormal::new(mean.ln() - sigma * sigma / 2.0, sigma)
            .map_err(|error| PeriodicError::Generator(error.to_string()))
    };
    let shares_dist = lognormal(1.0)?;
    let pages_dist = lognormal(spec.mean_write_pages)?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let shares: Vec<f64> = (0..spec.tasks).map(|_| shares_dist.sample(&mut rng)).collect();
    let total: f64 = shares.iter().sum();
    #[allow(clippy::cast_precision_loss)]
    let storage = spec.storage_pages as f64;
    let tasks = shares
        .iter()
        .map(|share| {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let write_pages = (pages_dist.sample(&mut rng).round().max(1.0) as u32).max(1);
            let pages = storage * share / total;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let lifetime_periods = ((pages / f64::from(write_pages)).floor() as u32).saturating_sub(1);
            // Periods vary by a factor of up to 4 so tasks differ in hotness.
            let write_period = SimNs(spec.write_period.0 * rng.random_range(1..=4));
            PeriodicTask { read_pages: 0, read_period: SimNs(0), write_pages, write_period, lifetime_periods }
        })
        .collect();
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(value: u64) -> SimNs {
        SimNs(value * 1_000_000)
    }

    fn task(write_pages: u32, write_ms: u64, lifetime_periods: u32) -> PeriodicTask {
        PeriodicTask { read_pages: 0, read_period: SimNs(0), write_pages, write_period: ms(write_ms), lifetime_periods }
    }

    #[test]
    fn jobs_come_in_release_order_and_reuse_slots_at_expiry() {
        let tasks = vec![task(1, 2, 3), task(2, 3, 2)];
        let mut workload = PeriodicWorkload::new(tasks, 100, SimNs(0)).expect("fits");
        let jobs: Vec<Job> = (0..12).map(|_| workload.next_job().expect("periodic")).collect();
        assert!(jobs.windows(2).all(|pair| pair[0].release <= pair[1].release));
        // Figure 5/6: τ1 written at s = 0 expires at e = 8, τ2 at s = 0 at e = 9.
        let first_of = |task| jobs.iter().find(|job| job.task == task).expect("released");
        assert_eq!(first_of(0).expires, ms(8));
        assert_eq!(first_of(1).expires, ms(9));
        // τ1's ring has 4 slots: its fifth job (s = 8) rewrites the first slot, when it expires.
        let fifth = jobs.iter().filter(|job| job.task == 0).nth(4).expect("five jobs");
        assert_eq!((fifth.release, fifth.lpn(0)), (ms(8), first_of(0).lpn(0)));
        // τ2 lives after τ1's 4 pages.
        assert_eq!(first_of(1).lpn(0), Lpn(4));
    }

    #[test]
    fn reads_take_the_newest_pages_from_their_start() {
        let tasks = vec![PeriodicTask { read_pages: 2, read_period: ms(5), ..task(3, 10, 1) }];
        let mut workload = PeriodicWorkload::new(tasks, 100, ms(12)).expect("fits");
        let first_read =
            std::iter::from_fn(|| workload.next_job()).find(|job| job.kind == JobKind::Read).expect("reads");
        assert_eq!(first_read.release, ms(15));
        // Written by then: 6 pages into a ring of 6 → newest are ring indices 4 and 5.
        assert_eq!((first_read.lpn(0), first_read.lpn(1)), (Lpn(4), Lpn(5)));
    }

    #[test]
    fn bad_task_sets_are_clear_errors() {
        let zero = PeriodicTask { write_period: SimNs(0), ..task(1, 1, 1) };
        assert!(matches!(PeriodicWorkload::new(vec![zero], 10, SimNs(0)), Err(PeriodicError::ZeroPeriod { .. })));
        let big = PeriodicWorkload::new(vec![task(10, 1, 9)], 99, SimNs(0));
        assert_eq!(big.err(), Some(PeriodicError::TooLarge { needed: 100, available: 99 }));
    }

    #[test]
    fn generated_sets_are_seeded_and_fill_the_storage() {
        let spec =
            TaskSetSpec { tasks: 10, rsd: 0.7, storage_pages: 100_000, write_period: ms(10), mean_write_pages: 8.0 };
        let a = random_task_set(&spec, 3).expect("valid");
        assert_eq!(a, random_task_set(&spec, 3).expect("valid"));
        let stored: u64 = a.iter().map(PeriodicTask::region_pages).sum();
        assert!(stored <= 100_000 && stored > 95_000, "{stored}");
    }
}
