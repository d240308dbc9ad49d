//! nandlab core: a deterministic NAND flash SSD simulator.
//!
//! Units, each owning its data and offering a small API:
//! - [`device`]: geometry and the flash array (flash rules, erase counts);
//! - [`ftl`]: the page-mapped FTL with garbage collection;
//! - [`host`]: host events, the host stages (DISCARD, classifier, priority)
//!   and the pblk-like host-level FTL;
//! - [`workload`]: request sources (synthetic, any event stream) and aging;
//! - [`metrics`]: counters, distributions and series;
//! - [`config`]: TOML configuration and presets; [`sim`]: the one run driver.

/// Asserts an invariant inside a hot path in `verify` builds (the feature
/// this crate's tests turn on); compiled out otherwise, so release builds
/// run exactly the code they would without it.
macro_rules! verify {
    ($($assertion:tt)*) => {
        if cfg!(feature = "verify") {
            assert!($($assertion)*);
        }
    };
}

pub mod config;
pub mod device;
pub mod error;
pub mod experiments;
pub mod ftl;
pub mod host;
pub mod metrics;
pub mod progress;
pub mod sim;
pub mod timing;
pub mod units;
pub mod workload;

pub use config::{Config, ConfigBuilder, ConfigError};
pub use sim::{run, run_timed, Report, SimError, Simulation};
