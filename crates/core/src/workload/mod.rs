//! Workloads: request sources (the synthetic generator, several jobs at
//! once, any event stream) and the aging (preconditioning) settings.

pub mod fio;
pub mod jobs;
pub mod periodic;
mod source;
mod synthetic;

pub(crate) use source::page_event;
pub use source::{EventSource, IterEvents, Passes, SourceError, SyntheticEvents};
pub use synthetic::{AddressDistribution, AgingChoice, Pattern, PreconditionConfig, Synthetic, WorkloadConfig};
