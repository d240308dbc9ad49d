//! nandlab core: a deterministic NAND flash SSD simulator.
//!
//! Units, each owning its data and offering a small API, bottom-up: a module
//! imports only from the modules listed before it (docs/architecture.md,
//! "Crates and floors"; `scripts/check-imports.py` checks there is no circle):
//! - [`units`], [`error`] (the [`ConfigError`] every floor returns) and
//!   [`progress`] (what a run reports as it goes);
//! - [`device`]: geometry and the flash array (flash rules, erase counts);
//! - [`metrics`]: counters, distributions and series;
//! - [`ftl`]: the translation layers (the page-mapped FTL with garbage
//!   collection and the others), their errors and invariant checks;
//! - [`host`]: host events, the host stages (DISCARD, classifier, priority)
//!   and the pblk-like host-level FTL;
//! - [`workload`]: request sources (synthetic, any event stream), arrivals and aging;
//! - [`timing`]: the discrete-event timing engine;
//! - [`config`]: the one document gathering every section (each section's
//!   type lives beside what it configures), TOML and presets;
//! - [`sim`]: the one run driver; [`experiments`]: the timing experiments, runs of it.

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
