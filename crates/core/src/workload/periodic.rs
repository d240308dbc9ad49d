//! Periodic real-time tasks as a workload (Telomere Section 3.1, Table 1).
//! This file owns the task model the simulator runs, the job stream it
//! releases as host events ([`PeriodicEvents`], a request source of the one
//! pipeline), and a seeded task-set generator (Section 6.2).
//!
//! Layout: task i writes its jobs into slots of `w_i` logical pages in a
//! region of its own. Write job k's data expire at `release + (l_i + 1) ·
//! T_i^w` (eq. (3)-(4): the lifetime plus the extra period), the release of
//! job k + l_i + 1; only then may its slot be written again. Where the next
//! job goes is the [`Layout`]: [`Layout::Ring`] gives the task exactly
//! `l_i + 1` slots, so each job rewrites the slot that expires at its release
//! and a page-mapped FTL that knows nothing of lifetimes sees every expiry
//! as an overwrite; [`Layout::Scattered`] spreads the tasks over the whole
//! logical space and puts each job in a free slot drawn at random, so a
//! page-mapped FTL keeps expired data valid until its slot happens to be
//! drawn again. A read job reads the task's `r_i` newest pages.

use crate::device::Geometry;
use crate::ftl::{FtlError, TranslationLayer};
use crate::host::discard::SectorRange;
use crate::host::event::{HostEvent, HostOp};
use crate::units::{Lpn, SimNs, StreamId};
use crate::workload::source::{EventSource, SourceError};
use nandlab_convert::{f64_of, saturating};
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;
use std::str::FromStr;

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
    /// K(τ_i) = w_i · (l_i^w + 1) of eq. (5): the task's live pages.
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
    #[error("unknown layout {0:?} (expected `ring` or `scattered`)")]
    UnknownLayout(String),
}

/// Where a task's write jobs land in the logical space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Task i owns K(τ_i) = w_i (l_i + 1) logical pages, `l_i + 1` slots
    /// written in turn: job k rewrites slot k mod (l_i + 1) at the moment its
    /// data expire. The most favourable case for a page-mapped FTL.
    #[default]
    Ring,
    /// The tasks' regions together span the logical space the device maps,
    /// each in proportion to K(τ_i) (at least K(τ_i)); a write job takes a
    /// slot drawn at random (seeded) among those never written or whose data
    /// expired. A file's new data at other offsets than where its expired
    /// data lie, as an application writes through a drive-managed FTL that
    /// is told nothing of lifetimes (Telomere Sections 2 and 6.3).
    Scattered,
}

impl Layout {
    pub const NAMES: [&'static str; 2] = ["ring", "scattered"];
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Ring => "ring",
            Self::Scattered => "scattered",
        })
    }
}

impl FromStr for Layout {
    type Err = PeriodicError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "ring" => Ok(Self::Ring),
            "scattered" => Ok(Self::Scattered),
            _ => Err(PeriodicError::UnknownLayout(name.to_owned())),
        }
    }
}

/// Read or write job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKind {
    Write,
    Read,
}

/// A run of consecutive logical pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub first: Lpn,
    pub pages: u32,
}

/// One released job: `pages` logical pages of task `task`'s region, in
/// `extents` (one for a write job: its slot), due by `deadline` (deadline =
/// period).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    pub task: usize,
    pub kind: JobKind,
    pub release: SimNs,
    pub deadline: SimNs,
    pub pages: u32,
    /// When the data written by a write job expire (eq. (4)).
    pub expires: SimNs,
    pub extents: Vec<Extent>,
}

impl Job {
    /// The job's logical pages in order.
    pub fn lpns(&self) -> impl Iterator<Item = Lpn> + '_ {
        self.extents.iter().flat_map(|extent| (0..extent.pages).map(move |page| Lpn(extent.first.0 + page)))
    }
}

/// One task's slots: which are free, and the live ones oldest first.
#[derive(Debug, Clone)]
struct Slots {
    region_start: u32,
    slot_pages: u32,
    free: VecDeque<u32>,
    live: VecDeque<u32>,
}

impl Slots {
    fn new(region_start: u32, slot_pages: u32, slots: u32) -> Self {
        Self { region_start, slot_pages, free: (0..slots).collect(), live: VecDeque::new() }
    }

    fn extent(&self, slot: u32, skip: u32) -> Extent {
        Extent { first: Lpn(self.region_start + slot * self.slot_pages + skip), pages: self.slot_pages - skip }
    }

    /// The slot of the next write job; the oldest live slot's data expire at
    /// its release once `live_max` jobs are live. `draw` picks among the free
    /// slots (the oldest when `None`).
    fn take(&mut self, live_max: usize, draw: Option<&mut Xoshiro256PlusPlus>) -> u32 {
        if self.live.len() >= live_max {
            if let Some(expired) = self.live.pop_front() {
                self.free.push_back(expired);
            }
        }
        let slot = match draw {
            Some(rng) => {
                let index = rng.random_range(0..self.free.len());
                self.free.swap_remove_back(index)
            }
            None => self.free.pop_front(),
        };
        // A task has at least `live_max` slots, so one is free.
        let slot = slot.unwrap_or_default();
        self.live.push_back(slot);
        slot
    }

    /// The newest `pages` pages written, oldest first, adjacent runs merged.
    fn newest(&self, pages: u32) -> Vec<Extent> {
        let mut left = pages;
        let mut extents = Vec::new();
        for &slot in self.live.iter().rev() {
            if left == 0 {
                break;
            }
            let take = left.min(self.slot_pages);
            extents.push(self.extent(slot, self.slot_pages - take));
            left -= take;
        }
        extents.reverse();
        let mut merged: Vec<Extent> = Vec::with_capacity(extents.len());
        for extent in extents {
            match merged.last_mut() {
                Some(last) if last.first.0 + last.pages == extent.first.0 => last.pages += extent.pages,
                _ => merged.push(extent),
            }
        }
        merged
    }
}

/// The job stream of a task set: jobs in release order, simultaneous releases
/// earliest deadline first (then task, writes before reads).
#[derive(Debug, Clone)]
pub struct PeriodicWorkload {
    tasks: Vec<PeriodicTask>,
    slots: Vec<Slots>,
    /// Draws the slot of each write job under [`Layout::Scattered`].
    draw: Option<Xoshiro256PlusPlus>,
    /// (release, deadline, task, kind) of every task's next job.
    pending: BinaryHeap<Reverse<(SimNs, SimNs, usize, JobKind)>>,
}

impl PeriodicWorkload {
    /// Tasks laid out one after the other from logical page 0 on a device
    /// mapping `logical_pages`, as `layout` says (`seed` draws the slots of
    /// [`Layout::Scattered`]); reads start at `reads_from` (the Cosmos run of
    /// Figure 14 starts them at t ≈ 97 s).
    pub fn new(
        tasks: Vec<PeriodicTask>,
        logical_pages: u32,
        reads_from: SimNs,
        layout: Layout,
        seed: u64,
    ) -> Result<Self, PeriodicError> {
        let mut pending = BinaryHeap::new();
        for (i, task) in tasks.iter().enumerate() {
            for (what, pages, period) in
                [("write", task.write_pages, task.write_period), ("read", task.read_pages, task.read_period)]
            {
                if pages > 0 && period.0 == 0 {
                    return Err(PeriodicError::ZeroPeriod { task: i, what, pages });
                }
            }
            if task.write_pages > 0 {
                pending.push(Reverse((SimNs(0), task.write_period, i, JobKind::Write)));
            }
            if task.read_pages > 0 {
                let first = reads_from.0.div_ceil(task.read_period.0) * task.read_period.0;
                pending.push(Reverse((SimNs(first), SimNs(first + task.read_period.0), i, JobKind::Read)));
            }
        }
        let live: u64 = tasks.iter().map(PeriodicTask::region_pages).sum();
        let available = u64::from(logical_pages);
        if live > available {
            return Err(PeriodicError::TooLarge { needed: live, available });
        }
        let mut slots = Vec::with_capacity(tasks.len());
        let mut next = 0u64;
        for task in &tasks {
            let count = match layout {
                Layout::Ring => u64::from(task.lifetime_periods) + 1,
                Layout::Scattered => scattered_slots(task, live, available),
            };
            let count = if task.write_pages == 0 { 0 } else { count };
            // Both fit in u32: the regions together stay within `logical_pages`.
            let (start, count) = (u32::try_from(next).unwrap_or(u32::MAX), u32::try_from(count).unwrap_or(u32::MAX));
            slots.push(Slots::new(start, task.write_pages, count));
            next += u64::from(count) * u64::from(task.write_pages);
        }
        let draw = (layout == Layout::Scattered).then(|| Xoshiro256PlusPlus::seed_from_u64(seed));
        Ok(Self { tasks, slots, draw, pending })
    }

    pub fn tasks(&self) -> &[PeriodicTask] {
        &self.tasks
    }

    /// The next job, or `None` when no task releases jobs.
    pub fn next_job(&mut self) -> Option<Job> {
        let Reverse((release, deadline, task, kind)) = self.pending.pop()?;
        let spec = &self.tasks[task];
        let period = match kind {
            JobKind::Write => spec.write_period,
            JobKind::Read => spec.read_period,
        };
        self.pending.push(Reverse((deadline, SimNs(deadline.0 + period.0), task, kind)));
        let slots = &mut self.slots[task];
        let (extents, expires) = match kind {
            JobKind::Write => {
                let live_max = usize::try_from(spec.lifetime_periods).unwrap_or(usize::MAX).saturating_add(1);
                let slot = slots.take(live_max, self.draw.as_mut());
                (vec![slots.extent(slot, 0)], SimNs(release.0 + spec.data_lifetime().0))
            }
            JobKind::Read => (slots.newest(spec.read_pages), release),
        };
        let pages = extents.iter().map(|extent| extent.pages).sum();
        Some(Job { task, kind, release, deadline, pages, expires, extents })
    }
}

/// Slots of `task` under [`Layout::Scattered`]: its share of `available`
/// pages in proportion to its live pages (of `live` in all), at least
/// `l + 1`.
fn scattered_slots(task: &PeriodicTask, live: u64, available: u64) -> u64 {
    let own = u128::from(task.region_pages());
    let share = u128::from(available) * own / u128::from(live.max(1)) / u128::from(task.write_pages.max(1));
    u64::try_from(share).unwrap_or(u64::MAX).max(u64::from(task.lifetime_periods) + 1)
}

/// Applies one job to `ftl` without timing, page by page, the way the
/// driver would (time first, then the pages, the task as placement hint);
/// returns the pages read that held no data (0 for a correct FTL).
pub fn apply_job<T: TranslationLayer + ?Sized>(ftl: &mut T, job: &Job) -> Result<u32, FtlError> {
    ftl.advance(job.release)?;
    ftl.count_request();
    let mut missing = 0;
    for lpn in job.lpns() {
        match job.kind {
            JobKind::Write => ftl.write(lpn, task_stream(job.task))?,
            JobKind::Read => {
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
/// pipeline): each extent of a job is a request released at the job's
/// release time with its deadline, the task as placement hint when
/// `task_streams` is on (the lifetime-aware FTL needs it; other layers take
/// stream 0). A write job fills one slot and is one request; a read job
/// whose newest pages lie in slots that are not adjacent is one request per
/// run of adjacent pages.
#[derive(Debug)]
pub struct PeriodicEvents {
    workload: PeriodicWorkload,
    until: SimNs,
    task_streams: bool,
    sectors_per_page: u64,
    /// The further requests of the job released last.
    pending: VecDeque<HostEvent>,
    released: Vec<ReleasedPages>,
    last_release: SimNs,
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
            pending: VecDeque::new(),
            released: vec![ReleasedPages::default(); tasks],
            last_release: SimNs(0),
        })
    }

    /// The release time of the last job handed out: how far a run that
    /// failed got.
    pub fn last_release(&self) -> SimNs {
        self.last_release
    }

    /// Pages each task's jobs asked for so far (a timed run completes them all).
    pub fn released(&self) -> &[ReleasedPages] {
        &self.released
    }

    fn event(&self, job: &Job, extent: Extent) -> HostEvent {
        let op = match job.kind {
            JobKind::Write => HostOp::Write,
            JobKind::Read => HostOp::Read,
        };
        let start = u64::from(extent.first.0) * self.sectors_per_page;
        let sectors = SectorRange::new(start, u64::from(extent.pages) * self.sectors_per_page);
        let stream = if self.task_streams { task_stream(job.task) } else { StreamId(0) };
        HostEvent { stream, deadline: Some(job.deadline), ..HostEvent::new(job.release, op, sectors) }
    }
}

impl EventSource for PeriodicEvents {
    fn next_event(&mut self) -> Result<Option<HostEvent>, SourceError> {
        if let Some(event) = self.pending.pop_front() {
            return Ok(Some(event));
        }
        loop {
            let Some(job) = self.workload.next_job().filter(|job| job.release < self.until) else {
                return Ok(None);
            };
            if job.pages == 0 {
                continue;
            }
            self.last_release = job.release;
            let released = &mut self.released[job.task];
            match job.kind {
                JobKind::Write => released.written += u64::from(job.pages),
                JobKind::Read => released.read += u64::from(job.pages),
            }
            let mut events = job.extents.iter().map(|&extent| self.event(&job, extent));
            let first = events.next();
            let rest: Vec<HostEvent> = events.collect();
            self.pending.extend(rest);
            return Ok(first);
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
    let storage = f64_of(spec.storage_pages);
    let tasks = shares
        .iter()
        .map(|share| {
            let write_pages = saturating::<u32>(pages_dist.sample(&mut rng).round().max(1.0)).max(1);
            let pages = storage * share / total;
            let lifetime_periods = saturating::<u32>((pages / f64::from(write_pages)).floor()).saturating_sub(1);
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
        let mut workload = PeriodicWorkload::new(tasks, 100, SimNs(0), Layout::Ring, 0).expect("fits");
        let jobs: Vec<Job> = (0..12).map(|_| workload.next_job().expect("periodic")).collect();
        assert!(jobs.windows(2).all(|pair| pair[0].release <= pair[1].release));
        // Figure 5/6: τ1 written at s = 0 expires at e = 8, τ2 at s = 0 at e = 9.
        let first_of = |task| jobs.iter().find(|job| job.task == task).expect("released");
        assert_eq!(first_of(0).expires, ms(8));
        assert_eq!(first_of(1).expires, ms(9));
        // τ1's ring has 4 slots: its fifth job (s = 8) rewrites the first slot, when it expires.
        let fifth = jobs.iter().filter(|job| job.task == 0).nth(4).expect("five jobs");
        assert_eq!((fifth.release, fifth.extents[0]), (ms(8), first_of(0).extents[0]));
        // τ2 lives after τ1's 4 pages.
        assert_eq!(first_of(1).extents[0], Extent { first: Lpn(4), pages: 2 });
    }

    #[test]
    fn reads_take_the_newest_pages_from_their_start() {
        let tasks = vec![PeriodicTask { read_pages: 2, read_period: ms(5), ..task(3, 10, 1) }];
        let mut workload = PeriodicWorkload::new(tasks, 100, ms(12), Layout::Ring, 0).expect("fits");
        let first_read =
            std::iter::from_fn(|| workload.next_job()).find(|job| job.kind == JobKind::Read).expect("reads");
        assert_eq!(first_read.release, ms(15));
        // Written by then: 6 pages into a ring of 6 → newest are ring indices 4 and 5.
        assert_eq!(first_read.lpns().collect::<Vec<_>>(), [Lpn(4), Lpn(5)]);
    }

    /// Under the scattered layout the tasks spread over the whole logical
    /// space, a job never takes a slot whose data are still live, and jobs
    /// do land elsewhere than the slot that expired at their release.
    #[test]
    fn scattered_jobs_take_free_slots_across_the_logical_space() {
        let tasks = vec![task(4, 10, 3), task(2, 20, 5)];
        let seeded = || PeriodicWorkload::new(tasks.clone(), 120, SimNs(0), Layout::Scattered, 7).expect("fits");
        let mut workload = seeded();
        // K = 16 and 12 of 28 live pages: 120 · 16/28 / 4 = 17 slots, 120 · 12/28 / 2 = 25 slots.
        assert_eq!([workload.slots[0].free.len(), workload.slots[1].free.len()], [17, 25]);
        let mut live_until = std::collections::HashMap::new();
        let mut elsewhere = 0;
        let mut expired_slot = std::collections::HashMap::new();
        for _ in 0..2000 {
            let job = workload.next_job().expect("periodic");
            let first = job.extents[0].first;
            assert!(first.0 + job.pages <= 120);
            if let Some(&until) = live_until.get(&first) {
                assert!(until <= job.release.0, "task {} rewrote live data at {first:?}", job.task);
            }
            live_until.insert(first, job.expires.0);
            let lifetime = tasks[job.task].data_lifetime().0;
            if let Some(&expired) =
                job.release.0.checked_sub(lifetime).and_then(|born| expired_slot.get(&(job.task, born)))
            {
                elsewhere += u32::from(expired != first);
            }
            expired_slot.insert((job.task, job.release.0), first);
        }
        assert!(elsewhere > 1000, "only {elsewhere} jobs moved elsewhere");
        let (mut first, mut again) = (seeded(), seeded());
        for _ in 0..100 {
            assert_eq!(again.next_job(), first.next_job(), "seeded");
        }
    }

    #[test]
    fn reads_of_scattered_slots_are_one_extent_per_slot() {
        let tasks = vec![PeriodicTask { read_pages: 5, read_period: ms(10), ..task(2, 10, 3) }];
        let mut workload = PeriodicWorkload::new(tasks, 64, ms(40), Layout::Scattered, 1).expect("fits");
        let mut written = Vec::new();
        let read = loop {
            let job = workload.next_job().expect("periodic");
            match job.kind {
                JobKind::Write => written.push(job.extents[0]),
                JobKind::Read => break job,
            }
        };
        // The newest 5 pages: the last page of the third-newest slot, then two whole slots.
        let newest = &written[written.len() - 3..];
        let expected: Vec<Lpn> = std::iter::once(Lpn(newest[0].first.0 + 1))
            .chain(newest[1..].iter().flat_map(|extent| [extent.first, Lpn(extent.first.0 + 1)]))
            .collect();
        assert_eq!(read.lpns().collect::<Vec<_>>(), expected);
        assert_eq!(read.pages, 5);
        assert!("scattered".parse::<Layout>().is_ok() && "ringx".parse::<Layout>().is_err());
    }

    #[test]
    fn bad_task_sets_are_clear_errors() {
        let zero = PeriodicTask { write_period: SimNs(0), ..task(1, 1, 1) };
        let new = |tasks, pages| PeriodicWorkload::new(tasks, pages, SimNs(0), Layout::Scattered, 0);
        assert!(matches!(new(vec![zero], 10), Err(PeriodicError::ZeroPeriod { .. })));
        let big = new(vec![task(10, 1, 9)], 99);
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
