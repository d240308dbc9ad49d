//! Workloads: the synthetic generator and preconditioning settings.

mod synthetic;

pub use synthetic::{AddressDistribution, Pattern, PreconditionConfig, Synthetic, WorkloadConfig};
