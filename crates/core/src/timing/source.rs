//! Request sources for the timed engine: requests with an arrival time and a
//! priority. The synthetic workload with Poisson arrivals, and a mix of
//! sequential and random requests for the stripe-merging experiment.

use crate::device::Geometry;
use crate::host::{Op, Request};
use crate::units::{Lpn, SimNs, StreamId};
use crate::workload::Synthetic;
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
}

/// Where the engine takes requests from. Open-loop arrival times must not
/// decrease; an earlier one is taken as "now".
pub trait RequestSource {
    /// The next request, or `None` when the source is exhausted.
    fn next_request(&mut self) -> Option<TimedRequest>;
}

/// Poisson arrivals (exponential gaps) at a mean rate, and priority marks.
#[derive(Debug, Clone)]
pub struct Arrivals {
    gap: Option<Exp<f64>>,
    priority_fraction: f64,
    now_ns: f64,
    rng: Xoshiro256PlusPlus,
}

impl Arrivals {
    /// `iops` = None: every request arrives at time 0 (closed loop).
    pub fn new(iops: Option<u64>, priority_fraction: f64, seed: u64) -> Self {
        #[allow(clippy::cast_precision_loss)]
        let gap = iops.and_then(|rate| Exp::new(rate as f64 / 1e9).ok());
        Self { gap, priority_fraction, now_ns: 0.0, rng: Xoshiro256PlusPlus::seed_from_u64(seed) }
    }

    /// Arrival time and priority of the next request.
    fn next(&mut self) -> (SimNs, bool) {
        if let Some(gap) = &self.gap {
            self.now_ns += gap.sample(&mut self.rng);
        }
        let priority = self.priority_fraction > 0.0 && self.rng.random::<f64>() < self.priority_fraction;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        (SimNs(self.now_ns as u64), priority)
    }
}

/// The configured synthetic workload with arrival times and priorities.
#[derive(Debug, Clone)]
pub struct SyntheticSource {
    workload: Synthetic,
    arrivals: Arrivals,
}

impl SyntheticSource {
    pub fn new(workload: Synthetic, arrivals: Arrivals) -> Self {
        Self { workload, arrivals }
    }
}

impl RequestSource for SyntheticSource {
    fn next_request(&mut self) -> Option<TimedRequest> {
        let request = self.workload.next_request();
        let (arrival, priority) = self.arrivals.next();
        Some(TimedRequest { request, arrival, priority })
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
        Some(TimedRequest { request, arrival, priority })
    }
}
