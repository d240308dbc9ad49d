//! Workloads: the synthetic generator and preconditioning settings.

pub mod periodic;
mod synthetic;

pub use synthetic::{AddressDistribution, Pattern, PreconditionConfig, Synthetic, WorkloadConfig};
