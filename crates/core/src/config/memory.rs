//! What a run will allocate, estimated from its configuration before
//! anything is allocated, and checked against the memory the machine has
//! available: a configuration that cannot fit is an error naming the key that
//! drives the estimate, not an abort in the allocator.

use crate::config::{Config, ConfigError};
use crate::device::Geometry;
use crate::timing::SERIES_POINTS_MAX;
use nandlab_convert::f64_of;

/// Heap bytes per logical page (L2P entry) and per physical page (P2L entry).
const MAP_ENTRY_BYTES: u64 = 4;
/// Heap bytes of one block's state (valid count, state, seal time, free and
/// victim lists, program pointer, erase count), rounded up.
const BLOCK_BYTES: u64 = 48;
/// One request in flight in the timing model (queue slot, page list, events).
const REQUEST_BYTES: u64 = 512;
/// One buffered page, one cached mapping page.
const BUFFER_PAGE_BYTES: u64 = 64;
/// Histograms, a full throughput series and the rest of a run's fixed cost.
const FIXED_BYTES: u64 = 16 << 20;
/// One point of the WAF series.
const WAF_POINT_BYTES: u64 = 32;
/// Share of the available memory a run may plan to use.
const AVAILABLE_SHARE_PERCENT: u64 = 90;

/// A run's estimated memory and the key behind its largest part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryEstimate {
    pub bytes: u64,
    /// The configuration key whose value drives the largest part.
    pub key: &'static str,
    /// That part, in bytes.
    pub key_bytes: u64,
}

/// Estimates the heap a run of `config` on `geometry` needs.
pub fn estimate(config: &Config, geometry: &Geometry) -> MemoryEstimate {
    let timing = &config.timing;
    let outstanding = u64::from(timing.queues) * u64::from(timing.queue_depth);
    let parts = [
        (
            "device",
            MAP_ENTRY_BYTES * (u64::from(geometry.physical_pages()) + u64::from(geometry.logical_pages))
                + BLOCK_BYTES * u64::from(geometry.blocks()),
        ),
        ("timing.queue_depth", REQUEST_BYTES * outstanding),
        ("timing.write_buffer_pages", BUFFER_PAGE_BYTES * u64::from(timing.write_buffer_pages)),
        ("ftl.map_cache_fraction", BUFFER_PAGE_BYTES * u64::from(crate::ftl::map_cache_pages(geometry, &config.ftl))),
        ("pblk.write_buffer_pages", BUFFER_PAGE_BYTES * u64::from(config.pblk.write_buffer_pages)),
        ("timing.series_interval_ns", 64 * SERIES_POINTS_MAX as u64),
        ("metrics.window_pages", WAF_POINT_BYTES.saturating_mul(waf_points(config, geometry))),
    ];
    let (key, key_bytes) = parts.iter().copied().max_by_key(|&(_, bytes)| bytes).unwrap_or(("device", 0));
    let bytes = parts.iter().fold(FIXED_BYTES, |sum, &(_, bytes)| sum.saturating_add(bytes));
    MemoryEstimate { bytes, key, key_bytes }
}

/// Points of the synthetic run's WAF series: one per `metrics.window_pages`
/// host pages (the default window makes a hundred).
fn waf_points(config: &Config, geometry: &Geometry) -> u64 {
    let Some(window) = config.metrics.window_pages else { return 100 };
    let pages = config.workload.total_requests(geometry).saturating_mul(u64::from(config.workload.request_pages));
    pages / window.max(1)
}

/// Refuses `estimate` if it exceeds [`AVAILABLE_SHARE_PERCENT`] of
/// `available_bytes`.
pub fn check(estimate: &MemoryEstimate, available_bytes: u64) -> Result<(), ConfigError> {
    let budget = available_bytes / 100 * AVAILABLE_SHARE_PERCENT;
    if estimate.bytes <= budget {
        return Ok(());
    }
    let key = if estimate.key == "device" { "device" } else { estimate.key };
    let driver = if estimate.key == "device" {
        "the geometry (device.channels × chips_per_channel × dies_per_chip × planes_per_die × blocks_per_plane × pages_per_block)".to_owned()
    } else {
        format!("`{}`", estimate.key)
    };
    Err(ConfigError::new(
        key,
        format!(
            "the run would need about {} of memory, {} of it for {driver}; {} are available",
            gigabytes(estimate.bytes),
            gigabytes(estimate.key_bytes),
            gigabytes(available_bytes)
        ),
    ))
}

/// Environment variable that sets the memory a run may plan for, in bytes,
/// instead of `MemAvailable` (which, in a container, shows the host's memory
/// rather than the container's limit).
pub const MEMORY_ENV: &str = "NANDLAB_MEMORY_BYTES";

/// Checks `config` against the memory available now ([`MEMORY_ENV`], else
/// Linux `MemAvailable`); where that is unknown, no check is made.
pub fn check_available(config: &Config, geometry: &Geometry) -> Result<(), ConfigError> {
    let configured = match std::env::var(MEMORY_ENV) {
        Ok(text) => Some(
            text.trim()
                .parse::<u64>()
                .map_err(|_| ConfigError::new("", format!("{MEMORY_ENV}={text}: expected a number of bytes")))?,
        ),
        Err(_) => None,
    };
    match configured.or_else(mem_available_bytes) {
        Some(available) => check(&estimate(config, geometry), available),
        None => Ok(()),
    }
}

fn mem_available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|line| line.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

fn gigabytes(bytes: u64) -> String {
    format!("{:.1} GB", f64_of(bytes) / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigBuilder;

    fn built(overrides: &[&str]) -> (Config, Geometry) {
        let mut builder = ConfigBuilder::preset("small").expect("preset");
        for assignment in overrides {
            builder.set(assignment).expect("override");
        }
        builder.build().expect("valid")
    }

    #[test]
    fn a_30_gb_geometry_is_refused_naming_the_geometry() {
        let (config, geometry) = built(&[]);
        let mut huge = config.clone();
        huge.device.blocks_per_plane = 1 << 19;
        huge.device.pages_per_block = 1000;
        huge.device.channels = 4;
        let huge_geometry = Geometry::from_config(&huge.device).expect("the geometry itself is valid");
        let estimate = estimate(&huge, &huge_geometry);
        assert!(estimate.bytes > 30_000_000_000, "{estimate:?}");
        let error = check(&estimate, 24 << 30).expect_err("refused");
        assert_eq!(error.key, "device");
        assert!(error.reason.contains("GB"), "{error}");
        assert!(check(&super::estimate(&config, &geometry), 24 << 30).is_ok());
    }

    #[test]
    fn a_one_page_waf_window_over_a_long_run_is_blamed_on_the_window() {
        let (mut config, geometry) = built(&[]);
        (config.metrics.window_pages, config.workload.requests) = (Some(1), Some(100_000_000_000));
        let error = check(&estimate(&config, &geometry), 24 << 30).expect_err("refused");
        assert_eq!(error.key, "metrics.window_pages", "{error}");
    }

    #[test]
    fn a_deep_queue_is_blamed_on_the_queue_depth() {
        let (config, geometry) = built(&["timing.queues=1024", "timing.queue_depth=1024"]);
        let error = check(&estimate(&config, &geometry), 256 << 20).expect_err("refused");
        assert_eq!(error.key, "timing.queue_depth", "{error}");
    }
}
