//! nandlab-emulate: the simulated SSD as a live block device. Every request a FUSE or NBD client
//! sends becomes a host event and goes through the same host stages, translation layer and (with
//! `--pace real`) timing engine as a replay ([`nandlab_core::sim::LiveDevice`]); its data lives in a
//! sparse file or in RAM ([`contents`]); the request stream can be recorded as a native trace, and
//! the device's history is kept so a restart resumes it ([`state`]). See docs/emulate.md.

pub mod contents;
mod device;
mod error;
mod pace;
mod pacer;
mod served;
pub mod state;

pub use device::{EmulateOptions, EmulatedSsd, LiveStats, MarkedPhase};
pub use error::EmulateError;
pub use pace::Pace;
pub use served::ServedLatency;
