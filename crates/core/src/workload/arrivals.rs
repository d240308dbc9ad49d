//! When requests arrive: the arrival process a source stamps on its requests
//! (open-loop Poisson arrivals, or all at time 0 in a closed loop) and their
//! priority marks. Beside the sources that use it; the timing engine reads the
//! times it gives.

use crate::units::SimNs;
use nandlab_convert::{f64_of, saturating};
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Exp};
use rand_xoshiro::Xoshiro256PlusPlus;

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
