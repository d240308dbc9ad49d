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
use crate::ftl::{FlashOp, FlashOpKind, FtlConfig, FtlError, TranslationLayer};
use crate::host::Op;
use crate::metrics::WafSeries;
use crate::progress::{Phase, Progress};
use crate::timing::config::{Arrival, DieQueue, FlushPolicy, Interface, TimingConfig};
use crate::timing::queue::{Event, EventQueue};
use crate::timing::source::{RequestSource, TimedRequest};
use crate::timing::stats::{FlashCost, Stats, TimedReport};
use crate::timing::stripe::{StripeFill, WriteBuffer};
use crate::units::{Lpn, SimNs, StreamId, UnitId};
use std::collections::VecDeque;

/// Requests as they arrive, for a live emulated device.
mod live;

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

/// A flash operation waiting for (or holding) its die: its job, plane of
/// the die (for multi-plane operations), kind and whether GC issued it,
/// packed into one word, so that queueing it and starting it move one word
/// rather than four fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct QueuedOp(u64);

impl QueuedOp {
    fn new(kind: FlashOpKind, gc: bool, plane: u16, job: u32) -> Self {
        let kind = match kind {
            FlashOpKind::Read => 0u64,
            FlashOpKind::Program => 1,
            FlashOpKind::Erase => 2,
        };
        Self(u64::from(job) | u64::from(plane) << 32 | kind << 48 | u64::from(gc) << 56)
    }

    #[inline(always)]
    fn job(self) -> u32 {
        // The low 32 bits are the job.
        self.0 as u32
    }

    #[inline(always)]
    fn plane(self) -> u16 {
        // Bits 32 to 47 are the plane.
        (self.0 >> 32) as u16
    }

    #[inline(always)]
    fn kind(self) -> FlashOpKind {
        match (self.0 >> 48) & 0xff {
            0 => FlashOpKind::Read,
            1 => FlashOpKind::Program,
            _ => FlashOpKind::Erase,
        }
    }

    #[inline(always)]
    fn gc(self) -> bool {
        self.0 >> 56 != 0
    }
}

/// A die's queue of operations: a vector and the index of its front.
/// Taking from the front only moves the index, without the ring's wrap
/// arithmetic; the vector restarts when the queue runs empty (a die's
/// queue does so at least once per GC step) and drops its taken part
/// when that is most of it, so it stays as long as the queue's peak.
#[derive(Debug)]
struct OpQueue {
    ops: Vec<QueuedOp>,
    /// Index of the front operation in `ops`; those before it were taken.
    head: usize,
}

impl OpQueue {
    fn with_capacity(capacity: usize) -> Self {
        Self { ops: Vec::with_capacity(capacity), head: 0 }
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.head >= self.ops.len()
    }

    #[inline(always)]
    fn front(&self) -> Option<&QueuedOp> {
        self.ops.get(self.head)
    }

    #[inline(always)]
    fn pop_front(&mut self) -> Option<QueuedOp> {
        let op = *self.ops.get(self.head)?;
        self.head += 1;
        Some(op)
    }

    /// The queued operations, front first.
    fn queued(&self) -> &[QueuedOp] {
        &self.ops[self.head..]
    }

    #[inline(always)]
    fn push_back(&mut self, op: QueuedOp) {
        self.make_room();
        self.ops.push(op);
    }

    /// Queues `op` at position `at` of [`Self::queued`].
    fn insert(&mut self, at: usize, op: QueuedOp) {
        self.make_room();
        self.ops.insert(self.head + at, op);
    }

    /// Drops the taken operations when the queue is empty, or when they
    /// are most of the vector (a queue that never runs empty).
    #[inline(always)]
    fn make_room(&mut self) {
        if self.is_empty() {
            self.ops.clear();
            self.head = 0;
        } else if self.head >= 64 && self.head * 2 >= self.ops.len() {
            self.ops.drain(..self.head);
            self.head = 0;
        }
    }

    /// Returns `op`, the operation taken last, to the front (an early read
    /// taken back: nothing else is taken or queued on its die meanwhile).
    fn put_back(&mut self, op: QueuedOp) {
        self.head -= 1;
        debug_assert_eq!(self.ops[self.head], op, "only the operation taken last goes back");
    }
}

/// Most operations one multi-plane command carries.
const MULTI_PLANE_MAX: usize = 8;

/// The operations of one flash command, inline (no heap).
#[derive(Clone, Copy, Debug)]
struct Command {
    ops: [QueuedOp; MULTI_PLANE_MAX],
    len: usize,
}

impl Default for Command {
    fn default() -> Self {
        let idle = QueuedOp::new(FlashOpKind::Read, false, 0, NO_JOB);
        Self { ops: [idle; MULTI_PLANE_MAX], len: 0 }
    }
}

impl Command {
    fn ops(&self) -> &[QueuedOp] {
        &self.ops[..self.len]
    }

    fn start(&mut self, first: QueuedOp) {
        self.ops[0] = first;
        self.len = 1;
    }

    fn push(&mut self, op: QueuedOp) {
        self.ops[self.len] = op;
        self.len += 1;
    }
}

#[derive(Debug)]
struct Die {
    channel: usize,
    /// The host epoch in which a background GC step on this die freed no
    /// block (every victim page valid): no more steps until the host writes
    /// or trims again, which is what can make a step pay off.
    futile_gc_epoch: Option<u64>,
    /// When the array finishes its current operation.
    array_free_ns: u64,
    /// An operation holds the die's register (it is not ready for the next).
    busy: bool,
    /// The operations of the command in service (one per plane with
    /// multi-plane operations); for a read, their pages wait in the
    /// registers for the bus.
    command: Command,
    /// Host operations and foreground GC, in order.
    host_ops: OpQueue,
    /// Operations of the die's background GC step.
    gc_ops: OpQueue,
    /// When the read in service finishes sensing ([`NO_TIME`] when none):
    /// a `ReadSensed` event of another time is stale (its read was taken
    /// back, see [`Engine::take_back_early_read`]).
    sensing_until_ns: u64,
    /// The time of a `DieReady` event this die skipped by starting its next
    /// read when the previous command started ([`Die::start_read_early`]),
    /// when that read came from background GC: a host operation queued
    /// before that event's turn takes the read back. [`NO_TIME`] when none.
    skipped_ready_ns: u64,
    /// `array_free_ns` before that early read.
    array_free_before_read_ns: u64,
}

/// Which queue of a die a command comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Queue {
    /// Host operations and foreground GC, in order.
    Host,
    BackgroundGc,
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

#[derive(Debug)]
struct HostQueue {
    waiting: VecDeque<TimedRequest>,
    outstanding: u32,
    /// Most requests the queue has in the device at once.
    depth: u32,
    /// Requests fetched so far.
    fetched: u64,
}

impl HostQueue {
    fn new(depth: u32) -> Self {
        Self { waiting: VecDeque::new(), outstanding: 0, depth, fetched: 0 }
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

/// The buffer flush jobs under way, for flush requests: a flush completes
/// once every flush job opened before it has finished (jobs finish out of
/// order). Sequence numbers are consecutive, so a window of done flags from
/// the oldest open job suffices.
#[derive(Debug, Default)]
struct FlushBarrier {
    next_seq: u64,
    /// Done flags of jobs `oldest..next_seq`.
    oldest: u64,
    done: VecDeque<bool>,
    /// Flush requests' jobs waiting for every flush job below their barrier.
    waiters: VecDeque<(u64, u32)>,
}

impl FlushBarrier {
    fn open(&mut self) -> u64 {
        self.done.push_back(false);
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// The barrier a flush arriving now waits for, if any job is still open.
    fn barrier(&self) -> Option<u64> {
        (!self.done.is_empty()).then_some(self.next_seq)
    }

    fn wait(&mut self, barrier: u64, job: u32) {
        self.waiters.push_back((barrier, job));
    }

    /// Job `seq` finished.
    fn done(&mut self, seq: u64) {
        // `seq` lies in the window: it was opened and is not yet done.
        let index = (seq - self.oldest) as usize;
        self.done[index] = true;
        while self.done.front() == Some(&true) {
            self.done.pop_front();
            self.oldest += 1;
        }
    }

    /// The next waiting job whose barrier has passed (barriers come in order).
    fn pop_passed(&mut self) -> Option<u32> {
        let &(barrier, job) = self.waiters.front()?;
        (barrier <= self.oldest).then(|| {
            self.waiters.pop_front();
            job
        })
    }
}

/// Requests fetched ahead of dispatch; the FTL prefetches the L2P entry of
/// each when it is fetched and the P2L entry of the old page halfway.
const LOOKAHEAD: usize = 16;

/// Where a run takes its requests from, and how far it has taken them.
///
/// Open loop: a request whose arrival time has come while every host queue
/// is blocked (full, or SATA waiting out a DISCARD) would only wait in its
/// queue, and so would every request after it. Such requests stay in the
/// source instead (`backlog`), and a queue that frees a slot reads its next
/// one from there: the backlog lives in the source's position, so the
/// engine holds its queues' requests, not the trace's, whatever the arrival
/// rate. Each request keeps its recorded arrival time, so its latency is
/// the same as if it had waited in the queue.
struct Intake<'s> {
    source: &'s mut dyn RequestSource,
    /// Requests to run.
    requests: u64,
    /// Requests taken into the host queues.
    issued: u64,
    /// Open loop: the next request, read from the source and not taken yet.
    next: Option<TimedRequest>,
    /// Open loop: every host queue was blocked when `next` arrived; it and
    /// the requests after it that arrive before the event under way are
    /// waiting in the source.
    backlog: bool,
}

impl<'s> Intake<'s> {
    fn new(source: &'s mut dyn RequestSource, requests: u64) -> Self {
        Self { source, requests, issued: 0, next: None, backlog: false }
    }
}

/// One operation of `job` finishes at `done_ns` (known when it starts); the
/// job's last schedules its `JobDone` event. Inline, so that background GC's
/// operations (no job) cost a compare, not a call. A function of the two
/// tables it touches, so that code holding a die can call it.
#[inline]
fn finish_op(jobs: &mut Slab<Job>, events: &mut EventQueue, job: u32, done_ns: u64) {
    if job != NO_JOB {
        finish_job_op(jobs, events, job, done_ns);
    }
}

fn finish_job_op(jobs: &mut Slab<Job>, events: &mut EventQueue, job: u32, done_ns: u64) {
    let entry = jobs.get_mut(job);
    entry.done_ns = entry.done_ns.max(done_ns);
    entry.open_ops -= 1;
    if entry.open_ops == 0 {
        let done = entry.done_ns;
        events.push(pack(done, EventKind::JobDone, job));
    }
}

/// Every operation of `command` finishes at `done_ns`.
#[inline(always)]
fn finish_command(jobs: &mut Slab<Job>, events: &mut EventQueue, command: &Command, done_ns: u64) {
    if command.len == 1 {
        // Most commands carry one operation: no loop.
        finish_op(jobs, events, command.ops[0].job(), done_ns);
        return;
    }
    for op in command.ops() {
        finish_op(jobs, events, op.job(), done_ns);
    }
}

/// Die `die` (`entry`) can take its next command at `ready_ns`: a
/// `DieReady` event then, unless the read it would start can start now
/// ([`Die::start_read_early`]; `early_read_ns` is the read time when early
/// reads are on). Takes the die and the fields it touches, so that its
/// callers index the die once.
#[inline(always)]
fn ready_at(
    entry: &mut Die,
    events: &mut EventQueue,
    stats: &mut Stats,
    early_read_ns: Option<u64>,
    die: u32,
    ready_ns: u64,
) {
    if let Some(read_ns) = early_read_ns {
        if let Some(read) = entry.start_read_early(ready_ns, read_ns) {
            stats.die_busy_ns += read_ns;
            if read.gc() {
                stats.gc_die_busy_ns += read_ns;
            }
            events.push(pack(entry.sensing_until_ns, EventKind::ReadSensed, die));
            return;
        }
    }
    events.push(pack(ready_ns, EventKind::DieReady, die));
}

impl Die {
    /// Starts now the read the die's `DieReady` event at `ready_ns` would
    /// start, and skips that event: one event fewer per read that follows
    /// another command (most GC copies). A read needs no channel until it
    /// has sensed, so its sense end depends only on the die's array; what
    /// the skipped event would have decided can change only if a host
    /// operation is queued at the die before the event's turn, and only for
    /// a read from background GC (host operations go first): such a read is
    /// taken back ([`Engine::take_back_early_read`]) and the event scheduled
    /// after all. Returns the read started, `None` (nothing done) when the
    /// next operation is not a read; the caller charges its time and
    /// schedules its `ReadSensed` event at `sensing_until_ns`.
    #[inline(always)]
    fn start_read_early(&mut self, ready_ns: u64, read_ns: u64) -> Option<QueuedOp> {
        let from_gc = self.host_ops.is_empty();
        let ops = if from_gc { &mut self.gc_ops } else { &mut self.host_ops };
        let &read = ops.front().filter(|op| op.kind() == FlashOpKind::Read)?;
        let sensed = self.array_free_ns.max(ready_ns) + read_ns;
        if sensed == ready_ns {
            // Its `ReadSensed` would come before the skipped event's turn.
            return None;
        }
        ops.pop_front();
        self.command.start(read);
        self.skipped_ready_ns = if from_gc { ready_ns } else { NO_TIME };
        self.array_free_before_read_ns = self.array_free_ns;
        self.array_free_ns = sensed;
        self.sensing_until_ns = sensed;
        Some(read)
    }
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

    /// Closed loop: fills each of `queues` to its depth (while the run has
    /// requests left to issue).
    fn fill_queues<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        intake: &mut Intake<'_>,
        queues: std::ops::Range<u32>,
    ) -> Result<(), FtlError> {
        for queue in queues {
            for _ in 0..self.queues[queue as usize].depth {
                if intake.issued < intake.requests {
                    let Some(timed) = self.next_request_for(ftl, intake.source, queue) else {
                        break;
                    };
                    intake.issued += 1;
                    self.arrive(ftl, timed, queue)?;
                }
            }
        }
        Ok(())
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

    /// Open loop: whether the next request arrives before the next event;
    /// if so, the clock and the processing order move to its arrival.
    fn arrival_comes_first(&mut self, intake: &Intake<'_>) -> bool {
        let arrives_first =
            |timed: &TimedRequest| self.events.peek_time().is_none_or(|event_ns| timed.arrival.0 < event_ns);
        let Some(timed) = intake.next.filter(|timed| !intake.backlog && arrives_first(timed)) else {
            return false;
        };
        self.now_ns = self.now_ns.max(timed.arrival.0);
        self.order_key = self.order_key.max((u128::from(timed.arrival.0) << 64) | u128::from(u64::MAX));
        true
    }

    /// Moves the clock to `event`, which is not stale.
    #[inline(always)]
    fn enter(&mut self, event: Event) {
        self.now_ns = event.time_ns;
        self.order_key = order_key(event);
        self.stats.events += 1;
    }

    // ----- host interface -----

    /// The next request for host queue `queue` in a closed loop: from the
    /// merged stream, or with job queues from that queue's job.
    #[inline]
    fn next_request_for<T: TranslationLayer>(
        &mut self,
        ftl: &T,
        source: &mut dyn RequestSource,
        queue: u32,
    ) -> Option<TimedRequest> {
        if let Some(job) = self.closed_job_of(queue) {
            return source.next_request_of(job);
        }
        self.next_request(ftl, source)
    }

    fn next_request<T: TranslationLayer>(&mut self, ftl: &T, source: &mut dyn RequestSource) -> Option<TimedRequest> {
        while self.ahead.len() <= LOOKAHEAD && !self.source_dry {
            let Some(timed) = source.next_request() else {
                self.source_dry = true;
                break;
            };
            ftl.prefetch_mapping(timed.request.start);
            self.ahead.push_back(timed);
        }
        if let Some(halfway) = self.ahead.get(LOOKAHEAD / 2) {
            ftl.prefetch_old_page(halfway.request.start);
        }
        self.ahead.pop_front()
    }

    /// Open loop: reads the next request from the source, unless the run
    /// has taken all it asked for.
    fn read_next<T: TranslationLayer>(&mut self, ftl: &T, intake: &mut Intake<'_>) {
        if intake.issued < intake.requests {
            intake.next = self.next_request(ftl, intake.source);
        }
    }

    /// Open loop: takes `intake.next` for the host queue whose turn it is
    /// (round robin); returns it and that queue.
    fn take_next(&mut self, intake: &mut Intake<'_>) -> Option<(TimedRequest, u32)> {
        let timed = intake.next.take()?;
        intake.issued += 1;
        let queue = self.next_queue;
        self.next_queue = (queue + 1) % self.config.queues;
        Some((timed, queue))
    }

    /// Open loop: the next request's arrival time has come. It joins its
    /// host queue, unless every queue is blocked: then it would only wait
    /// there, and every request after it too, so they wait in the source
    /// ([`Intake`]). One queue blocks alone; of several, each is blocked
    /// when all are full (NVMe, the only interface with several).
    fn open_arrival<T: TranslationLayer>(&mut self, ftl: &mut T, intake: &mut Intake<'_>) -> Result<(), FtlError> {
        let Some(next) = intake.next else { return Ok(()) };
        let host_queue = &self.queues[self.next_queue as usize];
        let waits = !host_queue.waiting.is_empty() || !self.fetches(self.next_queue, next.request.op);
        let shared = self.shared_queues();
        let blocked = || shared.len() == 1 || shared.iter().all(|queue| queue.outstanding >= queue.depth);
        if waits && blocked() && self.defers_arrivals() {
            intake.backlog = true;
            return Ok(());
        }
        let Some((timed, queue)) = self.take_next(intake) else { return Ok(()) };
        self.arrive(ftl, timed, queue)?;
        self.read_next(ftl, intake);
        Ok(())
    }

    /// Tests: see `queue_every_arrival`.
    #[cfg(test)]
    pub(crate) fn queueing_every_arrival(mut self) -> Self {
        self.queue_every_arrival = true;
        self
    }

    /// Whether open-loop requests may wait in the source ([`Intake`]).
    #[cfg(test)]
    fn defers_arrivals(&self) -> bool {
        !self.queue_every_arrival
    }

    #[cfg(not(test))]
    #[allow(clippy::unused_self)]
    fn defers_arrivals(&self) -> bool {
        true
    }

    fn arrive<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        mut timed: TimedRequest,
        queue: u32,
    ) -> Result<(), FtlError> {
        if self.config.arrival == Arrival::Closed || self.closed_job_of(queue).is_some() {
            timed.arrival.0 = self.now_ns;
        }
        if self.queues[queue as usize].waiting.is_empty() && self.fetches(queue, timed.request.op) {
            // What `dispatch` does with the queue's only waiting request,
            // without the detour through the queue.
            return self.start_request(ftl, timed, queue);
        }
        self.queues[queue as usize].waiting.push_back(timed);
        self.dispatch(ftl, queue)
    }

    /// [`Self::dispatch`], and in a backlog the queue's requests waiting in
    /// the source: when the queue has room and holds none, its next request
    /// is read from there if it arrived before now. Requests of the other
    /// queues read on the way join their queues, which are full; a request
    /// that has not arrived ends the backlog.
    #[inline(always)]
    fn dispatch_open<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        intake: &mut Intake<'_>,
        queue: u32,
    ) -> Result<(), FtlError> {
        if intake.backlog {
            self.dispatch_backlog(ftl, intake, queue)
        } else {
            self.dispatch(ftl, queue)
        }
    }

    fn dispatch_backlog<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        intake: &mut Intake<'_>,
        queue: u32,
    ) -> Result<(), FtlError> {
        loop {
            self.dispatch(ftl, queue)?;
            let host_queue = &self.queues[queue as usize];
            if !intake.backlog || !host_queue.waiting.is_empty() || host_queue.outstanding >= host_queue.depth {
                return Ok(());
            }
            loop {
                let now = self.now_ns;
                if intake.next.is_none_or(|next| next.arrival.0 >= now) {
                    intake.backlog = false;
                    return Ok(());
                }
                let Some((timed, to)) = self.take_next(intake) else { return Ok(()) };
                self.queues[to as usize].waiting.push_back(timed);
                self.read_next(ftl, intake);
                if to == queue {
                    break;
                }
            }
        }
    }

    /// Fetches waiting requests of `queue` into the device while its depth
    /// allows.
    fn dispatch<T: TranslationLayer>(&mut self, ftl: &mut T, queue: u32) -> Result<(), FtlError> {
        loop {
            let Some(head) = self.queues[queue as usize].waiting.front() else {
                return Ok(());
            };
            if !self.fetches(queue, head.request.op) {
                return Ok(());
            }
            let Some(timed) = self.queues[queue as usize].waiting.pop_front() else {
                return Ok(());
            };
            self.start_request(ftl, timed, queue)?;
        }
    }

    /// Whether `queue` fetches its first waiting request, of operation
    /// `head`, now: while its depth allows. On SATA a DISCARD waits for the
    /// device to drain and blocks everything behind it.
    #[inline]
    fn fetches(&self, queue: u32, head: Op) -> bool {
        let host_queue = &self.queues[queue as usize];
        host_queue.outstanding < host_queue.depth
            && !(self.config.interface == Interface::Sata
                && (self.discard_blocking || (head == Op::Trim && self.outstanding > 0)))
    }

    fn start_request<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        timed: TimedRequest,
        queue: u32,
    ) -> Result<(), FtlError> {
        let Some(job) = timed.job else { return self.start_request_ops(ftl, timed, queue) };
        let before = FlashCost::of(ftl.counters());
        self.start_request_ops(ftl, timed, queue)?;
        self.stats.charge(job, FlashCost::of(ftl.counters()).since(before));
        Ok(())
    }

    fn start_request_ops<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        timed: TimedRequest,
        queue: u32,
    ) -> Result<(), FtlError> {
        self.queues[queue as usize].outstanding += 1;
        self.outstanding += 1;
        if timed.priority {
            self.priority_outstanding += 1;
        }
        let arrival_ns = timed.arrival.0.min(self.now_ns);
        if ftl.follows_time() {
            ftl.advance(SimNs(arrival_ns))?;
            // What expired is erased in the background: no request waits
            // for it, but it holds its die like any other operation.
            self.enqueue_recorded(ftl, NO_JOB);
        }
        ftl.count_request();
        let host_queue = &mut self.queues[queue as usize];
        let seq = host_queue.fetched;
        host_queue.fetched += 1;
        let slot = self.requests.insert(InFlight { timed, arrival_ns, queue, unmapped_pages: 0, seq });
        let request = timed.request;
        match request.op {
            Op::Read => {
                let job = self.new_job(JobKind::Request(slot));
                let unmapped_before = ftl.counters().unmapped_reads;
                for lpn in request.start.0..request.start.0 + request.pages {
                    ftl.read(Lpn(lpn))?;
                    self.enqueue_recorded(ftl, job);
                }
                let unmapped = ftl.counters().unmapped_reads - unmapped_before;
                self.stats.unmapped_read_pages += unmapped;
                // At most `request.pages`, a u32.
                let unmapped = unmapped as u32;
                self.requests.get_mut(slot).unmapped_pages = unmapped;
                self.release(job);
            }
            Op::Flush => {
                // The layer's own buffer (pblk) is programmed now; what the
                // device buffer acknowledged before must reach flash too.
                let job = self.new_job(JobKind::Request(slot));
                ftl.flush()?;
                self.enqueue_recorded(ftl, job);
                // Partial stripes were acknowledged too: they go now, with
                // the RMW of what they lack.
                while let Some(fill) = self.buffer.evict_oldest() {
                    self.flush_stripe(ftl, &fill)?;
                }
                if let Some(barrier) = self.flushes.barrier() {
                    self.jobs.get_mut(job).open_ops += 1;
                    self.flushes.wait(barrier, job);
                }
                self.release(job);
            }
            Op::Write => {
                self.stats.host_pages_written += u64::from(request.pages);
                if request.pages > self.buffer.capacity() {
                    let job = self.new_job(JobKind::Request(slot));
                    self.write_range(ftl, request.start.0, request.pages, request.stream, job)?;
                    self.release(job);
                } else {
                    self.buffer_waiting.push_back(slot);
                    self.admit_buffered(ftl)?;
                }
            }
            Op::Trim => {
                ftl.trim(request.start, request.pages)?;
                // Trimmed pages are invalid pages a futile GC step may now find.
                self.host_epoch += 1;
                if self.config.interface == Interface::Sata {
                    self.discard_blocking = true;
                }
                let cost = self.config.discard_command_ns + self.config.discard_entry_ns * u64::from(request.pages);
                let done = self.controller_free_ns.max(self.now_ns) + cost;
                self.controller_free_ns = done;
                let job = self.new_job(JobKind::Request(slot));
                self.jobs.get_mut(job).done_ns = done;
                // The mapping cache's cost (`ftl.discard = "dftl"`): the
                // translation pages the DISCARD missed are read, and dirty
                // ones it evicted written back, on their dies; it waits for them.
                self.enqueue_recorded(ftl, job);
                self.release(job);
            }
        }
        Ok(())
    }

    /// A job finished. Returns the host queue of the request it completed.
    fn job_done<T: TranslationLayer>(&mut self, ftl: &mut T, job: u32) -> Result<Option<u32>, FtlError> {
        match self.jobs.remove(job).kind {
            JobKind::Flush { pages, seq } => {
                self.buffer.flushed(pages);
                self.flushes.done(seq);
                while let Some(waiting) = self.flushes.pop_passed() {
                    finish_op(&mut self.jobs, &mut self.events, waiting, self.now_ns);
                }
                self.admit_buffered(ftl)?;
                Ok(None)
            }
            JobKind::Request(slot) => {
                let done = self.requests.remove(slot);
                let request = done.timed.request;
                let flash_pages = request.pages - done.unmapped_pages;
                let timed = done.timed;
                self.stats.complete(request.op, flash_pages, timed.priority, timed.job, done.arrival_ns, self.now_ns);
                if let Some(deadline) = timed.deadline {
                    self.stats.deadline(deadline.0, self.now_ns);
                }
                self.queues[done.queue as usize].outstanding -= 1;
                self.outstanding -= 1;
                if self.live {
                    self.live_completed.push((LiveTicket { queue: done.queue, seq: done.seq }, SimNs(self.now_ns)));
                }
                self.idle_begins();
                if request.op == Op::Trim {
                    self.discard_blocking = false;
                }
                if done.timed.priority {
                    self.priority_outstanding -= 1;
                    if self.priority_outstanding == 0 && self.config.priority_aware_gc {
                        self.wake_idle_dies(ftl)?;
                    }
                }
                if self.config.interface == Interface::Sata {
                    // A DISCARD at the head may have been waiting for this drain.
                    self.dispatch(ftl, 0)?;
                }
                Ok(Some(done.queue))
            }
        }
    }

    // ----- write buffer and stripes -----

    /// Admits waiting writes, in order, while the buffer has room. An
    /// admitted write completes at once; its pages go to the flash as the
    /// flush policy says.
    fn admit_buffered<T: TranslationLayer>(&mut self, ftl: &mut T) -> Result<(), FtlError> {
        while let Some(&slot) = self.buffer_waiting.front() {
            let request = self.requests.get(slot).timed.request;
            if !self.buffer.fits(request.pages) {
                while let Some(fill) = self.buffer.evict_for(request.pages) {
                    self.flush_stripe(ftl, &fill)?;
                }
                return Ok(());
            }
            self.buffer_waiting.pop_front();
            let acknowledged = self.new_job(JobKind::Request(slot));
            self.release(acknowledged);
            if self.buffer.merging() {
                let mut complete = std::mem::take(&mut self.stripes_complete);
                self.buffer.admit_merging(request.start.0, request.pages, request.stream, &mut complete);
                for fill in complete.drain(..) {
                    self.stats.stripes_merged += 1;
                    self.flush_stripe(ftl, &fill)?;
                }
                self.stripes_complete = complete;
            } else {
                self.buffer.admit_flushing(request.pages);
                let job = self.new_flush_job(request.pages);
                self.write_range(ftl, request.start.0, request.pages, request.stream, job)?;
                self.release(job);
            }
        }
        Ok(())
    }

    /// The last request left the device: if it holds partial stripes and
    /// flushes them when idle, an `IdleFlush` event comes after the delay.
    fn idle_begins(&mut self) {
        let Some(delay_ns) = self.config.merge_idle_flush_ns() else { return };
        if self.outstanding == 0 && self.buffer.holds_partial_stripes() {
            self.idle_periods = self.idle_periods.wrapping_add(1);
            self.events.push(pack(self.now_ns.saturating_add(delay_ns), EventKind::IdleFlush, self.idle_periods));
        }
    }

    /// The device has been idle for `timing.merge_idle_ns` since idle period
    /// `period` began: unless a request came since, its partial stripes are
    /// written, each with the RMW of what it lacks (docs/stripe-merging.md).
    fn idle_flush<T: TranslationLayer>(&mut self, ftl: &mut T, period: u32) -> Result<(), FtlError> {
        if period != self.idle_periods || self.outstanding > 0 {
            return Ok(());
        }
        while let Some(fill) = self.buffer.evict_oldest() {
            self.stats.stripes_flushed_idle += 1;
            self.flush_stripe(ftl, &fill)?;
        }
        Ok(())
    }

    /// Writes a stripe the buffer let go, with the RMW of the pages it lacks.
    fn flush_stripe<T: TranslationLayer>(&mut self, ftl: &mut T, fill: &StripeFill) -> Result<(), FtlError> {
        let job = self.new_flush_job(fill.pages);
        let first = fill.stripe * self.config.stripe_pages;
        self.write_stripe(ftl, first, &|page| fill.contains(page - first), fill.stream, job)?;
        self.release(job);
        Ok(())
    }

    /// Writes `pages` pages from `start`, stripe by stripe.
    fn write_range<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        start: u32,
        pages: u32,
        stream: StreamId,
        job: u32,
    ) -> Result<(), FtlError> {
        let stripe_pages = self.config.stripe_pages;
        if stripe_pages == 1 {
            for lpn in start..start + pages {
                ftl.write(Lpn(lpn), stream)?;
                self.enqueue_recorded(ftl, job);
            }
            return Ok(());
        }
        let end = start + pages;
        let mut first = start / stripe_pages * stripe_pages;
        while first < end {
            self.write_stripe(ftl, first, &|page| (start..end).contains(&page), stream, job)?;
            first += stripe_pages;
        }
        Ok(())
    }

    /// Writes one stripe (mapping unit) starting at page `first`: the pages
    /// `written` selects come from the host; the stripe's other mapped pages
    /// are read and rewritten with them (read-modify-write, slide 12).
    fn write_stripe<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        first: u32,
        written: &dyn Fn(u32) -> bool,
        stream: StreamId,
        job: u32,
    ) -> Result<(), FtlError> {
        let end = (first + self.config.stripe_pages).min(self.geometry.logical_pages);
        for page in first..end {
            if !written(page) && ftl.is_mapped(Lpn(page)) {
                ftl.read(Lpn(page))?;
                self.stats.rmw_pages_read += 1;
                self.enqueue_recorded(ftl, job);
            }
        }
        for page in first..end {
            let host = written(page);
            if host || ftl.is_mapped(Lpn(page)) {
                ftl.write(Lpn(page), stream)?;
                if !host {
                    self.stats.rmw_pages_rewritten += 1;
                }
                self.enqueue_recorded(ftl, job);
            }
        }
        Ok(())
    }

    // ----- jobs -----

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

    // ----- dies and channels -----

    /// Queues the flash operations the FTL just performed at their dies.
    /// Host requests wait for every operation, inline GC included.
    fn enqueue_recorded<T: TranslationLayer>(&mut self, ftl: &mut T, job: u32) {
        self.host_epoch += 1;
        let multi_plane = self.config.multi_plane;
        let edf = self.config.die_queue == DieQueue::Edf;
        let due_ns = if edf { self.due_ns(job) } else { u64::MAX };
        if job != NO_JOB {
            // The creator's hold keeps the job open while its operations start.
            let ops = ftl.recorded().len() as u32;
            self.jobs.get_mut(job).open_ops += ops;
        }
        for &op in ftl.recorded() {
            let (die, queued) = Self::queued(&self.geometry, op, job);
            let at = if edf {
                let host_ops = self.dies[die as usize].host_ops.queued();
                host_ops.partition_point(|queued_op| self.due_ns(queued_op.job()) <= due_ns)
            } else {
                usize::MAX
            };
            let entry = &mut self.dies[die as usize];
            if at == usize::MAX {
                entry.host_ops.push_back(queued);
            } else {
                entry.host_ops.insert(at, queued);
            }
            // Taking a read back leaves the die busy with no command: the
            // skipped `DieReady` event comes.
            let (read_early, busy) = (entry.skipped_ready_ns != NO_TIME, entry.busy);
            if read_early {
                self.take_back_early_read(die);
            }
            if !multi_plane && !busy {
                self.start_command(die, Queue::Host);
            }
        }
        if multi_plane {
            // Only now start idle dies, so a multi-plane command can take
            // every operation this call queued at its die.
            for &op in ftl.recorded() {
                let (die, _) = Self::queued(&self.geometry, op, job);
                if !self.dies[die as usize].busy {
                    self.start_command(die, Queue::Host);
                }
            }
        }
        ftl.clear_recorded();
    }

    /// The die of `op` and its entry in that die's queue.
    #[inline]
    fn queued(geometry: &Geometry, op: FlashOp, job: u32) -> (u32, QueuedOp) {
        let dies = geometry.dies();
        debug_assert!(op.unit.0 < dies * geometry.planes_per_die, "unit {} out of range", op.unit.0);
        // Units are numbered die first: with one plane per die the unit is
        // the die, and the two divisions are not needed.
        let (die, plane) = if geometry.planes_per_die == 1 {
            (op.unit.0, 0)
        } else {
            // Planes per die fit in u16 whenever multi-plane batching matters.
            let plane = (op.unit.0 / dies) as u16;
            (op.unit.0 % dies, plane)
        };
        (die, QueuedOp::new(op.kind, op.gc, plane, job))
    }

    /// The deadline of the request `job` serves (`u64::MAX` for none):
    /// what `timing.die_queue = "edf"` orders a die's queue by.
    fn due_ns(&self, job: u32) -> u64 {
        if job == NO_JOB {
            return u64::MAX;
        }
        match self.jobs.get(job).kind {
            JobKind::Request(slot) => self.requests.get(slot).timed.deadline.map_or(u64::MAX, |deadline| deadline.0),
            JobKind::Flush { .. } => u64::MAX,
        }
    }

    /// The die is ready (its command no longer holds it): host operations
    /// first, then background GC when cleaning is allowed. Inlined into the
    /// event loop, where most commands start.
    #[inline(always)]
    fn start_next<T: TranslationLayer>(&mut self, ftl: &mut T, die: u32) -> Result<(), FtlError> {
        let entry = &mut self.dies[die as usize];
        entry.busy = false;
        // One call site, so `start_command` inlines here, where most commands start.
        let queue = if entry.host_ops.is_empty() {
            if self.config.priority_aware_gc && self.priority_outstanding > 0 {
                return Ok(());
            }
            if entry.gc_ops.is_empty() {
                self.plan_background_gc(ftl, die)?;
                if self.dies[die as usize].gc_ops.is_empty() {
                    return Ok(());
                }
            }
            Queue::BackgroundGc
        } else {
            Queue::Host
        };
        self.start_command(die, queue);
        Ok(())
    }

    /// One background GC step on the first unit of `die` below the low
    /// watermark: the FTL reclaims a victim now, the die pays for it as its
    /// idle time allows. Out of line: it runs once per victim, not per command.
    #[inline(never)]
    fn plan_background_gc<T: TranslationLayer>(&mut self, ftl: &mut T, die: u32) -> Result<(), FtlError> {
        if self.draining || self.dies[die as usize].futile_gc_epoch == Some(self.host_epoch) {
            return Ok(());
        }
        let dies = self.geometry.dies();
        for plane in 0..self.geometry.planes_per_die {
            let unit = UnitId(die + plane * dies);
            let free_before = ftl.free_blocks(unit);
            if free_before < self.gc_low_blocks && ftl.collect_one(unit)? {
                if ftl.free_blocks(unit) <= free_before {
                    self.dies[die as usize].futile_gc_epoch = Some(self.host_epoch);
                }
                let geometry = &self.geometry;
                let queued = ftl.recorded().iter().map(|&op| Self::queued(geometry, op, NO_JOB).1);
                let gc_ops = &mut self.dies[die as usize].gc_ops;
                for op in queued {
                    gc_ops.push_back(op);
                }
                ftl.clear_recorded();
                return Ok(());
            }
        }
        Ok(())
    }

    fn wake_idle_dies<T: TranslationLayer>(&mut self, ftl: &mut T) -> Result<(), FtlError> {
        for die in 0..self.geometry.dies() {
            if !self.dies[die as usize].busy {
                self.start_next(ftl, die)?;
            }
        }
        Ok(())
    }

    /// Starts the next command of `die` from `queue`: its first operation
    /// and, with multi-plane operations, the operations of the same kind on
    /// other planes queued right behind it.
    #[inline(always)]
    fn start_command(&mut self, die: u32, queue: Queue) {
        let now = self.now_ns;
        let early_read_ns = self.early_reads.then_some(self.config.read_ns);
        let command_ops_max = self.command_ops_max;
        let entry = &mut self.dies[die as usize];
        let ops = match queue {
            Queue::Host => &mut entry.host_ops,
            Queue::BackgroundGc => &mut entry.gc_ops,
        };
        let Some(first) = ops.pop_front() else { return };
        entry.command.start(first);
        while entry.command.len < command_ops_max {
            match ops.front() {
                Some(next)
                    if next.kind() == first.kind()
                        && entry.command.ops().iter().all(|op| op.plane() != next.plane()) =>
                {
                    entry.command.push(*next);
                    ops.pop_front();
                }
                _ => break,
            }
        }
        entry.busy = true;
        let array_ns = match first.kind() {
            FlashOpKind::Read => self.config.read_ns,
            FlashOpKind::Program => self.config.program_ns,
            FlashOpKind::Erase => self.config.erase_ns,
        };
        // One array operation serves every plane of the command; GC's share
        // of it is the share of GC operations in the command.
        let ops_count = entry.command.len as u64;
        let gc_ops = if ops_count == 1 {
            u64::from(first.gc())
        } else {
            entry.command.ops().iter().filter(|op| op.gc()).count() as u64
        };
        self.stats.die_busy_ns += array_ns;
        if gc_ops == ops_count {
            self.stats.gc_die_busy_ns += array_ns;
        } else if gc_ops > 0 {
            self.stats.gc_die_busy_ns += array_ns * gc_ops / ops_count;
        }
        match first.kind() {
            FlashOpKind::Program => {
                // Cache program: the pages cross the bus into the registers
                // while the array may still program the previous command.
                let channel = &mut self.channel_free_ns[entry.channel];
                let mut transferred = (*channel).max(now);
                transferred += self.transfer_ns * ops_count;
                *channel = transferred;
                let array_start = transferred.max(entry.array_free_ns);
                entry.array_free_ns = array_start + array_ns;
                let done = entry.array_free_ns;
                self.stats.busy_until(done);
                finish_command(&mut self.jobs, &mut self.events, &entry.command, done);
                ready_at(entry, &mut self.events, &mut self.stats, early_read_ns, die, array_start);
            }
            FlashOpKind::Read => {
                let sensed = entry.array_free_ns.max(now) + array_ns;
                entry.array_free_ns = sensed;
                entry.sensing_until_ns = sensed;
                self.events.push(pack(sensed, EventKind::ReadSensed, die));
            }
            FlashOpKind::Erase => {
                let done = entry.array_free_ns.max(now) + array_ns;
                entry.array_free_ns = done;
                self.stats.busy_until(done);
                finish_command(&mut self.jobs, &mut self.events, &entry.command, done);
                ready_at(entry, &mut self.events, &mut self.stats, early_read_ns, die, done);
            }
        }
    }

    /// A host operation was just queued at `die`, which started a
    /// background GC read early: if the skipped `DieReady` event's turn has
    /// not come yet, that event would have started the host operation
    /// instead, so the read goes back to the front of the GC queue and the
    /// event is scheduled. Its `ReadSensed` event stays queued, stale.
    fn take_back_early_read(&mut self, die: u32) {
        let read_ns = self.config.read_ns;
        let entry = &mut self.dies[die as usize];
        let ready_ns = std::mem::replace(&mut entry.skipped_ready_ns, NO_TIME);
        let skipped = order_key(pack(ready_ns, EventKind::DieReady, die));
        if self.order_key >= skipped {
            return;
        }
        let read = entry.command.ops[0];
        entry.gc_ops.put_back(read);
        entry.array_free_ns = entry.array_free_before_read_ns;
        entry.sensing_until_ns = NO_TIME;
        self.stats.die_busy_ns -= read_ns;
        if read.gc() {
            self.stats.gc_die_busy_ns -= read_ns;
        }
        self.events.push(pack(ready_ns, EventKind::DieReady, die));
    }

    /// A read command's pages leave the registers over the bus, one after
    /// the other; then the die is ready. A stale `event` (its read was taken
    /// back) is skipped without moving the clock.
    #[inline(always)]
    fn read_sensed(&mut self, event: Event, die: u32) {
        if self.dies[die as usize].sensing_until_ns != event.time_ns {
            return;
        }
        self.enter(event);
        let early_read_ns = self.early_reads.then_some(self.config.read_ns);
        let entry = &mut self.dies[die as usize];
        entry.sensing_until_ns = NO_TIME;
        entry.skipped_ready_ns = NO_TIME;
        let channel = &mut self.channel_free_ns[entry.channel];
        let mut transferred = (*channel).max(self.now_ns);
        if entry.command.len == 1 {
            transferred += self.transfer_ns;
            finish_op(&mut self.jobs, &mut self.events, entry.command.ops[0].job(), transferred);
        } else {
            for op in entry.command.ops() {
                transferred += self.transfer_ns;
                finish_op(&mut self.jobs, &mut self.events, op.job(), transferred);
            }
        }
        *channel = transferred;
        self.stats.busy_until(transferred);
        ready_at(entry, &mut self.events, &mut self.stats, early_read_ns, die, transferred);
    }
}
