//! The `[timing]` configuration section: flash latencies, bus rate, host
//! interface, write buffer, cleaning watermarks and the stripe mapping unit.
//! Every value is an integer in nanoseconds, bytes, pages or blocks.

use crate::device::Geometry;
use crate::error::ConfigError;
use crate::ftl::FtlConfig;
use serde::{Deserialize, Serialize};

/// Host interface model (`timing.interface`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Interface {
    /// NVMe-like: `queues` submission queues of `queue_depth` entries; every
    /// command, DISCARD included, is queued.
    #[default]
    Nvme,
    /// SATA-like (NCQ): one queue of at most 32 entries; DISCARD is not a
    /// queued command, so it waits for the queue to drain and blocks every
    /// command behind it until it completes (Delay-D Section 4.3).
    Sata,
}

/// How requests arrive (`timing.arrival`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arrival {
    /// Closed loop: every queue keeps `queue_depth` requests outstanding.
    #[default]
    Closed,
    /// Open loop: requests arrive at their own timestamps (Poisson arrivals
    /// at `arrival_iops` for the synthetic workload, or a trace's times).
    Open,
}

/// When the device write buffer hands buffered pages to the flash
/// (`timing.flush`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlushPolicy {
    /// Every admitted page is dispatched to the flash at once; the buffer
    /// only decouples the host's acknowledgement from the program.
    #[default]
    Eager,
    /// Stripe-aligned write merging (Rajimwale et al., slide 14): pages are
    /// held per stripe and a stripe is written when a request completes it,
    /// or, oldest first, when the buffer needs room (then with a
    /// read-modify-write of the pages it lacks).
    StripeMerge,
}

/// When stripe merging writes a stripe that requests have covered only in
/// part (`timing.partial_stripe_flush`). Either way a host flush writes every
/// partial stripe, and buffer pressure the oldest ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartialStripeFlush {
    /// Also once the device has been idle (no request in it) for
    /// `timing.merge_idle_ns`: a light load's partial stripes are written in
    /// idle time, as an eager device writes them, while a busy device keeps
    /// merging (docs/stripe-merging.md, "What the slides say").
    #[default]
    Idle,
    /// Only under buffer pressure or a host flush: a partial stripe waits for
    /// the write that completes it however long that takes.
    BufferFull,
}

/// The order in which a die serves its queued host operations
/// (`timing.die_queue`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DieQueue {
    /// In the order the translation layer issued them.
    #[default]
    Fifo,
    /// Earliest deadline first, without preemption (Telomere Section 6.3:
    /// "the FTL ... orders them according to EDF and starts handling the
    /// request if the flash chip is not busy"). An operation takes its
    /// request's deadline, garbage collection the request ran inline
    /// included (WAO-GC's partial step is part of the write job it follows,
    /// eq. (25)); operations of no request (requests without a deadline,
    /// background GC, Telomere's erases of expired blocks — the GC tasks of
    /// eq. (19), whose deadlines are far longer than the writes') come after
    /// every operation with a deadline, in order. An erase, once started,
    /// still holds its chip for t_e: the blocking term of eq. (20).
    Edf,
}

/// The `[timing]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingConfig {
    /// Page read (array sense) time.
    #[serde(default = "default_read_ns")]
    pub read_ns: u64,
    /// Page program time.
    #[serde(default = "default_program_ns")]
    pub program_ns: u64,
    /// Block erase time.
    #[serde(default = "default_erase_ns")]
    pub erase_ns: u64,
    /// Controller time of one DISCARD command ...
    #[serde(default)]
    pub discard_command_ns: u64,
    /// ... plus this much per mapping entry (page) it touches.
    #[serde(default)]
    pub discard_entry_ns: u64,
    /// Data rate of one channel bus, bytes per second.
    #[serde(default = "default_channel_bytes_per_s")]
    pub channel_bytes_per_s: u64,
    #[serde(default)]
    pub interface: Interface,
    /// Submission queues (NVMe only; SATA has one).
    #[serde(default = "one")]
    pub queues: u32,
    /// Outstanding requests per queue (closed loop: kept outstanding).
    #[serde(default = "default_queue_depth")]
    pub queue_depth: u32,
    #[serde(default)]
    pub arrival: Arrival,
    /// Mean arrival rate of the synthetic open-loop workload (requests/s).
    #[serde(default = "default_arrival_iops")]
    pub arrival_iops: u64,
    /// Fraction of synthetic requests marked as priority requests.
    #[serde(default)]
    pub priority_fraction: f64,
    /// Device write buffer in pages; 0 writes through (a write completes when
    /// its pages are programmed).
    #[serde(default)]
    pub write_buffer_pages: u32,
    #[serde(default)]
    pub flush: FlushPolicy,
    #[serde(default)]
    pub partial_stripe_flush: PartialStripeFlush,
    /// Stripe merging: once no request has been in the device for this long,
    /// its partial stripes are written (`partial_stripe_flush = "idle"`).
    #[serde(default = "default_merge_idle_ns")]
    pub merge_idle_ns: u64,
    /// Low watermark: background GC runs in a die's idle time while one of its
    /// units has fewer free blocks than this. The critical watermark, below
    /// which GC runs in the foreground and blocks the write that needs it, is
    /// `ftl.gc_threshold_blocks`. Default: critical + 2.
    #[serde(default)]
    pub gc_low_blocks: Option<u32>,
    /// Priority-aware cleaning (Rajimwale et al., slide 18): while priority
    /// requests are outstanding, GC runs only below the critical watermark.
    #[serde(default)]
    pub priority_aware_gc: bool,
    /// Multi-plane operations: operations of one kind queued back to back on
    /// different planes of a die run as one command (one array time; each
    /// page still crosses the bus). Off: the planes of a die take turns.
    #[serde(default)]
    pub multi_plane: bool,
    #[serde(default)]
    pub die_queue: DieQueue,
    /// Mapping unit in pages (a stripe); writes that cover a stripe only in
    /// part cost a read-modify-write of the rest. 1 = page mapping.
    #[serde(default = "one")]
    pub stripe_pages: u32,
    /// Simulated time per point of the throughput series.
    #[serde(default = "default_series_interval_ns")]
    pub series_interval_ns: u64,
}

fn default_read_ns() -> u64 {
    40_000
}
fn default_program_ns() -> u64 {
    200_000
}
fn default_erase_ns() -> u64 {
    2_000_000
}
/// FEMU's channel page-transfer time of 20 us per 4 KiB page (femu/nand.h).
fn default_channel_bytes_per_s() -> u64 {
    204_800_000
}
/// Longer than a host takes to turn an acknowledgement into its next request
/// (a sequential stream at queue depth 1), far below an idle host's gaps
/// (docs/stripe-merging.md).
fn default_merge_idle_ns() -> u64 {
    1_000_000
}
fn one() -> u32 {
    1
}
fn default_queue_depth() -> u32 {
    32
}
fn default_arrival_iops() -> u64 {
    10_000
}
fn default_series_interval_ns() -> u64 {
    10_000_000
}

/// NCQ allows 32 outstanding commands.
pub const SATA_QUEUE_DEPTH_MAX: u32 = 32;

/// Upper bounds of the `[timing]` keys (docs/configuration.md, "Limits").
/// Latencies: ten seconds, far above any flash operation, and small enough
/// that simulated time cannot overflow.
pub const LATENCY_NS_MAX: u64 = 10_000_000_000;
/// Channel bus rate: from 1 MB/s to 1 TB/s.
pub const CHANNEL_BYTES_PER_S_MIN: u64 = 1_000_000;
pub const CHANNEL_BYTES_PER_S_MAX: u64 = 1_000_000_000_000;
/// NVMe allows 65,535 I/O queues of 65,536 entries ...
pub const QUEUES_MAX: u32 = 65_535;
pub const QUEUE_DEPTH_MAX: u32 = 65_536;
/// ... and nandlab keeps at most this many requests in flight in all of them.
pub const OUTSTANDING_MAX: u64 = 1 << 20;
pub const ARRIVAL_IOPS_MAX: u64 = 1_000_000_000;
/// Throughput series interval: one microsecond to one hour.
pub const SERIES_INTERVAL_NS_MIN: u64 = 1_000;
pub const SERIES_INTERVAL_NS_MAX: u64 = 3_600_000_000_000;
/// A stripe costs a read-modify-write of up to this many pages per write.
pub const STRIPE_PAGES_MAX: u32 = 4096;

impl Default for TimingConfig {
    fn default() -> Self {
        Self {
            read_ns: default_read_ns(),
            program_ns: default_program_ns(),
            erase_ns: default_erase_ns(),
            discard_command_ns: 0,
            discard_entry_ns: 0,
            channel_bytes_per_s: default_channel_bytes_per_s(),
            interface: Interface::default(),
            queues: 1,
            queue_depth: default_queue_depth(),
            arrival: Arrival::default(),
            arrival_iops: default_arrival_iops(),
            priority_fraction: 0.0,
            write_buffer_pages: 0,
            flush: FlushPolicy::default(),
            partial_stripe_flush: PartialStripeFlush::default(),
            merge_idle_ns: default_merge_idle_ns(),
            gc_low_blocks: None,
            priority_aware_gc: false,
            multi_plane: false,
            die_queue: DieQueue::Fifo,
            stripe_pages: 1,
            series_interval_ns: default_series_interval_ns(),
        }
    }
}

impl TimingConfig {
    /// Checks every rule; errors name the key.
    pub fn validate(&self, geometry: &Geometry, ftl: &FtlConfig) -> Result<(), ConfigError> {
        for (key, value) in [
            ("timing.read_ns", self.read_ns),
            ("timing.program_ns", self.program_ns),
            ("timing.erase_ns", self.erase_ns),
            ("timing.channel_bytes_per_s", self.channel_bytes_per_s),
            ("timing.series_interval_ns", self.series_interval_ns),
            ("timing.arrival_iops", self.arrival_iops),
            ("timing.merge_idle_ns", self.merge_idle_ns),
        ] {
            if value == 0 {
                return Err(ConfigError::new(key, "must be at least 1"));
            }
        }
        self.validate_bounds(geometry)?;
        if self.queues == 0 || self.queue_depth == 0 {
            let key = if self.queues == 0 { "timing.queues" } else { "timing.queue_depth" };
            return Err(ConfigError::new(key, "must be at least 1"));
        }
        if self.interface == Interface::Sata {
            if self.queues != 1 {
                return Err(ConfigError::new("timing.queues", "a SATA interface has exactly one queue"));
            }
            if self.queue_depth > SATA_QUEUE_DEPTH_MAX {
                return Err(ConfigError::new(
                    "timing.queue_depth",
                    format!("{} exceeds SATA NCQ's {SATA_QUEUE_DEPTH_MAX} outstanding commands", self.queue_depth),
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.priority_fraction) {
            return Err(ConfigError::new(
                "timing.priority_fraction",
                format!("{} is not a fraction in [0, 1]", self.priority_fraction),
            ));
        }
        let low = u64::from(self.gc_low_blocks(ftl));
        if low < u64::from(ftl.gc_threshold_blocks) {
            return Err(ConfigError::new(
                "timing.gc_low_blocks",
                format!("{low} is below the critical watermark ftl.gc_threshold_blocks = {}", ftl.gc_threshold_blocks),
            ));
        }
        // Streams that are never written hold no open block.
        if low + 2 >= u64::from(geometry.blocks_per_plane) {
            return Err(ConfigError::new(
                "timing.gc_low_blocks",
                format!(
                    "{low} free blocks + one host stream + the GC stream leave no room in a plane of {} blocks",
                    geometry.blocks_per_plane
                ),
            ));
        }
        if self.stripe_pages == 0 || self.stripe_pages > geometry.logical_pages.min(STRIPE_PAGES_MAX) {
            return Err(ConfigError::new(
                "timing.stripe_pages",
                format!(
                    "{} is not between 1 and {} (the logical capacity, at most {STRIPE_PAGES_MAX})",
                    self.stripe_pages,
                    geometry.logical_pages.min(STRIPE_PAGES_MAX)
                ),
            ));
        }
        if self.flush == FlushPolicy::StripeMerge && self.write_buffer_pages < self.stripe_pages {
            return Err(ConfigError::new(
                "timing.write_buffer_pages",
                format!(
                    "stripe merging needs a buffer of at least one stripe ({} pages), it has {}",
                    self.stripe_pages, self.write_buffer_pages
                ),
            ));
        }
        Ok(())
    }

    /// The upper (and non-zero lower) bounds of each key.
    fn validate_bounds(&self, geometry: &Geometry) -> Result<(), ConfigError> {
        let latencies = [
            ("timing.read_ns", Some(self.read_ns)),
            ("timing.program_ns", Some(self.program_ns)),
            ("timing.erase_ns", Some(self.erase_ns)),
            ("timing.discard_command_ns", Some(self.discard_command_ns)),
            ("timing.discard_entry_ns", Some(self.discard_entry_ns)),
            ("timing.merge_idle_ns", Some(self.merge_idle_ns)),
        ];
        for (key, value) in latencies {
            if let Some(value) = value.filter(|&value| value > LATENCY_NS_MAX) {
                return Err(ConfigError::new(
                    key,
                    format!("{value} ns exceeds the limit of {LATENCY_NS_MAX} ns (10 s)"),
                ));
            }
        }
        let ranges = [
            ("timing.channel_bytes_per_s", self.channel_bytes_per_s, CHANNEL_BYTES_PER_S_MIN, CHANNEL_BYTES_PER_S_MAX),
            ("timing.series_interval_ns", self.series_interval_ns, SERIES_INTERVAL_NS_MIN, SERIES_INTERVAL_NS_MAX),
            ("timing.arrival_iops", self.arrival_iops, 1, ARRIVAL_IOPS_MAX),
            ("timing.queues", u64::from(self.queues), 1, u64::from(QUEUES_MAX)),
            ("timing.queue_depth", u64::from(self.queue_depth), 1, u64::from(QUEUE_DEPTH_MAX)),
            ("timing.write_buffer_pages", u64::from(self.write_buffer_pages), 0, u64::from(geometry.logical_pages)),
        ];
        for (key, value, min, max) in ranges {
            if !(min..=max).contains(&value) {
                return Err(ConfigError::new(key, format!("{value} is not between {min} and {max}")));
            }
        }
        let outstanding = u64::from(self.queues) * u64::from(self.queue_depth);
        if outstanding > OUTSTANDING_MAX {
            return Err(ConfigError::new(
                "timing.queue_depth",
                format!("timing.queues × timing.queue_depth = {outstanding} requests in flight exceed the limit of {OUTSTANDING_MAX}"),
            ));
        }
        Ok(())
    }

    /// The low cleaning watermark in free blocks per unit. The default
    /// `critical + 2` saturates rather than wraps; validation refuses it then.
    pub fn gc_low_blocks(&self, ftl: &FtlConfig) -> u32 {
        self.gc_low_blocks.unwrap_or(ftl.gc_threshold_blocks.saturating_add(2))
    }

    /// How long the device waits idle before writing its partial stripes,
    /// if it does (stripe merging with `partial_stripe_flush = "idle"`).
    pub fn merge_idle_flush_ns(&self) -> Option<u64> {
        (self.flush == FlushPolicy::StripeMerge && self.partial_stripe_flush == PartialStripeFlush::Idle)
            .then_some(self.merge_idle_ns)
    }

    /// Bus time of one page on a channel, rounded up.
    pub fn page_transfer_ns(&self, page_size: u32) -> u64 {
        (u64::from(page_size) * 1_000_000_000).div_ceil(self.channel_bytes_per_s)
    }
}
