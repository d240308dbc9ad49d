//! What a run reports as it goes: the phase under way and how far it is. At the
//! ground floor, so that the driver (`sim`) and the timing engine below it both
//! report progress in the same words.

use serde::Serialize;

/// Which part of a run is under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Fill,
    Overwrite,
    /// Workload aging: passes of a trace before the measured phase.
    AgingTrace,
    Measure,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Self::Fill => "precondition: fill",
            Self::Overwrite => "precondition: overwrite to steady state",
            Self::AgingTrace => "aging: workload passes",
            Self::Measure => "measure",
        }
    }
}

/// Progress reported to an observer: `done` of `total` requests of `phase`
/// (`total` 0 when the source's length is unknown).
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub phase: Phase,
    pub done: u64,
    pub total: u64,
}
