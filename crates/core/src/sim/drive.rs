//! The counting-mode loop every phase shares, and where its requests come
//! from: a source's events through the host stages, or the synthetic
//! workload's page requests straight when the stages would pass them.

use super::{Ahead, Phase, Progress, Queued, SimError};
use crate::ftl::{FtlError, TranslationLayer};
use crate::host::stages::HostStages;
use crate::host::{submit, Op, Request};
use crate::metrics::Counters;
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

/// The counting-mode loop every phase shares: requests from `feed` (events
/// through `stages`) onto `ftl`, a few requests ahead for the caches,
/// `after_each` called with the request's job (its event's; the DISCARD
/// stage's final issue: the last event's) and the counters after every
/// request (true stops the phase).
pub(super) fn drive<T: TranslationLayer, F: Feed<T>>(
    ftl: &mut T,
    stages: &mut HostStages,
    mut feed: F,
    phase: Phase,
    observer: &mut dyn FnMut(Progress),
    mut after_each: impl FnMut(u16, &Counters, &[u32]) -> bool,
    stop: Option<&AtomicBool>,
) -> Result<(), SimError> {
    let total = feed.len_hint().unwrap_or(0);
    let mut ahead = Ahead::with_capacity(4 * LOOKAHEAD);
    // A layer that follows time must see each event's time just before the
    // event's own requests, so it gets no requests ahead.
    let lookahead = if ftl.follows_time() { 0 } else { LOOKAHEAD };
    let mut dry = false;
    let mut events: u64 = 0;
    loop {
        while !dry && ahead.len() <= lookahead {
            let before = ahead.len();
            if feed.refill(ftl, stages, &mut ahead)? {
                events += 1;
                if events.is_multiple_of(PROGRESS_INTERVAL) {
                    observer(Progress { phase, done: events, total });
                    if stop.is_some_and(|flag| flag.load(Ordering::Relaxed)) {
                        return Err(SimError::Stopped);
                    }
                }
            } else {
                dry = true;
            }
            for index in before..ahead.len() {
                if let Some(request) = ahead.get(index) {
                    ftl.prefetch_mapping(request.start);
                }
            }
        }
        let Some(Queued { request, job }) = ahead.pop() else {
            break;
        };
        if let Some(halfway) = ahead.get(LOOKAHEAD / 2) {
            ftl.prefetch_old_page(halfway.start);
        }
        submit(ftl, &request).map_err(|error| at_event(stages, error))?;
        if after_each(job, ftl.counters(), ftl.erase_counts()) {
            break;
        }
    }
    observer(Progress { phase, done: events, total });
    Ok(())
}

/// A counting phase of the synthetic workload: its page requests straight
/// into the loop when the stages would pass them unchanged and the layer
/// ignores time (the same requests, counts and errors, without the detour
/// through host events), else its events through the stages.
pub(super) fn drive_synthetic<T: TranslationLayer>(
    ftl: &mut T,
    stages: &mut HostStages,
    source: &mut SyntheticEvents<'_>,
    phase: Phase,
    observer: &mut dyn FnMut(Progress),
    after_each: impl FnMut(u16, &Counters, &[u32]) -> bool,
    stop: Option<&AtomicBool>,
) -> Result<(), SimError> {
    if stages.passes_pages() && source.untimed() && !ftl.follows_time() {
        drive(ftl, stages, PageFeed(source), phase, observer, after_each, stop)
    } else {
        drive(ftl, stages, EventFeed::new(source), phase, observer, after_each, stop)
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
pub(super) struct PageFeed<'a, 'w>(&'a mut SyntheticEvents<'w>);

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
