//! What a counting phase looks at after each host request, and where: the
//! one-thread loop asks after every request; the partitioned loop
//! (parallel.rs) stops its partitions only where [`Watch::due`] says, so
//! both show a watch the same counters at the same requests.

use crate::metrics::{Counters, WafSeries};

/// What a counting phase looks at after each host request: the device's
/// counters (and erase counts), only where [`Watch::due`] says, from
/// which it may stop the phase.
pub(super) trait Watch {
    /// Whether [`Watch::observe`] may do anything after the request that
    /// brings the device's host page writes to `host_pages_written`. The
    /// threaded driver stops every partition there to sum their counters.
    fn due(&self, host_pages_written: u64) -> bool;
    /// Shown the counters after a request (of job `job`); true stops the phase.
    fn observe(&mut self, job: u16, counters: &Counters, erase_counts: &[u32]) -> bool;
}

/// A closure looks after every request.
impl<F: FnMut(u16, &Counters, &[u32]) -> bool> Watch for F {
    fn due(&self, _: u64) -> bool {
        true
    }
    fn observe(&mut self, job: u16, counters: &Counters, erase_counts: &[u32]) -> bool {
        self(job, counters, erase_counts)
    }
}

/// Nothing to look at (a fill).
pub(super) struct Unwatched;

impl Watch for Unwatched {
    fn due(&self, _: u64) -> bool {
        false
    }
    fn observe(&mut self, _: u16, _: &Counters, _: &[u32]) -> bool {
        false
    }
}

/// The WAF series looks where a window closes.
impl Watch for &mut WafSeries {
    fn due(&self, host_pages_written: u64) -> bool {
        WafSeries::due(self, host_pages_written)
    }
    fn observe(&mut self, _: u16, counters: &Counters, _: &[u32]) -> bool {
        WafSeries::observe(self, counters);
        false
    }
}
