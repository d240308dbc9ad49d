//! Random task sets as in Section 6.1.2: per-task storage and bandwidth
//! utilizations by UUniFast (Bini and Buttazzo 2005), periods by eq. (21)-(22)
//! and data lifetimes by eq. (23). Seeded: one seed decides a whole task set.

use crate::{AdmissionError, DeviceParams, Periodic, Task};
use nandlab_convert::{f64_of, saturating};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Parameters of one generated task set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GeneratorConfig {
    pub tasks: usize,
    /// U^s = Σ U_i^s, a fraction of S_pages.
    pub storage_utilization: f64,
    /// U^b = Σ U_i^b, a fraction of half the read and half the write bandwidth.
    pub bandwidth_utilization: f64,
    /// g: requests are whole stripes of g pages.
    pub granularity: u64,
    /// r_i and w_i are k·g pages with k uniform in 1..=this (the paper does
    /// not say how r_i and w_i were drawn; 1 means one g-page request per period).
    pub max_stripes_per_request: u64,
}

impl GeneratorConfig {
    fn validate(&self) -> Result<(), AdmissionError> {
        let invalid = |name, reason: &str| Err(AdmissionError::InvalidParameter { name, reason: reason.to_owned() });
        if self.tasks == 0 {
            return invalid("tasks", "a task set needs at least one task");
        }
        if self.granularity == 0 || self.max_stripes_per_request == 0 {
            return invalid("granularity", "granularity and stripes per request must be at least 1");
        }
        for (name, value) in
            [("storage_utilization", self.storage_utilization), ("bandwidth_utilization", self.bandwidth_utilization)]
        {
            if !(value > 0.0 && value <= 1.0) {
                return invalid(name, "utilizations must be in (0, 1]");
            }
        }
        Ok(())
    }
}

/// UUniFast: `count` utilizations, uniformly distributed over the simplex of
/// those summing to `total`.
pub fn uunifast(rng: &mut Xoshiro256PlusPlus, count: usize, total: f64) -> Vec<f64> {
    let mut shares = Vec::with_capacity(count);
    let mut remaining = total;
    for index in 1..count {
        let exponent = 1.0 / f64_of(count - index);
        let next = remaining * rng.random::<f64>().powf(exponent);
        shares.push(remaining - next);
        remaining = next;
    }
    shares.push(remaining);
    shares
}

/// Generates one task set. Every task reads and writes: r_i and w_i as in
/// [`GeneratorConfig::max_stripes_per_request`], T_i^r = ⌈r_i / (U_i^b·B^R_max/2)⌉
/// (eq. 21) and T_i^w = ⌈w_i / (U_i^b·B^W_max/2)⌉ (eq. 22) with the ceiling
/// taken in whole microseconds, and l_i^w = ⌈U_i^s·S_pages / w_i⌉ (eq. 23).
pub fn generate(device: &DeviceParams, config: &GeneratorConfig, seed: u64) -> Result<Vec<Task>, AdmissionError> {
    config.validate()?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let storage = uunifast(&mut rng, config.tasks, config.storage_utilization);
    let bandwidth = uunifast(&mut rng, config.tasks, config.bandwidth_utilization);
    let half_read_bandwidth = device.read_pages_per_second() / 2.0;
    let half_write_bandwidth = device.write_pages_per_second() / 2.0;
    let device_pages = f64_of(device.pages());
    let tasks = storage
        .iter()
        .zip(&bandwidth)
        .enumerate()
        .map(|(index, (&storage_share, &bandwidth_share))| {
            let read_pages = config.granularity * rng.random_range(1..=config.max_stripes_per_request);
            let write_pages = config.granularity * rng.random_range(1..=config.max_stripes_per_request);
            // A share of exactly 0 is possible in floating point; keep periods finite.
            let bandwidth_share = bandwidth_share.max(1e-12);
            let lifetime = (storage_share * device_pages / f64_of(write_pages)).ceil();
            let lifetime_periods = saturating::<u64>(lifetime).max(1);
            Task {
                name: format!("t{index}"),
                read: Some(Periodic {
                    pages: read_pages,
                    period: period(read_pages, bandwidth_share * half_read_bandwidth),
                }),
                write: Some(Periodic {
                    pages: write_pages,
                    period: period(write_pages, bandwidth_share * half_write_bandwidth),
                }),
                lifetime_periods,
            }
        })
        .collect();
    Ok(tasks)
}

/// ⌈pages / rate⌉ in whole microseconds, at least 1 µs.
fn period(pages: u64, pages_per_second: f64) -> Duration {
    let micros = (f64_of(pages) / pages_per_second * 1e6).ceil();
    let micros = saturating::<u64>(micros.min(1e15)).max(1);
    Duration::from_micros(micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uunifast_sums_to_the_total_and_is_seeded() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let shares = uunifast(&mut rng, 500, 0.83);
        assert_eq!(shares.len(), 500);
        assert!((shares.iter().sum::<f64>() - 0.83).abs() < 1e-9);
        assert!(shares.iter().all(|share| *share >= 0.0));
        let mut again = Xoshiro256PlusPlus::seed_from_u64(7);
        assert_eq!(uunifast(&mut again, 500, 0.83), shares);
    }

    #[test]
    fn generated_tasks_meet_their_utilizations() {
        let device = DeviceParams::telomere_1tb();
        let config = GeneratorConfig {
            tasks: 100,
            storage_utilization: 0.5,
            bandwidth_utilization: 0.6,
            granularity: 64,
            max_stripes_per_request: 1,
        };
        let tasks = generate(&device, &config, 42).expect("valid config");
        let write_rate: f64 = tasks.iter().map(Task::write_pages_per_second).sum();
        let read_rate: f64 = tasks.iter().map(Task::read_pages_per_second).sum();
        // Eq. (21)-(22): rates are U^b of half the bandwidth, minus the µs rounding.
        assert!((write_rate / (device.write_pages_per_second() / 2.0) - 0.6).abs() < 0.01, "{write_rate}");
        assert!((read_rate / (device.read_pages_per_second() / 2.0) - 0.6).abs() < 0.01, "{read_rate}");
        // Eq. (23): Σ w_i·l_i^w ≈ U^s·S_pages (each ceiling adds < w_i pages).
        let stored: f64 = tasks.iter().map(|task| f64_of(task.write_pages() * task.lifetime_periods)).sum::<f64>()
            / f64_of(device.pages());
        assert!((stored - 0.5).abs() < 0.001, "{stored}");
    }
}
