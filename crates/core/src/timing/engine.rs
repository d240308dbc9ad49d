//! The discrete-event engine. The FTL decides *what* the flash does (it
//! updates its maps at once and records the flash operations); the engine
//! decides *when*: every operation queues at its die, dies run in parallel,
//! page transfers share their channel's bus, and requests complete when the
//! last operation they wait for does.
//!
//! Resources, per die: one array (sense, program, erase) and one data
//! register. A program transfers its page over the channel into the register
//! while the array may still be programming the previous page (cache
//! program), so a die sustains one page per `program_ns` and a channel one
//! page per transfer time: sequential writes reach
//! min(channels x bus rate, dies x page size / program_ns). A read senses
//! (`read_ns`) and then holds the register until its page has crossed the
//! bus. An erase holds the array for `erase_ns`.
//!
//! Cleaning: below the critical watermark (`ftl.gc_threshold_blocks`) the
//! FTL collects inline, and the write that triggered it waits for the copies
//! and the erase (foreground GC, queued with host operations). Between the
//! critical and the low watermark (`timing.gc_low_blocks`) a die collects one
//! victim at a time when no host operation waits for it (background GC); its
//! operations yield to host operations. With priority-aware cleaning
//! (Rajimwale et al., slide 18) no background GC operation starts while a
//! priority request is outstanding.
//!
//! Events (time, kind, index) wait in a binary heap ([`EventQueue`]); per-die
//! queues, jobs and requests live in preallocated tables, so the steady state
//! allocates nothing.

use crate::device::Geometry;
use crate::ftl::{FtlConfig, FtlError, TranslationLayer};
use crate::metrics::WafSeries;
use crate::progress::{Phase, Progress};
use crate::timing::config::{Arrival, DieQueue, FlushPolicy, Interface, TimingConfig};
use crate::timing::queue::{Event, EventQueue};
use crate::timing::source::{RequestSource, TimedRequest};
use crate::timing::stats::{FlashCost, Stats, TimedReport};
use crate::timing::stripe::{StripeFill, WriteBuffer};
use crate::units::{SimNs, UnitId};
use std::collections::VecDeque;

mod arrivals;
mod buffer;
mod dies;
mod gc;
/// Requests as they arrive, for a live emulated device.
mod live;

use arrivals::{HostQueue, Intake, LOOKAHEAD};
use buffer::FlushBarrier;
use dies::{finish_op, Command, Die, OpQueue, MULTI_PLANE_MAX};
pub use live::LiveTicket;

/// Job index of background GC operations, which nobody waits for.
const NO_JOB: u32 = u32::MAX;

/// How often (in completed requests) the observer hears about progress.
const PROGRESS_INTERVAL: u64 = 1 << 16;

/// "None" for a die's times (`Die::sensing_until_ns`, `Die::skipped_ready_ns`).
const NO_TIME: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum EventKind {
    /// A job's last operation finished (index: job).
    JobDone = 0,
    /// A read finished sensing and wants its channel (index: die).
    ReadSensed = 1,
    /// A die can start its next operation (index: die).
    DieReady = 2,
    /// The device has been idle for `timing.merge_idle_ns` unless a request
    /// arrived since (index: the idle period's number).
    IdleFlush = 3,
}

fn pack(time_ns: u64, kind: EventKind, index: u32) -> Event {
    Event { time_ns, payload: (u64::from(kind as u8) << 32) | u64::from(index) }
}

/// Where `event` stands in the processing order (time, then kind and index).
fn order_key(event: Event) -> u128 {
    (u128::from(event.time_ns) << 64) | u128::from(event.payload)
}

/// The kind and index of `event`.
fn event_target(event: Event) -> (EventKind, u32) {
    let (kind, index) = ((event.payload >> 32) as u8, event.payload as u32);
    let kind = match kind {
        0 => EventKind::JobDone,
        1 => EventKind::ReadSensed,
        2 => EventKind::DieReady,
        _ => EventKind::IdleFlush,
    };
    (kind, index)
}

/// What completes when a job's operations are done.
#[derive(Clone, Copy, Debug)]
enum JobKind {
    Request(u32),
    /// Buffered pages reached the flash; their buffer room is free again.
    /// `seq` orders these jobs for the flush barrier.
    Flush {
        pages: u32,
        seq: u64,
    },
}

/// A group of flash operations that something waits for. `open_ops` starts at
/// one, held by the job's creator until every operation is queued, so a job
/// cannot complete while it is still being built.
#[derive(Clone, Copy, Debug)]
struct Job {
    kind: JobKind,
    open_ops: u32,
    done_ns: u64,
}

/// A request inside the device.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    timed: TimedRequest,
    arrival_ns: u64,
    queue: u32,
    /// Pages of a read that held no data (answered without flash).
    unmapped_pages: u32,
    /// Its number among the requests its host queue fetched (a queue
    /// fetches in arrival order), which names it to a live session.
    seq: u64,
}

/// A fixed-size table with reused slots.
#[derive(Debug)]
struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T: Copy> Slab<T> {
    fn with_capacity(capacity: usize) -> Self {
        Self { items: Vec::with_capacity(capacity), free: Vec::with_capacity(capacity) }
    }

    fn insert(&mut self, item: T) -> u32 {
        if let Some(slot) = self.free.pop() {
            self.items[slot as usize] = item;
            slot
        } else {
            self.items.push(item);
            // Slots are bounded by outstanding requests and jobs, far below 2^32.
            (self.items.len() - 1) as u32
        }
    }

    fn get(&self, slot: u32) -> T {
        self.items[slot as usize]
    }

    fn get_mut(&mut self, slot: u32) -> &mut T {
        &mut self.items[slot as usize]
    }

    fn remove(&mut self, slot: u32) -> T {
        self.free.push(slot);
        self.items[slot as usize]
    }
}

/// The timed device: dies, channels, host queues and the write buffer, in
/// front of a [`TranslationLayer`] that it drives.
#[derive(Debug)]
pub struct Engine {
    geometry: Geometry,
    config: TimingConfig,
    transfer_ns: u64,
    gc_low_blocks: u32,
    now_ns: u64,
    events: EventQueue,
    dies: Vec<Die>,
    channel_free_ns: Vec<u64>,
    /// When the controller finishes the DISCARD work queued on it.
    controller_free_ns: u64,
    jobs: Slab<Job>,
    requests: Slab<InFlight>,
    queues: Vec<HostQueue>,
    /// Closed-loop jobs ([`Self::with_job_queues`]): queue
    /// `first_job_queue + i` is job `closed_jobs[i]`'s, refilled from that
    /// job alone; the queues before it are shared by the open-loop arrivals.
    closed_jobs: Vec<u16>,
    first_job_queue: u32,
    next_queue: u32,
    outstanding: u32,
    priority_outstanding: u32,
    /// A SATA DISCARD is executing: nothing else is fetched.
    discard_blocking: bool,
    buffer: WriteBuffer,
    /// Writes waiting for buffer room, in arrival order (request slots).
    buffer_waiting: VecDeque<u32>,
    stripes_complete: Vec<StripeFill>,
    /// Idle periods begun: an `IdleFlush` event of an earlier one is stale.
    idle_periods: u32,
    /// Which buffer flush jobs are still under way, from the oldest open one.
    flushes: FlushBarrier,
    /// Requests taken from the source ahead of time, so their mapping entries
    /// are in cache when they are dispatched.
    ahead: VecDeque<TimedRequest>,
    /// Counts host operations handed to the FTL (writes, reads, trims; see
    /// `Die::futile_gc_epoch`).
    host_epoch: u64,
    /// The source returned no more requests.
    source_dry: bool,
    /// Tests: every open-loop request joins its host queue on arrival, as
    /// before backlogs waited in the source ([`Intake`]); the reference the
    /// backlog path must match.
    #[cfg(test)]
    queue_every_arrival: bool,
    /// Every request completed: the dies finish their queued work, no new
    /// background GC starts.
    draining: bool,
    stats: Stats,
    /// Where the engine stands in the processing order: the key of the
    /// event in progress, or for an open-loop arrival the point the batch
    /// loop processes it at (after every event at its time).
    order_key: u128,
    /// A live session: every completed request is listed here until the
    /// session takes it ([`Engine::live_completed`]); empty otherwise.
    live_completed: Vec<(LiveTicket, SimNs)>,
    live: bool,
    /// Start a die's next read when its previous command starts instead of
    /// at a `DieReady` event (see [`Die::start_read_early`]). Off where
    /// a die's next operation can change in other ways than by a host
    /// operation queued behind it (EDF queues, priority-aware cleaning,
    /// multi-plane commands) and for live sessions, whose reports are read
    /// between events.
    early_reads: bool,
    /// Most operations one command carries: one, or with multi-plane
    /// commands one per plane up to [`MULTI_PLANE_MAX`].
    command_ops_max: usize,
}

impl Engine {
    /// An idle device at time 0. The configuration must have been validated.
    pub fn new(geometry: &Geometry, config: &TimingConfig, ftl: &FtlConfig) -> Self {
        let dies = (0..geometry.dies())
            .map(|die| Die {
                channel: geometry.unit_location(UnitId(die)).channel as usize,
                futile_gc_epoch: None,
                array_free_ns: 0,
                busy: false,
                command: Command::default(),
                host_ops: OpQueue::with_capacity(4 * geometry.pages_per_block as usize),
                gc_ops: OpQueue::with_capacity(2 * geometry.pages_per_block as usize + 1),
                sensing_until_ns: NO_TIME,
                skipped_ready_ns: NO_TIME,
                array_free_before_read_ns: 0,
            })
            .collect();
        let queue_slots = (config.queues * config.queue_depth) as usize;
        let merge_stripe = (config.flush == FlushPolicy::StripeMerge).then_some(config.stripe_pages);
        Self {
            geometry: *geometry,
            config: config.clone(),
            transfer_ns: config.page_transfer_ns(geometry.page_size),
            gc_low_blocks: config.gc_low_blocks(ftl),
            now_ns: 0,
            events: EventQueue::new(),
            dies,
            channel_free_ns: vec![0; geometry.channels as usize],
            controller_free_ns: 0,
            jobs: Slab::with_capacity(2 * queue_slots),
            requests: Slab::with_capacity(queue_slots),
            queues: (0..config.queues).map(|_| HostQueue::new(config.queue_depth)).collect(),
            closed_jobs: Vec::new(),
            first_job_queue: 0,
            next_queue: 0,
            outstanding: 0,
            priority_outstanding: 0,
            discard_blocking: false,
            buffer: WriteBuffer::new(config.write_buffer_pages, merge_stripe),
            buffer_waiting: VecDeque::new(),
            stripes_complete: Vec::new(),
            idle_periods: 0,
            flushes: FlushBarrier::default(),
            ahead: VecDeque::with_capacity(LOOKAHEAD + 1),
            host_epoch: 0,
            source_dry: false,
            #[cfg(test)]
            queue_every_arrival: false,
            draining: false,
            stats: Stats::new(geometry.page_size, config.series_interval_ns),
            order_key: 0,
            live_completed: Vec::new(),
            live: false,
            command_ops_max: if config.multi_plane {
                (geometry.planes_per_die as usize).min(MULTI_PLANE_MAX)
            } else {
                1
            },
            early_reads: config.die_queue == DieQueue::Fifo
                && !config.priority_aware_gc
                && (!config.multi_plane || geometry.planes_per_die == 1),
        }
    }

    /// Every die waits for a `DieReady` event before its next command, as
    /// the model describes it: the reference the early-read path is
    /// checked against.
    #[cfg(test)]
    pub(crate) fn event_by_event(mut self) -> Self {
        self.early_reads = false;
        self
    }

    /// Closed-loop `[[job]]`s: one host queue per job at that job's depth
    /// (`(job, depth)` pairs). When a job's request completes, the engine
    /// asks the source for that job's next one
    /// ([`RequestSource::next_request_of`]), so every job keeps its own depth
    /// outstanding, as fio's jobs and MQSim's flows do. With
    /// `timing.arrival = "closed"` these queues replace the `timing.queues` ×
    /// `timing.queue_depth` ones; with `"open"` they sit beside them, which
    /// keep taking the source's merged stream (the open-loop jobs) at its
    /// arrival times. Needs an NVMe interface (SATA has one queue).
    #[must_use]
    pub fn with_job_queues(mut self, jobs: &[(u16, u32)]) -> Self {
        if self.config.arrival == Arrival::Closed {
            self.queues.clear();
        }
        // Queues are `timing.queues` plus one per job, far below 2^32.
        let first = self.queues.len() as u32;
        self.first_job_queue = first;
        self.queues.extend(jobs.iter().map(|&(_, depth)| HostQueue::new(depth)));
        self.closed_jobs = jobs.iter().map(|&(job, _)| job).collect();
        self
    }

    /// The closed-loop job whose queue `queue` is, if it is one.
    #[inline]
    fn closed_job_of(&self, queue: u32) -> Option<u16> {
        let index = queue.checked_sub(self.first_job_queue)?;
        self.closed_jobs.get(index as usize).copied()
    }

    /// The host queues the open-loop arrivals share (round robin): those
    /// before the closed-loop jobs' own.
    #[inline]
    fn shared_queues(&self) -> &[HostQueue] {
        if self.closed_jobs.is_empty() {
            &self.queues
        } else {
            &self.queues[..self.first_job_queue as usize]
        }
    }

    /// Runs `requests` requests from `source` (fewer if it runs dry) and
    /// returns what was measured. Closed loop keeps every queue full; open
    /// loop issues each request at its arrival time.
    pub fn run<T: TranslationLayer>(
        self,
        ftl: &mut T,
        source: &mut dyn RequestSource,
        requests: u64,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<TimedReport, FtlError> {
        self.run_with_waf(ftl, source, requests, observer, None)
    }

    /// Like [`Self::run`], observing `waf` at every completed host request
    /// (WAF over time, as counting mode records it).
    pub fn run_with_waf<T: TranslationLayer>(
        mut self,
        ftl: &mut T,
        source: &mut dyn RequestSource,
        requests: u64,
        observer: &mut dyn FnMut(Progress),
        mut waf: Option<&mut WafSeries>,
    ) -> Result<TimedReport, FtlError> {
        ftl.set_recording(true);
        let start = FlashCost::of(ftl.counters());
        let result = self.run_loop(ftl, source, requests, observer, &mut waf);
        ftl.set_recording(false);
        result?;
        observer(Progress { phase: Phase::Measure, done: self.stats.completed(), total: requests });
        Ok(self.stats.report(self.geometry.dies(), FlashCost::of(ftl.counters()).since(start)))
    }

    fn run_loop<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        source: &mut dyn RequestSource,
        requests: u64,
        observer: &mut dyn FnMut(Progress),
        waf: &mut Option<&mut WafSeries>,
    ) -> Result<(), FtlError> {
        // The device starts idle: dies below the low watermark clean at once.
        self.wake_idle_dies(ftl)?;
        let mut intake = Intake::new(source, requests);
        // Queues are `timing.queues` plus one per job, far below 2^32.
        let queues = self.queues.len() as u32;
        match self.config.arrival {
            Arrival::Closed => self.fill_queues(ftl, &mut intake, 0..queues)?,
            Arrival::Open => {
                // Closed-loop jobs beside the open arrivals fill their own queues at time 0.
                if !self.closed_jobs.is_empty() {
                    self.fill_queues(ftl, &mut intake, self.first_job_queue..queues)?;
                }
                self.read_next(ftl, &mut intake);
            }
        }
        match self.config.arrival {
            Arrival::Closed => self.event_loop::<T, false>(ftl, &mut intake, observer, waf),
            Arrival::Open => self.event_loop::<T, true>(ftl, &mut intake, observer, waf),
        }
    }

    /// Processes events (and with `OPEN` arrivals) until none is left. One
    /// loop per arrival mode, so that a closed loop does not look for
    /// arrivals at every event.
    fn event_loop<T: TranslationLayer, const OPEN: bool>(
        &mut self,
        ftl: &mut T,
        intake: &mut Intake<'_>,
        observer: &mut dyn FnMut(Progress),
        waf: &mut Option<&mut WafSeries>,
    ) -> Result<(), FtlError> {
        let requests = intake.requests;
        loop {
            if OPEN && self.arrival_comes_first(intake) {
                self.open_arrival(ftl, intake)?;
                continue;
            }
            let Some(event) = self.events.pop() else {
                break;
            };
            let (kind, index) = event_target(event);
            match kind {
                EventKind::JobDone => {
                    self.enter(event);
                    let Some(queue) = self.job_done(ftl, index)? else {
                        continue;
                    };
                    if intake.backlog && self.config.interface == Interface::Sata {
                        // `job_done` fetched what the queue held; requests
                        // waiting in the source follow at once, as they would
                        // from the queue.
                        self.dispatch_open(ftl, intake, queue)?;
                    }
                    if let Some(series) = waf.as_deref_mut() {
                        series.observe(ftl.counters());
                    }
                    let completed = self.stats.completed();
                    if completed.is_multiple_of(PROGRESS_INTERVAL) {
                        observer(Progress { phase: Phase::Measure, done: completed, total: requests });
                    }
                    if completed >= requests {
                        self.draining = true;
                        continue;
                    }
                    if OPEN && !self.closed_jobs.is_empty() {
                        if let Some(job) = self.closed_job_of(queue) {
                            // A closed-loop job beside open arrivals: its
                            // queue takes its next request, or, once the
                            // job has issued all, nothing more.
                            if intake.issued < requests {
                                if let Some(timed) = intake.source.next_request_of(job) {
                                    intake.issued += 1;
                                    self.arrive(ftl, timed, queue)?;
                                    continue;
                                }
                            }
                            if self.all_issued_done(intake, completed) {
                                self.draining = true;
                            }
                            continue;
                        }
                    }
                    if self.all_issued_done(intake, completed) {
                        self.draining = true;
                        continue;
                    }
                    if !OPEN && intake.issued < requests {
                        if let Some(timed) = self.next_request_for(ftl, intake.source, queue) {
                            intake.issued += 1;
                            // `arrive` starts the request or dispatches the
                            // queue: `dispatch_open` would find nothing to take.
                            self.arrive(ftl, timed, queue)?;
                            continue;
                        } else if !self.closed_jobs.is_empty() && completed == intake.issued {
                            // Every job has issued everything and nothing is outstanding.
                            self.draining = true;
                            continue;
                        }
                    }
                    self.dispatch_open(ftl, intake, queue)?;
                }
                EventKind::ReadSensed => self.read_sensed(event, index),
                EventKind::DieReady => {
                    self.enter(event);
                    self.start_next(ftl, index)?;
                }
                EventKind::IdleFlush => {
                    self.enter(event);
                    self.idle_flush(ftl, index)?;
                }
            }
        }
        Ok(())
    }

    /// Whether the source has run dry and every request taken from it has
    /// completed (`completed` of them). A closed-loop job with requests left
    /// always has one outstanding, so this holds beside such jobs only once
    /// they are done too.
    #[inline]
    fn all_issued_done(&self, intake: &Intake<'_>, completed: u64) -> bool {
        self.source_dry && self.ahead.is_empty() && intake.next.is_none() && completed == intake.issued
    }

    /// Moves the clock to `event`, which is not stale.
    #[inline(always)]
    fn enter(&mut self, event: Event) {
        self.now_ns = event.time_ns;
        self.order_key = order_key(event);
        self.stats.events += 1;
    }

    fn new_job(&mut self, kind: JobKind) -> u32 {
        self.jobs.insert(Job { kind, open_ops: 1, done_ns: self.now_ns })
    }

    fn new_flush_job(&mut self, pages: u32) -> u32 {
        let seq = self.flushes.open();
        self.new_job(JobKind::Flush { pages, seq })
    }

    /// Drops the creator's hold on a job.
    fn release(&mut self, job: u32) {
        finish_op(&mut self.jobs, &mut self.events, job, self.now_ns);
    }
}
