//! The timing engine's request source over events: each event passes the
//! host stages, and its requests arrive at the event's time.

use super::{at_event, SimError};
use crate::ftl::FtlError;
use crate::host::event::HostEvent;
use crate::host::stages::HostStages;
use crate::host::{Op, Request};
use crate::timing::{RequestSource, TimedReport, TimedRequest};
use crate::units::SimNs;
use crate::workload::{EventSource, SyntheticEvents};
use std::collections::VecDeque;

/// Appends items one by one: `VecDeque::extend` of the stages' one-request
/// iterators costs several times a `push_back` per request.
pub(super) struct PushBack<'q, T>(&'q mut VecDeque<T>);

impl<T> Extend<T> for PushBack<'_, T> {
    #[inline]
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for item in items {
            self.0.push_back(item);
        }
    }
}

/// The timed engine's request source over events: each event passes the
/// host stages, and the requests it causes arrive at the event's time,
/// counted from the first event (so absolute timestamps start at once); the
/// DISCARD stage's final issue arrives with the last event.
pub(super) struct StagedSource<'a, S: EventSource + ?Sized> {
    pub(super) source: &'a mut S,
    pub(super) stages: &'a mut HostStages,
    pub(super) pending: VecDeque<(Request, bool)>,
    /// The job of each pending request, when the run has jobs.
    pub(super) pending_jobs: Option<VecDeque<u16>>,
    /// Closed-loop jobs: which jobs have issued every request.
    pub(super) dry_jobs: Vec<bool>,
    pub(super) arrival: SimNs,
    pub(super) deadline: Option<SimNs>,
    pub(super) first_ns: Option<u64>,
    pub(super) error: Option<SimError>,
    pub(super) done: bool,
}

impl<'a, S: EventSource + ?Sized> StagedSource<'a, S> {
    pub(super) fn new(source: &'a mut S, stages: &'a mut HostStages) -> Self {
        Self {
            source,
            stages,
            pending: VecDeque::new(),
            pending_jobs: None,
            dry_jobs: Vec::new(),
            arrival: SimNs(0),
            deadline: None,
            first_ns: None,
            error: None,
            done: false,
        }
    }

    /// Each event's requests arrive at the event's own time, not counted
    /// from the first event's (ready-made timed requests, whose arrival
    /// process starts at time 0).
    pub(super) fn keeping_arrivals(mut self) -> Self {
        self.first_ns = Some(0);
        self
    }

    /// Carries each event's job (of `jobs`) onto its requests.
    pub(super) fn with_jobs(mut self, jobs: usize) -> Self {
        self.pending_jobs = Some(VecDeque::new());
        self.dry_jobs = vec![false; jobs];
        self
    }

    /// An event at `time` arrived: its requests arrive at `time` counted from the first event.
    #[inline]
    pub(super) fn arrive_at(&mut self, time: SimNs) -> u64 {
        let first = *self.first_ns.get_or_insert(time.0);
        self.arrival = SimNs(time.0.saturating_sub(first));
        first
    }

    /// Passes `event` through the stages into the pending requests.
    #[inline]
    pub(super) fn stage(&mut self, event: &HostEvent) -> Result<(), SimError> {
        let first = self.arrive_at(event.time);
        self.deadline = event.deadline.map(|deadline| SimNs(deadline.0.saturating_sub(first)));
        let before = self.pending.len();
        let outcome =
            self.stages.requests(event, &mut PushBack(&mut self.pending)).map_err(|error| at_event(self.stages, error));
        if let Some(jobs) = &mut self.pending_jobs {
            jobs.extend(std::iter::repeat_n(event.job, self.pending.len() - before));
        }
        outcome
    }

    /// Passes job `job`'s next event through the stages; false once the job
    /// has issued everything (or the source or the stages failed).
    pub(super) fn refill_of(&mut self, job: u16) -> bool {
        if self.error.is_some() {
            return false;
        }
        let outcome = match self.source.next_event_of(job) {
            Ok(Some(event)) => self.stage(&event),
            Ok(None) => return false,
            Err(error) => Err(SimError::Source(error)),
        };
        outcome.map_err(|error| self.error = Some(error)).is_ok()
    }

    /// Turns the next event (or the end of the source) into pending
    /// requests; `None` when nothing more will come.
    #[inline]
    pub(super) fn refill(&mut self) -> Option<()> {
        if self.done || self.error.is_some() {
            return None;
        }
        let outcome = match self.source.next_event() {
            Ok(Some(event)) => self.stage(&event),
            Ok(None) => {
                self.done = true;
                self.deadline = None;
                self.stages.finish(&mut self.pending).map_err(|error| at_event(self.stages, error))
            }
            Err(error) => Err(SimError::Source(error)),
        };
        outcome.map_err(|error| self.error = Some(error)).ok()
    }

    /// The engine's result, unless the source or the stages failed first.
    pub(super) fn result(self, engine: Result<TimedReport, FtlError>) -> Result<TimedReport, SimError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        engine.map_err(|error| at_event(self.stages, error))
    }
}

impl<S: EventSource + ?Sized> RequestSource for StagedSource<'_, S> {
    #[inline]
    fn next_request(&mut self) -> Option<TimedRequest> {
        while self.pending.is_empty() {
            self.refill()?;
        }
        let (request, priority) = self.pending.pop_front()?;
        let job = self.pending_jobs.as_mut().and_then(VecDeque::pop_front);
        Some(TimedRequest { request, arrival: self.arrival, priority, deadline: self.deadline, job })
    }

    /// Job `job`'s next request: one its events already put through the
    /// stages, else one from its next event. Once every job has issued
    /// everything, what the stages still hold (a DISCARD stage's last issue,
    /// credited to no job) goes to whichever job asks.
    fn next_request_of(&mut self, job: u16) -> Option<TimedRequest> {
        loop {
            let jobs = self.pending_jobs.as_mut()?;
            if let Some(at) = jobs.iter().position(|&pending| pending == job) {
                jobs.remove(at);
                let (request, priority) = self.pending.remove(at)?;
                return Some(TimedRequest { request, arrival: self.arrival, priority, deadline: None, job: Some(job) });
            }
            if !self.refill_of(job) {
                break;
            }
        }
        *self.dry_jobs.get_mut(usize::from(job))? = true;
        if self.dry_jobs.iter().all(|&dry| dry) {
            while !self.done && self.pending.is_empty() {
                self.refill()?;
            }
            let (request, priority) = self.pending.pop_front()?;
            return Some(TimedRequest { request, arrival: self.arrival, priority, deadline: None, job: None });
        }
        None
    }
}

impl StagedSource<'_, SyntheticEvents<'_>> {
    /// [`RequestSource::next_request`] when the stages pass pages
    /// ([`HostStages::passes_pages`]): the workload's reads and writes go
    /// straight to the engine, counted by the stages
    /// ([`HostStages::page_request`]), without the detour through host
    /// events; its trims, and what the stages hold at the end, go the
    /// events' way.
    #[inline]
    pub(super) fn next_page_request(&mut self) -> Option<TimedRequest> {
        while self.pending.is_empty() && self.error.is_none() {
            let Some((request, time, priority)) = self.source.next_timed_page_request() else { break };
            if !matches!(request.op, Op::Read | Op::Write) {
                let event = self.source.event(request, time, priority);
                if let Err(error) = self.stage(&event) {
                    self.error = Some(error);
                }
                continue;
            }
            self.arrive_at(time);
            match self.stages.page_request(&request, time, priority) {
                Ok(Some(priority)) => {
                    return Some(TimedRequest { request, arrival: self.arrival, priority, deadline: None, job: None });
                }
                Ok(None) => {}
                Err(error) => self.error = Some(at_event(self.stages, error)),
            }
        }
        if self.error.is_some() {
            return None;
        }
        self.next_request()
    }
}

/// The synthetic workload's timed requests by
/// [`StagedSource::next_page_request`]: the engine's source when the stages
/// pass pages.
pub(super) struct PageRequests<'s, 'a, 'w>(pub(super) &'s mut StagedSource<'a, SyntheticEvents<'w>>);

impl RequestSource for PageRequests<'_, '_, '_> {
    #[inline]
    fn next_request(&mut self) -> Option<TimedRequest> {
        self.0.next_page_request()
    }
}
