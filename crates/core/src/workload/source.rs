//! Request sources: where the host events of a run come from — the
//! synthetic workload, a block trace (read by a front end), or any iterator
//! of events. Sources never see the device.

use crate::device::Geometry;
use crate::host::discard::SectorRange;
use crate::host::event::{HostEvent, HostOp};
use crate::host::Request;
use crate::units::SimNs;
use crate::workload::Arrivals;
use crate::workload::Synthetic;

/// Why a source could not produce its next event (a trace line that does
/// not parse, an I/O error); the message names where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SourceError(pub String);

/// A stream of host events.
///
/// Contract: events come in the order the host issued them, with times that
/// do not decrease (a timed run takes an earlier time as "now"); `Ok(None)`
/// ends the stream, and the source is not asked again; an error ends the
/// run and is reported as the source gave it. A source is deterministic: the
/// same construction (seed included) yields the same events.
pub trait EventSource {
    fn next_event(&mut self) -> Result<Option<HostEvent>, SourceError>;

    /// The next event of `job` alone, for a timed run whose `[[job]]`s are
    /// closed loops (each job issues when one of its own requests
    /// completes); `Ok(None)` once that job has issued everything. A source
    /// without jobs has no events of a job.
    fn next_event_of(&mut self, _job: u16) -> Result<Option<HostEvent>, SourceError> {
        Ok(None)
    }

    /// Events the source will yield, when known (for progress).
    fn len_hint(&self) -> Option<u64> {
        None
    }
}

/// A workload that repeats, for workload aging: one pass of it (a trace
/// looped at its own addresses) after another.
///
/// Contract: [`EventSource::next_event`] yields the events of the current
/// pass and `Ok(None)` at its end; [`Passes::restart`] then begins the next
/// pass, the same events at the same addresses, their times shifted to
/// follow the last. A pass is deterministic and the same every time.
pub trait Passes: EventSource {
    fn restart(&mut self) -> Result<(), SourceError>;
}

/// The synthetic workload as host events: `requests` requests of the
/// configured mix (or writes only, for aging), arriving as `arrivals` says.
#[derive(Debug)]
pub struct SyntheticEvents<'a> {
    workload: &'a mut Synthetic,
    arrivals: Option<Arrivals>,
    writes_only: bool,
    sectors_per_page: u64,
    remaining: u64,
    total: u64,
}

impl<'a> SyntheticEvents<'a> {
    /// `arrivals`: `None` issues every request at time 0 (counting mode, closed loop).
    pub fn new(workload: &'a mut Synthetic, geometry: &Geometry, requests: u64, arrivals: Option<Arrivals>) -> Self {
        Self {
            workload,
            arrivals,
            writes_only: false,
            sectors_per_page: u64::from(geometry.sectors_per_page()),
            remaining: requests,
            total: requests,
        }
    }

    /// Writes of the workload's address pattern only.
    #[must_use]
    pub fn writes_only(mut self) -> Self {
        self.writes_only = true;
        self
    }

    /// Whether every request arrives at time 0 without priority (counting
    /// mode), so [`Self::next_page_request`] loses nothing of the event.
    pub fn untimed(&self) -> bool {
        self.arrivals.is_none()
    }

    /// The next request in pages, as the workload made it; the counting
    /// loop's fast path takes it instead of [`EventSource::next_event`]
    /// when the source is [`Self::untimed`] (see
    /// [`crate::host::stages::HostStages::passes_pages`]).
    #[inline]
    pub fn next_page_request(&mut self) -> Option<Request> {
        debug_assert!(self.untimed());
        self.draw()
    }

    /// The next request in pages with its arrival time and priority: what
    /// [`EventSource::next_event`] gives as an event ([`Self::event`]). The
    /// timed engine's fast path takes it when the stages pass pages.
    #[inline]
    pub fn next_timed_page_request(&mut self) -> Option<(Request, SimNs, bool)> {
        let request = self.draw()?;
        let (time, priority) = self.arrivals.as_mut().map_or((SimNs(0), false), Arrivals::next);
        Some((request, time, priority))
    }

    #[inline]
    fn draw(&mut self) -> Option<Request> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        Some(if self.writes_only { self.workload.next_write() } else { self.workload.next_request() })
    }

    /// `request` as the host event [`EventSource::next_event`] would give.
    pub fn event(&self, request: Request, time: SimNs, priority: bool) -> HostEvent {
        page_event(&request, time, priority, self.sectors_per_page)
    }
}

impl EventSource for SyntheticEvents<'_> {
    #[inline]
    fn next_event(&mut self) -> Result<Option<HostEvent>, SourceError> {
        let Some((request, time, priority)) = self.next_timed_page_request() else { return Ok(None) };
        Ok(Some(self.event(request, time, priority)))
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.total)
    }
}

/// Page request `request` as a host event at `time`: its pages' sectors,
/// its stream, and `priority` as its source marked it.
pub(crate) fn page_event(request: &Request, time: SimNs, priority: bool, sectors_per_page: u64) -> HostEvent {
    let start = u64::from(request.start.0) * sectors_per_page;
    let sectors = SectorRange::new(start, u64::from(request.pages) * sectors_per_page);
    HostEvent { priority, stream: request.stream, ..HostEvent::new(time, HostOp::from(request.op), sectors) }
}

/// Any iterator of events (tests, front ends that build events in memory).
#[derive(Debug)]
pub struct IterEvents<I>(pub I);

impl<I: Iterator<Item = HostEvent>> EventSource for IterEvents<I> {
    fn next_event(&mut self) -> Result<Option<HostEvent>, SourceError> {
        Ok(self.0.next())
    }
}
