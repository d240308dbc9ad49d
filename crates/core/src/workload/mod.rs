//! Workloads: request sources (the synthetic generator, several jobs at
//! once, any event stream) and the aging (preconditioning) settings.

mod arrivals;
pub mod jobs;
pub mod periodic;
mod source;
mod synthetic;

pub use arrivals::Arrivals;
pub(crate) use source::page_event;
pub use source::{EventSource, IterEvents, Passes, SourceError, SyntheticEvents};
pub use synthetic::{AddressDistribution, AgingChoice, Pattern, PreconditionConfig, Synthetic, WorkloadConfig};
