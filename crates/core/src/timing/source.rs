//! Request sources for the timed engine: requests with an arrival time and a
//! priority. The synthetic workload with Poisson arrivals, and a mix of
//! sequential and random requests for the stripe-merging experiment.

use crate::device::Geometry;
use crate::host::{Op, Request};
use crate::units::{Lpn, SimNs, StreamId};
use crate::workload::Synthetic;
use nandlab_convert::{f64_of, saturating};
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Exp};
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

/// Poisson arrivals (exponential gaps) at a mean rate, and priority marks.
/// Priority requests may come in bursts: a burst starts with probability
/// `priority_fraction` at an arrival and its further requests follow at a
/// fixed gap, the way one application's synchronous requests do.
#[derive(Debug, Clone)]
pub struct Arrivals {
    gap: Option<Exp<f64>>,
    priority_fraction: f64,
    burst_len: u32,
    burst_gap_ns: f64,
    burst_left: u32,
    now_ns: f64,
    /// Whether anything is drawn: false in a closed loop without priority
    /// requests, where every request arrives at time 0 without priority.
    draws: bool,
    rng: Xoshiro256PlusPlus,
}

impl Arrivals {
    /// `iops` = None: every request arrives at time 0 (closed loop).
    pub fn new(iops: Option<u64>, priority_fraction: f64, seed: u64) -> Self {
        let gap = iops.and_then(|rate| Exp::new(f64_of(rate) / 1e9).ok());
        let draws = gap.is_some() || priority_fraction > 0.0;
        Self {
            gap,
            priority_fraction,
            burst_len: 1,
            burst_gap_ns: 0.0,
            burst_left: 0,
            now_ns: 0.0,
            draws,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// Priority requests come in bursts of `len`, `gap_ns` apart.
    #[must_use]
    pub fn with_priority_bursts(mut self, len: u32, gap_ns: u64) -> Self {
        self.burst_len = len.max(1);
        let gap = f64_of(gap_ns);
        self.burst_gap_ns = gap;
        self
    }

    /// Arrival time and priority of the next request.
    #[inline]
    pub(crate) fn next(&mut self) -> (SimNs, bool) {
        if !self.draws {
            return (SimNs(0), false);
        }
        self.draw()
    }

    fn draw(&mut self) -> (SimNs, bool) {
        if self.burst_left > 0 {
            self.burst_left -= 1;
            self.now_ns += self.burst_gap_ns;
            return (SimNs(saturating::<u64>(self.now_ns)), true);
        }
        if let Some(gap) = &self.gap {
            self.now_ns += gap.sample(&mut self.rng);
        }
        let priority = self.priority_fraction > 0.0 && self.rng.random::<f64>() < self.priority_fraction;
        if priority {
            self.burst_left = self.burst_len - 1;
        }
        (SimNs(saturating::<u64>(self.now_ns)), priority)
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
