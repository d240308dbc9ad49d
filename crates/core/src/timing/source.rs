//! Request sources for the timed engine: requests with an arrival time and a
//! priority. The synthetic workload with Poisson arrivals, and a mix of
//! sequential and random requests for the stripe-merging experiment.

use crate::device::Geometry;
use crate::host::{Op, Request};
use crate::units::{Lpn, SimNs, StreamId};
use crate::workload::{Arrivals, Synthetic};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A request as the timed host issues it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedRequest {
    pub request: Request,
    /// When the request arrives (open loop); closed loop ignores it.
    pub arrival: SimNs,
    /// Priority requests make priority-aware cleaning hold back GC.
    pub priority: bool,
    /// When the request must be complete (real-time jobs), if ever.
    pub deadline: Option<SimNs>,
    /// The `[[job]]` that issued it (`None` in a run without jobs).
    pub job: Option<u16>,
}

/// Where the engine takes requests from. Open-loop arrival times must not
/// decrease; an earlier one is taken as "now".
pub trait RequestSource {
    /// The next request, or `None` when the source is exhausted.
    fn next_request(&mut self) -> Option<TimedRequest>;

    /// Closed-loop jobs ([`crate::timing::Engine::with_job_queues`]): the
    /// next request of `job`, asked for when one of that job's requests
    /// completed; `None` when the job has nothing more now. A source without
    /// jobs has none.
    fn next_request_of(&mut self, _job: u16) -> Option<TimedRequest> {
        None
    }
}

/// The configured synthetic workload with arrival times and priorities.
#[derive(Debug)]
pub struct SyntheticSource<'a> {
    workload: &'a mut Synthetic,
    arrivals: Arrivals,
}

impl<'a> SyntheticSource<'a> {
    pub fn new(workload: &'a mut Synthetic, arrivals: Arrivals) -> Self {
        Self { workload, arrivals }
    }
}

impl RequestSource for SyntheticSource<'_> {
    fn next_request(&mut self) -> Option<TimedRequest> {
        let request = self.workload.next_request();
        let (arrival, priority) = self.arrivals.next();
        Some(TimedRequest { request, arrival, priority, deadline: None, job: None })
    }
}

/// Requests of a fixed size that continue where the previous one ended with
/// probability `sequential_probability` and start at a random aligned
/// address otherwise (the synthetic trace of slide 15).
#[derive(Debug, Clone)]
pub struct SequentialMix {
    pages: u32,
    slots: u32,
    sequential_probability: f64,
    write_fraction: f64,
    next_page: u32,
    arrivals: Arrivals,
    rng: Xoshiro256PlusPlus,
}

impl SequentialMix {
    pub fn new(
        geometry: &Geometry,
        pages: u32,
        sequential_probability: f64,
        write_fraction: f64,
        arrivals: Arrivals,
        seed: u64,
    ) -> Self {
        let pages = pages.clamp(1, geometry.logical_pages);
        Self {
            pages,
            slots: geometry.logical_pages / pages,
            sequential_probability,
            write_fraction,
            next_page: 0,
            arrivals,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }
}

impl RequestSource for SequentialMix {
    fn next_request(&mut self) -> Option<TimedRequest> {
        let sequential = self.rng.random::<f64>() < self.sequential_probability;
        if !sequential || self.next_page + self.pages > self.slots * self.pages {
            self.next_page = self.rng.random_range(0..self.slots) * self.pages;
        }
        let start = self.next_page;
        self.next_page += self.pages;
        let op = if self.rng.random::<f64>() < self.write_fraction { Op::Write } else { Op::Read };
        let (arrival, priority) = self.arrivals.next();
        let request = Request { op, start: Lpn(start), pages: self.pages, stream: StreamId(0) };
        Some(TimedRequest { request, arrival, priority, deadline: None, job: None })
    }
}
