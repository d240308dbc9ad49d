//! The host interface: host queues, how requests arrive (closed loop,
//! open loop with its backlog in the source, closed-loop jobs), how a queue
//! fetches them into the device, and what completes them.

use super::{finish_op, Engine, InFlight, JobKind, LiveTicket, NO_JOB};
use crate::ftl::{FtlError, TranslationLayer};
use crate::host::Op;
use crate::timing::config::{Arrival, Interface};
use crate::timing::source::{RequestSource, TimedRequest};
use crate::timing::stats::FlashCost;
use crate::units::{Lpn, SimNs};
use std::collections::VecDeque;

#[derive(Debug)]
pub(super) struct HostQueue {
    pub(super) waiting: VecDeque<TimedRequest>,
    pub(super) outstanding: u32,
    /// Most requests the queue has in the device at once.
    pub(super) depth: u32,
    /// Requests fetched so far.
    pub(super) fetched: u64,
}

impl HostQueue {
    pub(super) fn new(depth: u32) -> Self {
        Self { waiting: VecDeque::new(), outstanding: 0, depth, fetched: 0 }
    }
}

/// Requests fetched ahead of dispatch; the FTL prefetches the L2P entry of
/// each when it is fetched and the P2L entry of the old page halfway.
pub(super) const LOOKAHEAD: usize = 16;

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
pub(super) struct Intake<'s> {
    pub(super) source: &'s mut dyn RequestSource,
    /// Requests to run.
    pub(super) requests: u64,
    /// Requests taken into the host queues.
    pub(super) issued: u64,
    /// Open loop: the next request, read from the source and not taken yet.
    pub(super) next: Option<TimedRequest>,
    /// Open loop: every host queue was blocked when `next` arrived; it and
    /// the requests after it that arrive before the event under way are
    /// waiting in the source.
    pub(super) backlog: bool,
}

impl<'s> Intake<'s> {
    pub(super) fn new(source: &'s mut dyn RequestSource, requests: u64) -> Self {
        Self { source, requests, issued: 0, next: None, backlog: false }
    }
}

impl Engine {
    /// Closed loop: fills each of `queues` to its depth (while the run has
    /// requests left to issue).
    pub(super) fn fill_queues<T: TranslationLayer>(
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

    /// Open loop: whether the next request arrives before the next event;
    /// if so, the clock and the processing order move to its arrival.
    pub(super) fn arrival_comes_first(&mut self, intake: &Intake<'_>) -> bool {
        let arrives_first =
            |timed: &TimedRequest| self.events.peek_time().is_none_or(|event_ns| timed.arrival.0 < event_ns);
        let Some(timed) = intake.next.filter(|timed| !intake.backlog && arrives_first(timed)) else {
            return false;
        };
        self.now_ns = self.now_ns.max(timed.arrival.0);
        self.order_key = self.order_key.max((u128::from(timed.arrival.0) << 64) | u128::from(u64::MAX));
        true
    }

    /// The next request for host queue `queue` in a closed loop: from the
    /// merged stream, or with job queues from that queue's job.
    #[inline]
    pub(super) fn next_request_for<T: TranslationLayer>(
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

    pub(super) fn next_request<T: TranslationLayer>(
        &mut self,
        ftl: &T,
        source: &mut dyn RequestSource,
    ) -> Option<TimedRequest> {
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
    pub(super) fn read_next<T: TranslationLayer>(&mut self, ftl: &T, intake: &mut Intake<'_>) {
        if intake.issued < intake.requests {
            intake.next = self.next_request(ftl, intake.source);
        }
    }

    /// Open loop: takes `intake.next` for the host queue whose turn it is
    /// (round robin); returns it and that queue.
    pub(super) fn take_next(&mut self, intake: &mut Intake<'_>) -> Option<(TimedRequest, u32)> {
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
    pub(super) fn open_arrival<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        intake: &mut Intake<'_>,
    ) -> Result<(), FtlError> {
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
    pub(super) fn defers_arrivals(&self) -> bool {
        !self.queue_every_arrival
    }

    #[cfg(not(test))]
    #[allow(clippy::unused_self)]
    pub(super) fn defers_arrivals(&self) -> bool {
        true
    }

    pub(super) fn arrive<T: TranslationLayer>(
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
    pub(super) fn dispatch_open<T: TranslationLayer>(
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

    pub(super) fn dispatch_backlog<T: TranslationLayer>(
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
    pub(super) fn dispatch<T: TranslationLayer>(&mut self, ftl: &mut T, queue: u32) -> Result<(), FtlError> {
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
    pub(super) fn fetches(&self, queue: u32, head: Op) -> bool {
        let host_queue = &self.queues[queue as usize];
        host_queue.outstanding < host_queue.depth
            && !(self.config.interface == Interface::Sata
                && (self.discard_blocking || (head == Op::Trim && self.outstanding > 0)))
    }

    pub(super) fn start_request<T: TranslationLayer>(
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

    pub(super) fn start_request_ops<T: TranslationLayer>(
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
    pub(super) fn job_done<T: TranslationLayer>(&mut self, ftl: &mut T, job: u32) -> Result<Option<u32>, FtlError> {
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
}
