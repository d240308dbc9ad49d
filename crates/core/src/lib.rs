//! nandlab core: a deterministic NAND flash SSD simulator.
//!
//! Units, each owning its data and offering a small API:
//! - [`device`]: geometry and the flash array (flash rules, erase counts);
//! - [`ftl`]: the page-mapped FTL with garbage collection;
//! - [`host`]: requests and their submission;
//! - [`workload`]: synthetic workload generation and preconditioning;
//! - [`metrics`]: counters, distributions and series;
//! - [`config`]: TOML configuration and presets; [`sim`]: the run driver.

pub mod config;
pub mod device;
pub mod ftl;
pub mod host;
pub mod metrics;
pub mod replay;
pub mod sim;
pub mod timing;
pub mod units;
pub mod workload;

pub use config::{Config, ConfigBuilder, ConfigError};
pub use sim::{run, Report, SimError, Simulation};
