//! What the counting loop is fed and how it counts: the feeds (a source's
//! events through the host stages, or the synthetic workload's page
//! requests), the look-ahead depth, progress and the stop flag, and where a
//! refused request came from. Shared by the one-thread loop (drive.rs) and
//! the partitioned one (parallel.rs).

use super::{Ahead, Phase, Progress, SimError};
use crate::ftl::{FtlError, TranslationLayer};
use crate::host::stages::HostStages;
use crate::host::{Op, Request};
use crate::units::SimNs;
use crate::workload::{EventSource, SyntheticEvents};
use std::sync::atomic::{AtomicBool, Ordering};

/// How often (in events) the observer hears about progress.
pub(super) const PROGRESS_INTERVAL: u64 = 1 << 16;

/// Requests turned from events ahead of their submission, so the layer's
/// mapping entries for them are in cache when they run. Sources and host
/// stages never depend on the layer's state, so this changes nothing else.
pub(super) const LOOKAHEAD: usize = 16;

/// Where a request the layer refused came from, with a hint when the device
/// is smaller than the workload.
pub(super) fn at_event(stages: &HostStages, error: FtlError) -> SimError {
    let hint = match error {
        FtlError::LpnOutOfRange { .. } => " (is the device smaller than the trace? try --fit)",
        _ => "",
    };
    SimError::AtEvent { event: stages.events(), error, hint }
}

/// The events a counting phase has taken: the observer hears of them every
/// [`PROGRESS_INTERVAL`], and the caller's stop flag is looked at then.
pub(super) struct EventCount<'s> {
    phase: Phase,
    total: u64,
    done: u64,
    stop: Option<&'s AtomicBool>,
}

impl<'s> EventCount<'s> {
    /// `total`: the events the source will yield, when known.
    pub(super) fn new(phase: Phase, total: Option<u64>, stop: Option<&'s AtomicBool>) -> Self {
        Self { phase, total: total.unwrap_or(0), done: 0, stop }
    }

    /// One more event; [`SimError::Stopped`] once the stop flag is seen raised.
    #[inline]
    pub(super) fn count(&mut self, observer: &mut dyn FnMut(Progress)) -> Result<(), SimError> {
        self.done += 1;
        if self.done.is_multiple_of(PROGRESS_INTERVAL) {
            self.finish(observer);
            if self.stop.is_some_and(|flag| flag.load(Ordering::Relaxed)) {
                return Err(SimError::Stopped);
            }
        }
        Ok(())
    }

    /// Tells the observer how far the phase got.
    pub(super) fn finish(&self, observer: &mut dyn FnMut(Progress)) {
        observer(Progress { phase: self.phase, done: self.done, total: self.total });
    }
}

/// Where the counting loop's requests come from.
pub(super) trait Feed<T: TranslationLayer> {
    /// Queues the requests of the next event on `ahead`; false, after
    /// queuing what the stages still hold, once the source is dry.
    fn refill(&mut self, ftl: &mut T, stages: &mut HostStages, ahead: &mut Ahead) -> Result<bool, SimError>;

    /// Events the source will yield, when known (for progress).
    fn len_hint(&self) -> Option<u64>;
}

/// Every event of a source through the host stages; what the DISCARD
/// stage issues at the end belongs to the last event's job.
pub(super) struct EventFeed<'a, S: EventSource + ?Sized> {
    pub(super) source: &'a mut S,
    pub(super) last_job: u16,
}

impl<'a, S: EventSource + ?Sized> EventFeed<'a, S> {
    pub(super) fn new(source: &'a mut S) -> Self {
        Self { source, last_job: 0 }
    }
}

impl<T: TranslationLayer, S: EventSource + ?Sized> Feed<T> for EventFeed<'_, S> {
    #[inline]
    fn refill(&mut self, ftl: &mut T, stages: &mut HostStages, ahead: &mut Ahead) -> Result<bool, SimError> {
        let Some(event) = self.source.next_event()? else {
            stages.finish(&mut ahead.for_job(self.last_job)).map_err(|error| at_event(stages, error))?;
            return Ok(false);
        };
        if ftl.follows_time() {
            ftl.advance(event.time).map_err(|error| at_event(stages, error))?;
        }
        self.last_job = event.job;
        stages.requests(&event, &mut ahead.for_job(event.job)).map_err(|error| at_event(stages, error))?;
        Ok(true)
    }

    fn len_hint(&self) -> Option<u64> {
        self.source.len_hint()
    }
}

/// The synthetic workload's reads and writes as page requests, counted by
/// the stages ([`HostStages::page_request`]); its trims as events through them.
pub(super) struct PageFeed<'a, 'w>(pub(super) &'a mut SyntheticEvents<'w>);

impl PageFeed<'_, '_> {
    #[inline(never)]
    pub(super) fn event_through_stages(
        &self,
        request: Request,
        stages: &mut HostStages,
        ahead: &mut Ahead,
    ) -> Result<(), SimError> {
        let event = self.0.event(request, SimNs(0), false);
        stages.requests(&event, &mut ahead.for_job(0)).map_err(|error| at_event(stages, error))
    }
}

impl<T: TranslationLayer> Feed<T> for PageFeed<'_, '_> {
    #[inline(always)]
    fn refill(&mut self, _: &mut T, stages: &mut HostStages, ahead: &mut Ahead) -> Result<bool, SimError> {
        let Some(request) = self.0.next_page_request() else {
            stages.finish(&mut ahead.for_job(0)).map_err(|error| at_event(stages, error))?;
            return Ok(false);
        };
        if matches!(request.op, Op::Read | Op::Write) {
            if stages.page_request(&request, SimNs(0), false).map_err(|error| at_event(stages, error))?.is_some() {
                ahead.push(request, 0);
            }
        } else {
            self.event_through_stages(request, stages, ahead)?;
        }
        Ok(true)
    }

    fn len_hint(&self) -> Option<u64> {
        self.0.len_hint()
    }
}
