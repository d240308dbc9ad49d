//! The engine driven one request at a time, as a live emulated device needs
//! it: each request arrives, the device runs until it completes, and its
//! completion time goes back to the caller before the next one arrives.
//!
//! Fed the same requests at the same arrival times, this processes the same
//! events in the same order as an open-loop [`Engine::run`]: events at or
//! before an arrival run first (the batch loop's tie rule), and a request
//! arriving while the device is still busy with an earlier one arrives
//! "now". The one difference is concurrency: a live request runs to
//! completion before the next is taken, so requests of concurrent
//! applications are seen one after another (queue depth 1 on the host side;
//! the device's own write buffer and background work still overlap them).

use super::{event_target, Engine, EventKind};
use crate::ftl::{FtlError, TranslationLayer};
use crate::timing::source::TimedRequest;
use crate::timing::stats::{FlashCost, TimedReport};
use crate::units::SimNs;

impl Engine {
    /// Starts a live session on `ftl`: recording on, and dies below the low
    /// watermark begin cleaning at once (the device starts idle). Reports
    /// are read between events, so every die waits for its `DieReady`
    /// event (no early reads, whose die time is counted ahead).
    pub fn live_start<T: TranslationLayer>(&mut self, ftl: &mut T) -> Result<(), FtlError> {
        self.early_reads = false;
        ftl.set_recording(true);
        self.wake_idle_dies(ftl)
    }

    /// The device clock: when the last event it processed happened.
    pub fn now(&self) -> SimNs {
        SimNs(self.now_ns)
    }

    /// Takes one request arriving at `timed.arrival` (taken as now when it
    /// is earlier), runs the device until the request completes and returns
    /// when it did.
    pub fn live_submit<T: TranslationLayer>(&mut self, ftl: &mut T, timed: TimedRequest) -> Result<SimNs, FtlError> {
        let arrival = timed.arrival.0.max(self.now_ns);
        while self.events.peek_time().is_some_and(|event_ns| event_ns <= arrival) {
            self.live_step(ftl)?;
        }
        self.now_ns = arrival;
        let target = self.stats.completed() + 1;
        let queue = self.next_queue;
        self.next_queue = (queue + 1) % self.config.queues;
        self.arrive(ftl, TimedRequest { arrival: SimNs(arrival), ..timed }, queue)?;
        while self.stats.completed() < target {
            // A request in flight always has an event pending (its job's end,
            // or the operation its die is performing).
            if !self.live_step(ftl)? {
                break;
            }
        }
        Ok(SimNs(self.now_ns))
    }

    /// A snapshot of what the session measured so far. A live device has no
    /// `[[job]]`s, so no job's share needs the layer's totals.
    pub fn live_report(&self) -> TimedReport {
        self.stats.clone().report(self.geometry.dies(), FlashCost::default())
    }

    /// Ends the session: no new background GC starts, the dies finish what
    /// they queued, recording stops; returns what was measured.
    pub fn live_finish<T: TranslationLayer>(mut self, ftl: &mut T) -> Result<TimedReport, FtlError> {
        self.draining = true;
        while self.live_step(ftl)? {}
        ftl.set_recording(false);
        Ok(self.stats.report(self.geometry.dies(), FlashCost::default()))
    }

    /// Processes the next event as the open-loop run does; false when none is pending.
    fn live_step<T: TranslationLayer>(&mut self, ftl: &mut T) -> Result<bool, FtlError> {
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
