//! Die and channel scheduling: each die's queues of flash operations (host
//! and foreground GC first, then background GC), the command in service
//! (multi-plane commands, early reads), and the bus transfers of its reads.

use super::{order_key, pack, Engine, EventKind, Job, JobKind, Slab, NO_JOB, NO_TIME};
use crate::device::Geometry;
use crate::ftl::{FlashOp, FlashOpKind, FtlError, TranslationLayer};
use crate::timing::config::DieQueue;
use crate::timing::queue::{Event, EventQueue};
use crate::timing::stats::Stats;

/// A flash operation waiting for (or holding) its die: its job, plane of
/// the die (for multi-plane operations), kind and whether GC issued it,
/// packed into one word, so that queueing it and starting it move one word
/// rather than four fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct QueuedOp(u64);

impl QueuedOp {
    pub(super) fn new(kind: FlashOpKind, gc: bool, plane: u16, job: u32) -> Self {
        let kind = match kind {
            FlashOpKind::Read => 0u64,
            FlashOpKind::Program => 1,
            FlashOpKind::Erase => 2,
        };
        Self(u64::from(job) | u64::from(plane) << 32 | kind << 48 | u64::from(gc) << 56)
    }

    #[inline(always)]
    pub(super) fn job(self) -> u32 {
        // The low 32 bits are the job.
        self.0 as u32
    }

    #[inline(always)]
    pub(super) fn plane(self) -> u16 {
        // Bits 32 to 47 are the plane.
        (self.0 >> 32) as u16
    }

    #[inline(always)]
    pub(super) fn kind(self) -> FlashOpKind {
        match (self.0 >> 48) & 0xff {
            0 => FlashOpKind::Read,
            1 => FlashOpKind::Program,
            _ => FlashOpKind::Erase,
        }
    }

    #[inline(always)]
    pub(super) fn gc(self) -> bool {
        self.0 >> 56 != 0
    }
}

/// A die's queue of operations: a vector and the index of its front.
/// Taking from the front only moves the index, without the ring's wrap
/// arithmetic; the vector restarts when the queue runs empty (a die's
/// queue does so at least once per GC step) and drops its taken part
/// when that is most of it, so it stays as long as the queue's peak.
#[derive(Debug)]
pub(super) struct OpQueue {
    pub(super) ops: Vec<QueuedOp>,
    /// Index of the front operation in `ops`; those before it were taken.
    pub(super) head: usize,
}

impl OpQueue {
    pub(super) fn with_capacity(capacity: usize) -> Self {
        Self { ops: Vec::with_capacity(capacity), head: 0 }
    }

    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.head >= self.ops.len()
    }

    #[inline(always)]
    pub(super) fn front(&self) -> Option<&QueuedOp> {
        self.ops.get(self.head)
    }

    #[inline(always)]
    pub(super) fn pop_front(&mut self) -> Option<QueuedOp> {
        let op = *self.ops.get(self.head)?;
        self.head += 1;
        Some(op)
    }

    /// The queued operations, front first.
    pub(super) fn queued(&self) -> &[QueuedOp] {
        &self.ops[self.head..]
    }

    #[inline(always)]
    pub(super) fn push_back(&mut self, op: QueuedOp) {
        self.make_room();
        self.ops.push(op);
    }

    /// Queues `op` at position `at` of [`Self::queued`].
    pub(super) fn insert(&mut self, at: usize, op: QueuedOp) {
        self.make_room();
        self.ops.insert(self.head + at, op);
    }

    /// Drops the taken operations when the queue is empty, or when they
    /// are most of the vector (a queue that never runs empty).
    #[inline(always)]
    pub(super) fn make_room(&mut self) {
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
    pub(super) fn put_back(&mut self, op: QueuedOp) {
        self.head -= 1;
        debug_assert_eq!(self.ops[self.head], op, "only the operation taken last goes back");
    }
}

/// Most operations one multi-plane command carries.
pub(super) const MULTI_PLANE_MAX: usize = 8;

/// The operations of one flash command, inline (no heap).
#[derive(Clone, Copy, Debug)]
pub(super) struct Command {
    pub(super) ops: [QueuedOp; MULTI_PLANE_MAX],
    pub(super) len: usize,
}

impl Default for Command {
    fn default() -> Self {
        let idle = QueuedOp::new(FlashOpKind::Read, false, 0, NO_JOB);
        Self { ops: [idle; MULTI_PLANE_MAX], len: 0 }
    }
}

impl Command {
    pub(super) fn ops(&self) -> &[QueuedOp] {
        &self.ops[..self.len]
    }

    pub(super) fn start(&mut self, first: QueuedOp) {
        self.ops[0] = first;
        self.len = 1;
    }

    pub(super) fn push(&mut self, op: QueuedOp) {
        self.ops[self.len] = op;
        self.len += 1;
    }
}

#[derive(Debug)]
pub(super) struct Die {
    pub(super) channel: usize,
    /// The host epoch in which a background GC step on this die freed no
    /// block (every victim page valid): no more steps until the host writes
    /// or trims again, which is what can make a step pay off.
    pub(super) futile_gc_epoch: Option<u64>,
    /// When the array finishes its current operation.
    pub(super) array_free_ns: u64,
    /// An operation holds the die's register (it is not ready for the next).
    pub(super) busy: bool,
    /// The operations of the command in service (one per plane with
    /// multi-plane operations); for a read, their pages wait in the
    /// registers for the bus.
    pub(super) command: Command,
    /// Host operations and foreground GC, in order.
    pub(super) host_ops: OpQueue,
    /// Operations of the die's background GC step.
    pub(super) gc_ops: OpQueue,
    /// When the read in service finishes sensing ([`NO_TIME`] when none):
    /// a `ReadSensed` event of another time is stale (its read was taken
    /// back, see [`Engine::take_back_early_read`]).
    pub(super) sensing_until_ns: u64,
    /// The time of a `DieReady` event this die skipped by starting its next
    /// read when the previous command started ([`Die::start_read_early`]),
    /// when that read came from background GC: a host operation queued
    /// before that event's turn takes the read back. [`NO_TIME`] when none.
    pub(super) skipped_ready_ns: u64,
    /// `array_free_ns` before that early read.
    pub(super) array_free_before_read_ns: u64,
}

/// Which queue of a die a command comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Queue {
    /// Host operations and foreground GC, in order.
    Host,
    BackgroundGc,
}

/// One operation of `job` finishes at `done_ns` (known when it starts); the
/// job's last schedules its `JobDone` event. Inline, so that background GC's
/// operations (no job) cost a compare, not a call. A function of the two
/// tables it touches, so that code holding a die can call it.
#[inline]
pub(super) fn finish_op(jobs: &mut Slab<Job>, events: &mut EventQueue, job: u32, done_ns: u64) {
    if job != NO_JOB {
        finish_job_op(jobs, events, job, done_ns);
    }
}

pub(super) fn finish_job_op(jobs: &mut Slab<Job>, events: &mut EventQueue, job: u32, done_ns: u64) {
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
pub(super) fn finish_command(jobs: &mut Slab<Job>, events: &mut EventQueue, command: &Command, done_ns: u64) {
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
pub(super) fn ready_at(
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
    pub(super) fn start_read_early(&mut self, ready_ns: u64, read_ns: u64) -> Option<QueuedOp> {
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
    /// Queues the flash operations the FTL just performed at their dies.
    /// Host requests wait for every operation, inline GC included.
    pub(super) fn enqueue_recorded<T: TranslationLayer>(&mut self, ftl: &mut T, job: u32) {
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
    pub(super) fn queued(geometry: &Geometry, op: FlashOp, job: u32) -> (u32, QueuedOp) {
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
    pub(super) fn due_ns(&self, job: u32) -> u64 {
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
    pub(super) fn start_next<T: TranslationLayer>(&mut self, ftl: &mut T, die: u32) -> Result<(), FtlError> {
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

    /// Starts the next command of `die` from `queue`: its first operation
    /// and, with multi-plane operations, the operations of the same kind on
    /// other planes queued right behind it.
    #[inline(always)]
    pub(super) fn start_command(&mut self, die: u32, queue: Queue) {
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
    pub(super) fn take_back_early_read(&mut self, die: u32) {
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
    pub(super) fn read_sensed(&mut self, event: Event, die: u32) {
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
