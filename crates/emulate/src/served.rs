//! What the clients waited, as the server sees it: from the moment a request was read off the
//! wire (NBD; for FUSE, the moment its request thread handed it to the device) to the moment its
//! reply was sent (NBD; FUSE: handed back to the kernel), by operation. The timing model's
//! latencies count from a request's arrival in the simulated device to its simulated completion;
//! these add what the host path costs around them: the wait for the session lock, a reply sent
//! late because its thread waited for a CPU, the reply's write. `scripts/bench-emulate.sh`
//! compares them with what fio measured (docs/emulate.md, "Queue depth").

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use hdrhistogram::Histogram;
use nandlab_core::timing::LatencySummary;
use nandlab_nbd::CommandKind;
use serde::Serialize;

/// Latencies are kept to three significant digits up to an hour; longer ones saturate.
const LATENCY_NS_MAX: u64 = 3_600_000_000_000;

/// The served latencies of one session, per operation.
pub(crate) struct Served {
    histograms: Mutex<[Histogram<u64>; 4]>,
}

/// [`Served`]'s summary: each operation's latencies in microseconds (`None`: no such request).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServedLatency {
    pub all: Option<LatencySummary>,
    pub read: Option<LatencySummary>,
    pub write: Option<LatencySummary>,
    pub trim: Option<LatencySummary>,
    pub flush: Option<LatencySummary>,
}

impl Served {
    pub(crate) fn new() -> Served {
        // The bounds are constants known to be valid.
        #[allow(clippy::expect_used)]
        let histogram = || Histogram::new_with_bounds(1, LATENCY_NS_MAX, 3).expect("valid histogram bounds");
        Served { histograms: Mutex::new([histogram(), histogram(), histogram(), histogram()]) }
    }

    /// A request of `kind` was answered `waited` after it was received.
    pub(crate) fn record(&self, kind: CommandKind, waited: Duration) {
        let ns = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        let index = match kind {
            CommandKind::Read => 0,
            CommandKind::Write => 1,
            CommandKind::Discard => 2,
            CommandKind::Flush => 3,
        };
        self.histograms.lock().unwrap_or_else(PoisonError::into_inner)[index].saturating_record(ns.max(1));
    }

    pub(crate) fn summary(&self) -> ServedLatency {
        let histograms = self.histograms.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all = histograms[0].clone();
        for histogram in &histograms[1..] {
            // Same bounds: adding cannot fail.
            let _ = all.add(histogram);
        }
        let [read, write, trim, flush] = histograms.each_ref().map(LatencySummary::from_histogram);
        ServedLatency { all: LatencySummary::from_histogram(&all), read, write, trim, flush }
    }
}
