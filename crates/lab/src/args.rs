//! What every experiment receives: the output folder, the seed, the scale and
//! the `--set` keys, given by `reproduce` to each experiment it runs.

use crate::Watch;
use std::path::PathBuf;

/// What every experiment receives.
#[derive(Clone, Debug, Default)]
pub struct ExperimentArgs {
    pub out: PathBuf,
    pub seed: u64,
    /// The paper's full scale instead of the quick default.
    pub paper_scale: bool,
    /// Random task sets (or repetitions) per point, overriding the scale's default.
    pub samples: Option<usize>,
    /// Captures per scenario of the trace-based experiments (delay-d,
    /// informed-cleaning, journal), whose tables and plots show the range.
    pub repeats: Option<usize>,
    /// `--set` parameters, each `KEY=VALUE` with a key the experiment takes.
    pub set: Vec<String>,
    /// Stops the experiment at its next replayed request or sweep point, and
    /// shows each replay's progress when the caller gives a display.
    pub watch: Watch,
}
