//! Periodic real-time tasks as a workload (Telomere Section 3.1, Table 1).
//! This file owns the task model the simulator runs, the job stream it
//! releases, the [`PeriodicSink`] boundary every lifetime-aware experiment
//! FTL implements, a seeded task-set generator (Section 6.2), and two
//! drivers: a counting run and a timed run that places every flash operation
//! on its chip with the device latencies.
//!
//! Layout: task i owns `w_i · (l_i + 1)` logical pages, a ring of `l_i + 1`
//! write slots. Write job k fills slot `k mod (l_i + 1)` and its data expire
//! at `release + (l_i + 1) · T_i^w` (eq. (3)-(4): the lifetime plus the extra
//! period), the moment the slot is written again. A page-mapped FTL that
//! knows nothing of lifetimes therefore sees each task overwrite its own data
//! exactly when it expires. A read job reads the task's `r_i` newest pages.

use crate::ftl::{FlashOp, FlashOpKind, FtlError, PageFtl};
use crate::units::{Lpn, SimNs, StreamId};
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

/// The device side of a periodic run: an FTL that may use the task and the
/// expiry time of every page it writes.
pub trait PeriodicSink {
    /// Simulated time moved to `now`: reclaim what expired.
    fn advance(&mut self, now: SimNs) -> Result<(), FtlError>;
    /// Writes one page of `task`'s data that expires at `expires`.
    fn write_page(&mut self, lpn: Lpn, task: usize, expires: SimNs) -> Result<(), FtlError>;
    /// Reads one page; `false` when it holds no readable data.
    fn read_page(&mut self, lpn: Lpn) -> Result<bool, FtlError>;
    /// Turns recording of flash operations on (for the timed run).
    fn set_recording(&mut self, on: bool);
    /// Moves the flash operations recorded since the last call into `into`.
    fn drain_ops(&mut self, into: &mut Vec<FlashOp>);
}

/// The plain page-mapped FTL ignores lifetimes: expired data stay valid until
/// the task overwrites them.
impl PeriodicSink for PageFtl {
    fn advance(&mut self, _now: SimNs) -> Result<(), FtlError> {
        Ok(())
    }

    fn write_page(&mut self, lpn: Lpn, _task: usize, _expires: SimNs) -> Result<(), FtlError> {
        self.write(lpn, StreamId(0)).map(drop)
    }

    fn read_page(&mut self, lpn: Lpn) -> Result<bool, FtlError> {
        self.read(lpn).map(|page| page.is_some())
    }

    fn set_recording(&mut self, on: bool) {
        crate::ftl::TranslationLayer::set_recording(self, on);
    }

    fn drain_ops(&mut self, into: &mut Vec<FlashOp>) {
        into.extend(self.drain_recorded());
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

/// Applies one job to the sink without timing; returns the pages read that
/// held no data (expected 0 for a correct FTL).
pub fn apply_job(sink: &mut dyn PeriodicSink, job: &Job) -> Result<u32, FtlError> {
    sink.advance(job.release)?;
    let mut missing = 0;
    for page in 0..job.pages {
        match job.kind {
            JobKind::Write => sink.write_page(job.lpn(page), job.task, job.expires)?,
            JobKind::Read => missing += u32::from(!sink.read_page(job.lpn(page))?),
        }
    }
    Ok(missing)
}

/// Flash latencies of the timed run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlashLatency {
    pub read: SimNs,
    pub program: SimNs,
    pub erase: SimNs,
}

impl FlashLatency {
    fn of(&self, kind: FlashOpKind) -> u64 {
        match kind {
            FlashOpKind::Read => self.read.0,
            FlashOpKind::Program => self.program.0,
            FlashOpKind::Erase => self.erase.0,
        }
    }
}

/// Host pages completed in one interval of a timed run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ThroughputBin {
    pub start_s: f64,
    pub written_pages_per_s: f64,
    pub read_pages_per_s: f64,
}

/// What a timed periodic run measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimedPeriodicReport {
    pub bins: Vec<ThroughputBin>,
    pub jobs: u64,
    pub deadline_misses: u64,
    /// Latest completion after a deadline, 0 when every job met its deadline.
    pub worst_lateness_ms: f64,
    pub missing_reads: u64,
}

/// The timed run (the scheduling of Telomere Section 6.3: "the FTL ...
/// orders them according to EDF and starts handling the request if the flash
/// chip is not busy"). At each job's release the FTL maps its pages and
/// reports the flash operations they take (garbage collection and erases
/// included); each operation waits in its chip's queue, and an idle chip
/// starts the queued operation with the earliest deadline (release order
/// among equal deadlines) and holds it, without preemption, for t_r, t_w or
/// t_e. A job completes with its last operation. Chips are the parallel
/// units of the geometry (the Cosmos preset has one plane per chip).
pub fn run_timed(
    workload: &mut PeriodicWorkload,
    sink: &mut dyn PeriodicSink,
    units: u32,
    latency: FlashLatency,
    until: SimNs,
    bin: SimNs,
) -> Result<TimedPeriodicReport, FtlError> {
    sink.set_recording(true);
    let mut chips = EdfChips::new(units, latency, until, bin);
    let mut ops = Vec::new();
    let mut next = workload.next_job().filter(|job| job.release < until);
    while next.is_some() || chips.busy() {
        let completion = chips.next_completion_ns();
        match next {
            Some(job) if completion.is_none_or(|done| job.release.0 <= done) => {
                sink.advance(job.release)?;
                let slot = chips.open_job(&job);
                for page in 0..job.pages {
                    let present = match job.kind {
                        JobKind::Write => {
                            sink.write_page(job.lpn(page), job.task, job.expires)?;
                            true
                        }
                        JobKind::Read => sink.read_page(job.lpn(page))?,
                    };
                    chips.missing_reads += u64::from(!present);
                    ops.clear();
                    sink.drain_ops(&mut ops);
                    chips.enqueue(slot, &job, &ops, present);
                }
                chips.close_job(slot, job.release.0);
                chips.start_idle(job.release.0);
                next = workload.next_job().filter(|job| job.release < until);
            }
            _ => chips.complete_next(),
        }
    }
    sink.set_recording(false);
    Ok(chips.report())
}

/// A flash operation in a chip's queue: (deadline, sequence, job slot,
/// latency, host page kind: 0 none (GC), 1 write, 2 read).
type QueuedOp = Reverse<(u64, u64, u32, u64, u8)>;

/// A job in flight: operations not yet done (plus one while it is being
/// built), deadline, latest completion.
#[derive(Clone, Copy, Debug)]
struct OpenJob {
    open_ops: u32,
    deadline_ns: u64,
    done_ns: u64,
}

/// The chips of a timed run and what they measured.
#[derive(Debug)]
struct EdfChips {
    latency: FlashLatency,
    queues: Vec<BinaryHeap<QueuedOp>>,
    /// The operation each chip runs and when it ends.
    running: Vec<Option<(u64, QueuedOp)>>,
    jobs: Vec<OpenJob>,
    free_slots: Vec<u32>,
    sequence: u64,
    bin_ns: u64,
    written: Vec<u64>,
    read: Vec<u64>,
    report: TimedPeriodicReport,
    missing_reads: u64,
}

impl EdfChips {
    fn new(units: u32, latency: FlashLatency, until: SimNs, bin: SimNs) -> Self {
        let bin_ns = bin.0.max(1);
        let bins = usize::try_from(until.0.div_ceil(bin_ns)).unwrap_or(0);
        Self {
            latency,
            queues: vec![BinaryHeap::new(); units as usize],
            running: vec![None; units as usize],
            jobs: Vec::new(),
            free_slots: Vec::new(),
            sequence: 0,
            bin_ns,
            written: vec![0; bins],
            read: vec![0; bins],
            report: TimedPeriodicReport {
                bins: Vec::new(),
                jobs: 0,
                deadline_misses: 0,
                worst_lateness_ms: 0.0,
                missing_reads: 0,
            },
            missing_reads: 0,
        }
    }

    fn busy(&self) -> bool {
        self.running.iter().any(Option::is_some)
    }

    fn next_completion_ns(&self) -> Option<u64> {
        self.running.iter().flatten().map(|(done, _)| *done).min()
    }

    fn open_job(&mut self, job: &Job) -> u32 {
        let open = OpenJob { open_ops: 1, deadline_ns: job.deadline.0, done_ns: job.release.0 };
        match self.free_slots.pop() {
            Some(slot) => {
                self.jobs[slot as usize] = open;
                slot
            }
            None => {
                self.jobs.push(open);
                u32::try_from(self.jobs.len() - 1).unwrap_or(u32::MAX)
            }
        }
    }

    /// Queues one page's operations; the host operation of a page that holds
    /// data counts for the throughput series when it completes.
    fn enqueue(&mut self, slot: u32, job: &Job, ops: &[FlashOp], present: bool) {
        for op in ops {
            let host = match (op.gc, op.kind, present) {
                (false, FlashOpKind::Program, true) => 1,
                (false, FlashOpKind::Read, true) => 2,
                _ => 0,
            };
            self.sequence += 1;
            let entry = Reverse((job.deadline.0, self.sequence, slot, self.latency.of(op.kind), host));
            self.queues[op.unit.index()].push(entry);
            self.jobs[slot as usize].open_ops += 1;
        }
    }

    /// The job is fully queued: drop the hold its builder had on it.
    fn close_job(&mut self, slot: u32, now_ns: u64) {
        self.finish_op(slot, now_ns);
    }

    fn start_idle(&mut self, now_ns: u64) {
        for chip in 0..self.queues.len() {
            self.start_next(chip, now_ns);
        }
    }

    fn start_next(&mut self, chip: usize, now_ns: u64) {
        if self.running[chip].is_some() {
            return;
        }
        if let Some(op) = self.queues[chip].pop() {
            let latency = op.0 .3;
            self.running[chip] = Some((now_ns + latency, op));
        }
    }

    /// Completes the operation that ends first and starts its chip's next one.
    fn complete_next(&mut self) {
        let Some(chip) = (0..self.running.len())
            .filter(|&chip| self.running[chip].is_some())
            .min_by_key(|&chip| self.running[chip].map(|(done, _)| done))
        else {
            return;
        };
        let Some((done_ns, Reverse((_, _, slot, _, host)))) = self.running[chip].take() else {
            return;
        };
        let bin = usize::try_from(done_ns / self.bin_ns).unwrap_or(usize::MAX);
        let counts = match host {
            1 => Some(&mut self.written),
            2 => Some(&mut self.read),
            _ => None,
        };
        if let Some(count) = counts.and_then(|counts| counts.get_mut(bin)) {
            *count += 1;
        }
        self.finish_op(slot, done_ns);
        self.start_next(chip, done_ns);
    }

    fn finish_op(&mut self, slot: u32, done_ns: u64) {
        let job = &mut self.jobs[slot as usize];
        job.done_ns = job.done_ns.max(done_ns);
        job.open_ops -= 1;
        if job.open_ops > 0 {
            return;
        }
        let job = *job;
        self.free_slots.push(slot);
        self.report.jobs += 1;
        if job.done_ns > job.deadline_ns {
            self.report.deadline_misses += 1;
            #[allow(clippy::cast_precision_loss)]
            let lateness_ms = (job.done_ns - job.deadline_ns) as f64 / 1e6;
            self.report.worst_lateness_ms = self.report.worst_lateness_ms.max(lateness_ms);
        }
    }

    fn report(mut self) -> TimedPeriodicReport {
        #[allow(clippy::cast_precision_loss)]
        let bin_s = self.bin_ns as f64 / 1e9;
        self.report.bins = self
            .written
            .iter()
            .zip(&self.read)
            .enumerate()
            .map(|(i, (&w, &r))| {
                #[allow(clippy::cast_precision_loss)]
                let (start_s, w, r) = (i as f64 * bin_s, w as f64, r as f64);
                ThroughputBin { start_s, written_pages_per_s: w / bin_s, read_pages_per_s: r / bin_s }
            })
            .collect();
        self.report.missing_reads = self.missing_reads;
        self.report
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
