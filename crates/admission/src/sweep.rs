//! Schedulability sweeps behind Figures 7-9: for a point (device, number of
//! tasks, granularity, λ) and utilizations u = 0.01, 0.02, …, 1.00, generate
//! task sets with U^s = U^b = u and find, for each policy, the largest u up to
//! which every task set passes storage admission, and likewise throughput.
//!
//! Using one u for both utilizations halves the work and changes nothing:
//! throughput admission does not depend on U^s (lifetimes do not enter eq. 20)
//! and storage admission depends on U^b only through the erase term.

use crate::generator::{generate, GeneratorConfig};
use crate::policy::{check_storage, check_throughput, AdmissionContext, Policy};
use crate::AdmissionError;
use serde::{Deserialize, Serialize};

/// One point of a figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepConfig {
    pub context: AdmissionContext,
    pub tasks: usize,
    /// Task sets per utilization (50 in the paper).
    pub task_sets: usize,
    pub max_stripes_per_request: u64,
    pub seed: u64,
}

/// The first task set a test rejected: regenerate it with
/// [`generate`]`(device, &failure.generator, failure.seed)` to inspect it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub generator: GeneratorConfig,
    pub seed: u64,
}

/// The result for one policy at one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub policy: String,
    /// Largest u (a fraction) with 100 % of task sets storage-schedulable,
    /// 0 when even u = 0.01 fails.
    pub storage_utilization: f64,
    pub throughput_utilization: f64,
    /// The task sets that ended each line (none if u = 1.00 still passed).
    pub storage_failure: Option<Failure>,
    pub throughput_failure: Option<Failure>,
}

/// Runs the sweep; `progress` is called with each utilization percent done.
/// Task sets depend only on (seed, tasks, granularity, u, set index), so all
/// policies and all λ see the same task sets.
pub fn max_schedulable(
    config: &SweepConfig,
    policies: &[Policy],
    progress: &mut dyn FnMut(u32),
) -> Result<Vec<Limits>, AdmissionError> {
    let mut storage_percent = vec![0_u32; policies.len()];
    let mut throughput_percent = vec![0_u32; policies.len()];
    let mut storage_failure: Vec<Option<Failure>> = vec![None; policies.len()];
    let mut throughput_failure: Vec<Option<Failure>> = vec![None; policies.len()];
    for percent in 1..=100_u32 {
        if storage_failure.iter().chain(&throughput_failure).all(Option::is_some) {
            break;
        }
        let utilization = f64::from(percent) / 100.0;
        let generator = GeneratorConfig {
            tasks: config.tasks,
            storage_utilization: utilization,
            bandwidth_utilization: utilization,
            granularity: config.context.storage.granularity,
            max_stripes_per_request: config.max_stripes_per_request,
        };
        for set in 0..config.task_sets {
            let seed =
                derive_seed(config.seed, &[config.tasks as u64, generator.granularity, u64::from(percent), set as u64]);
            let tasks = generate(&config.context.device, &generator, seed)?;
            let failure = Some(Failure { generator, seed });
            for (index, policy) in policies.iter().enumerate() {
                if storage_failure[index].is_none() && !check_storage(policy, &config.context, &tasks).fits() {
                    storage_failure[index] = failure;
                }
                if throughput_failure[index].is_none() && !check_throughput(policy, &config.context, &tasks).fits() {
                    throughput_failure[index] = failure;
                }
            }
        }
        for index in 0..policies.len() {
            if storage_failure[index].is_none() {
                storage_percent[index] = percent;
            }
            if throughput_failure[index].is_none() {
                throughput_percent[index] = percent;
            }
        }
        progress(percent);
    }
    Ok(policies
        .iter()
        .enumerate()
        .map(|(index, policy)| Limits {
            policy: policy.name(),
            storage_utilization: f64::from(storage_percent[index]) / 100.0,
            throughput_utilization: f64::from(throughput_percent[index]) / 100.0,
            storage_failure: storage_failure[index],
            throughput_failure: throughput_failure[index],
        })
        .collect())
}

/// Mixes a base seed with the coordinates of a task set (SplitMix64 steps),
/// so every task set has its own reproducible stream.
#[must_use]
pub fn derive_seed(base: u64, parts: &[u64]) -> u64 {
    parts.iter().fold(splitmix(base), |state, part| splitmix(state ^ splitmix(*part)))
}

fn splitmix(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
