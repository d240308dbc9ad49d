//! The synthetic workload generator: sequential or random addresses, a
//! read/write/trim mix, fixed request size, and uniform, Zipf(θ) or hot/cold
//! address distributions. Fully determined by its configuration and seed.

use crate::device::Geometry;
use crate::error::ConfigError;
use crate::host::{Op, Request};
use crate::units::{Lpn, StreamId};
use nandlab_convert::saturating;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    #[default]
    Random,
    Sequential,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AddressDistribution {
    #[default]
    Uniform,
    /// Zipf with exponent `zipf_theta` over request-sized slots, popular slots
    /// scattered over the address space.
    Zipf,
    /// `hot_write_fraction` of requests go to `hot_space_fraction` of the space.
    HotCold,
}

/// The `[workload]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadConfig {
    #[serde(default)]
    pub pattern: Pattern,
    /// Fraction of requests that read; `trim_fraction` trim, the rest write.
    #[serde(default)]
    pub read_fraction: f64,
    #[serde(default)]
    pub trim_fraction: f64,
    /// Pages per request; random requests are aligned to this size.
    #[serde(default = "one_page")]
    pub request_pages: u32,
    #[serde(default)]
    pub distribution: AddressDistribution,
    #[serde(default = "default_theta")]
    pub zipf_theta: f64,
    #[serde(default = "default_hot_write")]
    pub hot_write_fraction: f64,
    #[serde(default = "default_hot_space")]
    pub hot_space_fraction: f64,
    /// Tag hot writes with stream 1 and cold ones with stream 0 (hot/cold only).
    #[serde(default)]
    pub hot_cold_streams: bool,
    /// Stream of every write otherwise.
    #[serde(default)]
    pub stream: u8,
    /// Run length: exactly one of `requests`, `bytes`, `device_writes`
    /// (multiples of the logical capacity, counted over all requests).
    #[serde(default)]
    pub requests: Option<u64>,
    #[serde(default)]
    pub bytes: Option<u64>,
    #[serde(default)]
    pub device_writes: Option<f64>,
}

fn one_page() -> u32 {
    1
}
fn default_theta() -> f64 {
    0.99
}
fn default_hot_write() -> f64 {
    0.8
}
fn default_hot_space() -> f64 {
    0.2
}

const DEFAULT_DEVICE_WRITES: f64 = 2.0;
/// Most whole-device writes a run (or its preconditioning) may ask for.
pub const DEVICE_WRITES_MAX: f64 = 100_000.0;
/// Most windows preconditioning may wait for to call the WAF steady.
pub const STEADY_WINDOWS_MAX: u32 = 1_000_000;

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self {
            pattern: Pattern::default(),
            read_fraction: 0.0,
            trim_fraction: 0.0,
            request_pages: 1,
            distribution: AddressDistribution::default(),
            zipf_theta: default_theta(),
            hot_write_fraction: default_hot_write(),
            hot_space_fraction: default_hot_space(),
            hot_cold_streams: false,
            stream: 0,
            requests: None,
            bytes: None,
            device_writes: None,
        }
    }
}

impl WorkloadConfig {
    /// The streams the workload's writes carry.
    pub fn streams_written(&self) -> &[u8] {
        if self.hot_cold_streams {
            &[0, 1]
        } else {
            std::slice::from_ref(&self.stream)
        }
    }

    pub fn validate(&self, geometry: &Geometry, streams: u32) -> Result<(), ConfigError> {
        for (key, value) in
            [("workload.read_fraction", self.read_fraction), ("workload.trim_fraction", self.trim_fraction)]
        {
            if !(0.0..=1.0).contains(&value) {
                return Err(ConfigError::new(key, format!("{value} is not a fraction in [0, 1]")));
            }
        }
        if self.read_fraction + self.trim_fraction > 1.0 {
            return Err(ConfigError::new("workload.trim_fraction", "read_fraction + trim_fraction exceed 1"));
        }
        if self.request_pages == 0 || self.request_pages > geometry.logical_pages {
            return Err(ConfigError::new(
                "workload.request_pages",
                format!("must be between 1 and the logical capacity ({} pages)", geometry.logical_pages),
            ));
        }
        if self.distribution == AddressDistribution::HotCold && geometry.logical_pages / self.request_pages < 2 {
            return Err(ConfigError::new("workload.distribution", "hot-cold needs at least two request-sized slots"));
        }
        if !(self.zipf_theta.is_finite() && self.zipf_theta > 0.0) {
            return Err(ConfigError::new("workload.zipf_theta", "must be a positive number"));
        }
        for (key, value) in [
            ("workload.hot_write_fraction", self.hot_write_fraction),
            ("workload.hot_space_fraction", self.hot_space_fraction),
        ] {
            if !(value > 0.0 && value < 1.0) {
                return Err(ConfigError::new(key, format!("{value} must lie strictly between 0 and 1")));
            }
        }
        let highest_stream = if self.hot_cold_streams { 1 } else { u32::from(self.stream) };
        if highest_stream >= streams {
            return Err(ConfigError::new(
                "workload.stream",
                format!("stream {highest_stream} needs ftl.streams > {highest_stream} (it is {streams})"),
            ));
        }
        let lengths = [self.requests.is_some(), self.bytes.is_some(), self.device_writes.is_some()];
        if lengths.iter().filter(|&&set| set).count() > 1 {
            return Err(ConfigError::new("workload", "set only one of `requests`, `bytes`, `device_writes`"));
        }
        for (key, length) in [("workload.requests", self.requests), ("workload.bytes", self.bytes)] {
            if length == Some(0) {
                return Err(ConfigError::new(key, "must be at least 1: a run of nothing measures nothing"));
            }
        }
        if let Some(writes) = self.device_writes {
            if !(writes.is_finite() && writes > 0.0 && writes <= DEVICE_WRITES_MAX) {
                return Err(ConfigError::new(
                    "workload.device_writes",
                    format!("must be a positive number of at most {DEVICE_WRITES_MAX}"),
                ));
            }
        }
        Ok(())
    }

    /// Number of requests the run issues.
    pub fn total_requests(&self, geometry: &Geometry) -> u64 {
        let request_bytes = u64::from(self.request_pages) * u64::from(geometry.page_size);
        if let Some(requests) = self.requests {
            return requests;
        }
        if let Some(bytes) = self.bytes {
            return bytes.div_ceil(request_bytes);
        }
        let device_writes = self.device_writes.unwrap_or(DEFAULT_DEVICE_WRITES);
        saturating::<u64>((device_writes * f64::from(geometry.logical_pages) / f64::from(self.request_pages)).ceil())
    }
}

/// Which aging runs before the measured phase (`precondition.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgingChoice {
    /// The workload itself from the state a discarding `mkfs` leaves (no
    /// page valid), repeated until the WAF settles: a replay loops its trace
    /// (or `--age-with`'s) at its own addresses; a synthetic run overwrites
    /// with its own mix, with no fill first. Only what the workload wrote is valid.
    Workload,
    /// Today's synthetic aging: a sequential fill of `fill_fraction` of the
    /// logical space (`fill`), then random overwrites with the workload's
    /// mix until the WAF settles (`overwrite`). Every filled page stays valid.
    RandomFill,
    /// Nothing: the measured phase starts on an empty device.
    None,
}

/// The `[precondition]` section: which aging (`kind`), and the rule that
/// says when it has settled. Random fill fills sequentially, then
/// overwrites with the workload's write pattern until the windowed WAF is steady.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreconditionConfig {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Unset: the run's own default — `workload` for replays, `random-fill`
    /// for synthetic runs, `none` for live emulation (a fresh device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<AgingChoice>,
    /// Write the first `fill_fraction` of the logical space once, in order, first.
    #[serde(default = "yes")]
    pub fill: bool,
    #[serde(default = "default_fill_fraction")]
    pub fill_fraction: f64,
    /// Then overwrite with the workload's own mix until the WAF is steady.
    #[serde(default = "yes")]
    pub overwrite: bool,
    /// Steady when the WAF of consecutive windows differs by at most this
    /// relative amount ...
    #[serde(default = "default_tolerance")]
    pub steady_tolerance: f64,
    /// ... for this many consecutive windows.
    #[serde(default = "default_steady_windows")]
    pub steady_windows: u32,
    /// Window length as a fraction of the logical capacity.
    #[serde(default = "default_window_fraction")]
    pub window_device_fraction: f64,
    /// Give up (and report `steady = false`) after this many device writes.
    #[serde(default = "default_max_device_writes")]
    pub max_device_writes: f64,
}

fn yes() -> bool {
    true
}
fn default_fill_fraction() -> f64 {
    1.0
}
fn default_tolerance() -> f64 {
    0.01
}
fn default_steady_windows() -> u32 {
    3
}
fn default_window_fraction() -> f64 {
    0.25
}
fn default_max_device_writes() -> f64 {
    10.0
}

impl Default for PreconditionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            kind: None,
            fill: true,
            fill_fraction: default_fill_fraction(),
            overwrite: true,
            steady_tolerance: default_tolerance(),
            steady_windows: default_steady_windows(),
            window_device_fraction: default_window_fraction(),
            max_device_writes: default_max_device_writes(),
        }
    }
}

impl AgingChoice {
    /// The name the configuration gives it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Workload => "workload",
            Self::RandomFill => "random-fill",
            Self::None => "none",
        }
    }
}

impl PreconditionConfig {
    /// The aging that runs: `none` when disabled, else `kind`, else the
    /// run's own `default`.
    pub fn kind_or(&self, default: AgingChoice) -> AgingChoice {
        if self.enabled {
            self.kind.unwrap_or(default)
        } else {
            AgingChoice::None
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("precondition.steady_tolerance", self.steady_tolerance),
            ("precondition.window_device_fraction", self.window_device_fraction),
        ];
        for (key, value) in positive {
            if !(value.is_finite() && value > 0.0) {
                return Err(ConfigError::new(key, "must be a positive number"));
            }
        }
        if self.steady_tolerance >= 1.0 {
            return Err(ConfigError::new(
                "precondition.steady_tolerance",
                format!(
                    "{} is a relative difference of 100 % or more, which every pair of windows meets: \
                     did you mean {}? (a percentage divided by 100)",
                    self.steady_tolerance,
                    self.steady_tolerance / 100.0
                ),
            ));
        }
        if !(self.max_device_writes.is_finite() && (0.0..=DEVICE_WRITES_MAX).contains(&self.max_device_writes)) {
            return Err(ConfigError::new(
                "precondition.max_device_writes",
                format!("must be a number from 0 to {DEVICE_WRITES_MAX}"),
            ));
        }
        if self.window_device_fraction > DEVICE_WRITES_MAX {
            return Err(ConfigError::new(
                "precondition.window_device_fraction",
                format!("must be at most {DEVICE_WRITES_MAX}"),
            ));
        }
        if !(1..=STEADY_WINDOWS_MAX).contains(&self.steady_windows) {
            return Err(ConfigError::new(
                "precondition.steady_windows",
                format!("must be between 1 and {STEADY_WINDOWS_MAX}"),
            ));
        }
        if !(self.fill_fraction.is_finite() && self.fill_fraction > 0.0 && self.fill_fraction <= 1.0) {
            return Err(ConfigError::new("precondition.fill_fraction", "must be in (0, 1]"));
        }
        Ok(())
    }
}

/// An endless stream of requests following a [`WorkloadConfig`].
#[derive(Debug, Clone)]
pub struct Synthetic {
    config: WorkloadConfig,
    slots: u32,
    hot_slots: u32,
    zipf: Option<Zipf<f64>>,
    next_sequential_slot: u32,
    rng: Xoshiro256PlusPlus,
}

/// A large prime: multiplying ranks by it modulo the slot count scatters
/// popular Zipf ranks over the address space (a bijection, as the prime does
/// not divide any slot count below 2^32).
const SCATTER_PRIME: u64 = 4_294_967_311;

impl Synthetic {
    pub fn new(config: &WorkloadConfig, geometry: &Geometry, seed: u64) -> Self {
        let slots = geometry.logical_pages / config.request_pages;
        let hot_slots =
            saturating::<u32>((f64::from(slots) * config.hot_space_fraction).round()).clamp(1, slots.max(2) - 1);
        let zipf = (config.distribution == AddressDistribution::Zipf)
            .then(|| Zipf::new(f64::from(slots), config.zipf_theta).ok())
            .flatten();
        Self {
            config: config.clone(),
            slots,
            hot_slots,
            zipf,
            next_sequential_slot: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// The next request of the mix.
    #[inline]
    pub fn next_request(&mut self) -> Request {
        let draw: f64 = self.rng.random();
        let op = if draw < self.config.read_fraction {
            Op::Read
        } else if draw < self.config.read_fraction + self.config.trim_fraction {
            Op::Trim
        } else {
            Op::Write
        };
        self.request(op)
    }

    /// The next request, forced to be a write (for preconditioning).
    #[inline]
    pub fn next_write(&mut self) -> Request {
        self.request(Op::Write)
    }

    /// Always inline: with the uniform slot draw inside, the counting
    /// loop's request costs fewer instructions than as a call.
    #[inline(always)]
    fn request(&mut self, op: Op) -> Request {
        let (slot, hot) = self.next_slot();
        let stream = if self.config.hot_cold_streams { StreamId(u8::from(hot)) } else { StreamId(self.config.stream) };
        Request { op, start: Lpn(slot * self.config.request_pages), pages: self.config.request_pages, stream }
    }

    /// A request-sized slot and whether it lies in the hot region. The
    /// sequential and uniform random draws, the common cases, inline; the
    /// skewed ones out of line.
    #[inline]
    fn next_slot(&mut self) -> (u32, bool) {
        if self.config.pattern == Pattern::Sequential {
            let slot = self.next_sequential_slot;
            self.next_sequential_slot = (slot + 1) % self.slots;
            return (slot, false);
        }
        if self.config.distribution == AddressDistribution::Uniform {
            return (self.rng.random_range(0..self.slots), false);
        }
        self.next_skewed_slot()
    }

    /// A random slot under the Zipf or hot/cold distribution.
    #[inline(never)]
    fn next_skewed_slot(&mut self) -> (u32, bool) {
        if self.config.distribution == AddressDistribution::HotCold {
            return if self.rng.random::<f64>() < self.config.hot_write_fraction {
                (self.rng.random_range(0..self.hot_slots), true)
            } else {
                (self.rng.random_range(self.hot_slots..self.slots), false)
            };
        }
        let rank = self.zipf.as_ref().map_or(1.0, |zipf| zipf.sample(&mut self.rng));
        let rank = saturating::<u64>(rank) - 1;
        let slot = ((rank * SCATTER_PRIME) % u64::from(self.slots)) as u32;
        (slot, false)
    }
}
