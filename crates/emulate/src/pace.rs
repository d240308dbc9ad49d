//! When the emulated device answers a request: at its simulated completion time or at once.

use serde::{Deserialize, Serialize};

/// When a request is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pace {
    /// At its simulated completion time (the timing engine runs; simulated time follows the wall clock).
    Real,
    /// At once; the simulation only counts.
    None,
}
