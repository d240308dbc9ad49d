//! The timing model: a discrete-event simulation of the flash dies, channel
//! buses, host queues and device write buffer behind the page-mapped FTL.
//! It turns the FTL's flash operations into throughput and latency, with
//! garbage collection in the foreground and in idle time, priority-aware
//! cleaning, and stripe-sized mapping units with write merging. See
//! docs/timing.md, docs/priority-cleaning.md and docs/stripe-merging.md.

mod config;
mod engine;
mod latency;
mod queue;
mod source;
mod stats;
mod stripe;

pub use crate::workload::Arrivals;
pub use config::{Arrival, DieQueue, FlushPolicy, Interface, PartialStripeFlush, TimingConfig, SATA_QUEUE_DEPTH_MAX};
pub use engine::{Engine, LiveTicket};
pub use source::{RequestSource, SequentialMix, SyntheticSource, TimedRequest};
pub use stats::{
    DeadlineReport, JobTiming, LatencyReport, LatencySummary, ThroughputPoint, TimedReport, SERIES_POINTS_MAX,
};
pub use stripe::{StripeFill, WriteBuffer};

#[cfg(test)]
mod tests;
