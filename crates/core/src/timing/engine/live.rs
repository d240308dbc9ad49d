//! The engine driven by requests as they arrive, as a live emulated device
//! needs it: each request arrives at its time ([`Engine::live_arrive`]),
//! the device runs as far as the present and no further
//! ([`Engine::live_advance`]), and completed requests are handed back
//! ([`Engine::live_completed`]). Requests of concurrent clients overlap on
//! the dies as an open-loop replay's do.
//!
//! Fed the same requests at the same arrival times, this processes the same
//! events in the same order as an open-loop [`Engine::run`]: events at or
//! before an arrival run first (the batch loop's tie rule), and a request
//! arriving while the device's clock is past its time arrives "now". The
//! caller must not advance past the present: a request arriving later at an
//! earlier time would be taken as arriving at the advanced clock.

use super::{event_target, Engine, EventKind};
use crate::ftl::{FtlError, TranslationLayer};
use crate::timing::source::TimedRequest;
use crate::timing::stats::{FlashCost, TimedReport};
use crate::units::SimNs;

/// A live request's name inside the engine: its host queue, and its number
/// among the requests that queue took (each queue fetches in arrival order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LiveTicket {
    pub queue: u32,
    pub seq: u64,
}

impl Engine {
    /// Starts a live session on `ftl`: recording on, and dies below the low
    /// watermark begin cleaning at once (the device starts idle). Reports
    /// are read between events, so every die waits for its `DieReady`
    /// event (no early reads, whose die time is counted ahead).
    pub fn live_start<T: TranslationLayer>(&mut self, ftl: &mut T) -> Result<(), FtlError> {
        self.early_reads = false;
        self.live = true;
        ftl.set_recording(true);
        self.wake_idle_dies(ftl)
    }

    /// The device clock: when the last event it processed happened.
    pub fn now(&self) -> SimNs {
        SimNs(self.now_ns)
    }

    /// When the next pending event happens, if any.
    pub fn next_event(&self) -> Option<SimNs> {
        self.events.peek_time().map(SimNs)
    }

    /// Takes one request arriving at `timed.arrival` (taken as now when it
    /// is earlier): the device first runs every event up to that time. The
    /// request joins the next host queue in turn, as an open-loop replay
    /// deals them; its completion shows in [`Self::live_completed`] once
    /// the device has been advanced past it.
    pub fn live_arrive<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        timed: TimedRequest,
    ) -> Result<LiveTicket, FtlError> {
        let arrival = timed.arrival.0.max(self.now_ns);
        self.live_advance(ftl, SimNs(arrival))?;
        self.now_ns = arrival;
        let queue = self.next_queue;
        self.next_queue = (queue + 1) % self.config.queues;
        let host_queue = &self.queues[queue as usize];
        // The queue fetches in order: the requests it fetched, then those waiting before this one.
        let ticket = LiveTicket { queue, seq: host_queue.fetched + host_queue.waiting.len() as u64 };
        self.arrive(ftl, TimedRequest { arrival: SimNs(arrival), ..timed }, queue)?;
        Ok(ticket)
    }

    /// Runs every event at or before `until`.
    pub fn live_advance<T: TranslationLayer>(&mut self, ftl: &mut T, until: SimNs) -> Result<(), FtlError> {
        while self.events.peek_time().is_some_and(|event_ns| event_ns <= until.0) {
            self.live_step(ftl)?;
        }
        Ok(())
    }

    /// The requests completed since the last call, with their completion times.
    pub fn live_completed(&mut self) -> std::vec::Drain<'_, (LiveTicket, SimNs)> {
        self.live_completed.drain(..)
    }

    /// A snapshot of what the session measured so far. A live device has no
    /// `[[job]]`s, so no job's share needs the layer's totals.
    pub fn live_report(&self) -> TimedReport {
        self.stats.clone().report(self.geometry.dies(), FlashCost::default())
    }

    /// Ends the session as a batch run ends: requests still in the device
    /// complete (background GC going on as usual), then no new background
    /// GC starts, the dies finish what they queued, recording stops;
    /// returns what was measured.
    pub fn live_finish<T: TranslationLayer>(mut self, ftl: &mut T) -> Result<TimedReport, FtlError> {
        while self.outstanding > 0 || self.queues.iter().any(|queue| !queue.waiting.is_empty()) {
            if !self.live_step(ftl)? {
                break;
            }
        }
        self.draining = true;
        while self.live_step(ftl)? {}
        ftl.set_recording(false);
        Ok(self.stats.report(self.geometry.dies(), FlashCost::default()))
    }

    /// Processes the next event as the open-loop run does, however far
    /// ahead; false when none is pending.
    pub fn live_step<T: TranslationLayer>(&mut self, ftl: &mut T) -> Result<bool, FtlError> {
        let Some(event) = self.events.pop() else {
            return Ok(false);
        };
        let (kind, index) = event_target(event);
        match kind {
            EventKind::JobDone => {
                self.enter(event);
                if let Some(queue) = self.job_done(ftl, index)? {
                    self.dispatch(ftl, queue)?;
                }
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
        Ok(true)
    }
}
