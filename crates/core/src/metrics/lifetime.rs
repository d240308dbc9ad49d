//! The lifetime forecast of every report: how long the device lasts at the measured workload.
//! docs/lifetime.md states the model and its assumptions; in short:
//!
//! - **Wear rate.** The measured phase's erases per host byte written, per block: the mean
//!   `r = erases / (blocks · host bytes)` (the device's WAF at work, `r = WAF / (blocks · block
//!   bytes)` when every programmed page is eventually erased), and how far the blocks' own rates
//!   spread about it (the variance of the blocks' erase-count gains per host byte, `v`).
//! - **Wear spread.** A block's erase count is a renewal process (one erase per stint holding
//!   data, hot data's stints short, cold data's long), so over a long run it is about normal with
//!   a mean and a variance that both grow in proportion to the host bytes written (Cox, *Renewal
//!   Theory*, 1962, Section 6.1: `Var N(t) ≈ σ²t / μ³`): from now on the blocks' counts are taken
//!   as normal with mean `c̄ + r·x` and variance `s² + v·x` after `x` more host bytes, `c̄` and
//!   `s²` their mean and variance now. Under skew (static cold data, no static wear leveling) `v`
//!   is large and the most worn blocks run ahead of the mean; under uniform writes it is small.
//! - **End of a block.** A block ends when its erase count reaches the rated P/E cycles
//!   (`device.pe_cycles`) or, with the RBER model of Telomere eq. (27) configured
//!   (`lifetime.rber`), when its RBER reaches `lifetime.rber_limit`.
//! - **End of the device.** The first block's end, and the end of `lifetime.worn_share` of the
//!   blocks (Telomere Section 6.2 stops at 2 %, the default): the `k`-th most worn block of `N`
//!   reaches the rated cycles when `c̄ + r·x + z_k·√(s² + v·x)` does, `z_k` the expected `k`-th
//!   largest of `N` standard normal draws by Blom's formula (Blom, *Statistical Estimates and
//!   Transformed Beta-Variables*, 1958: `z_k = Φ⁻¹(1 − (k − 0.375) / (N + 0.25))`). Host bytes
//!   until then, and, at a host write rate (`lifetime.host_gb_per_day`, else the run's own rate
//!   when it has simulated time), years until then. TBW is the host bytes until the share is
//!   worn; DWPD the drive writes per day that would spend them in five years. (The RBER end
//!   keeps every block's own limit and the mean rate.)

use crate::device::wear::{WearDistribution, WearModel, DEAD_SHARE_END, RBER_DEAD};
use crate::device::Geometry;
use crate::error::ConfigError;
use crate::metrics::Counters;
use crate::units::BlockId;
use nandlab_convert::{f64_of, saturating};
use serde::{Deserialize, Serialize};

/// The `[lifetime]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LifetimeConfig {
    /// Share of blocks whose end ends the device (0 < share ≤ 1).
    #[serde(default = "default_worn_share")]
    pub worn_share: f64,
    /// Host write rate of the forecast in GB (10^9 bytes) per day; default: the run's own rate.
    #[serde(default)]
    pub host_gb_per_day: Option<f64>,
    /// Distribution of the eq. (27) parameters; set, blocks also end at `rber_limit`.
    #[serde(default)]
    pub rber: Option<WearDistribution>,
    /// RBER at which a block ends (Telomere Section 6.2: 10^-2).
    #[serde(default = "default_rber_limit")]
    pub rber_limit: f64,
}

fn default_worn_share() -> f64 {
    DEAD_SHARE_END
}

fn default_rber_limit() -> f64 {
    RBER_DEAD
}

impl Default for LifetimeConfig {
    fn default() -> Self {
        Self { worn_share: default_worn_share(), host_gb_per_day: None, rber: None, rber_limit: default_rber_limit() }
    }
}

impl LifetimeConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.worn_share > 0.0 && self.worn_share <= 1.0) {
            return Err(ConfigError::new("lifetime.worn_share", format!("{} must lie in (0, 1]", self.worn_share)));
        }
        if let Some(rate) = self.host_gb_per_day {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(ConfigError::new("lifetime.host_gb_per_day", format!("{rate} must be positive")));
            }
        }
        if !(self.rber_limit.is_finite() && self.rber_limit > 0.0 && self.rber_limit < 1.0) {
            return Err(ConfigError::new("lifetime.rber_limit", format!("{} must lie in (0, 1)", self.rber_limit)));
        }
        Ok(())
    }
}

/// How long the device lasts at the measured workload. `None` fields: not known (no wear
/// measured, or no write rate to turn host bytes into time).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LifetimeForecast {
    pub rated_pe_cycles: u32,
    pub worn_share: f64,
    /// Erases per block per host GB written, in the measured phase.
    pub erases_per_block_per_host_gb: Option<f64>,
    /// How the blocks' own wear rates spread about that mean: the variance of
    /// the blocks' erase-count gains over the measured phase, per host GB.
    pub erase_variance_per_host_gb: Option<f64>,
    /// Host write rate the years are computed at, GB per day, and where it came from.
    pub host_gb_per_day: Option<f64>,
    pub host_rate_source: &'static str,
    /// Host GB until the first block reaches its rated cycles, from now.
    pub host_gb_to_first_worn: Option<f64>,
    /// Host GB until `worn_share` of the blocks reach their rated cycles, from now.
    pub host_gb_to_share_worn: Option<f64>,
    pub years_to_first_worn: Option<f64>,
    pub years_to_share_worn: Option<f64>,
    /// Terabytes written until `worn_share` of the blocks are worn (from now).
    pub tbw: Option<f64>,
    /// Drive writes per day this workload makes.
    pub dwpd_workload: Option<f64>,
    /// Drive writes per day that would spend the TBW in five years.
    pub dwpd_5_years: Option<f64>,
    /// With the RBER model: the limit, and host GB / years until the first block reaches it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rber_limit: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_gb_to_rber_limit: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub years_to_rber_limit: Option<f64>,
    /// What makes this forecast unreliable; empty when nothing is known
    /// against it.
    pub warnings: Vec<LifetimeWarning>,
}

/// A reason not to trust a forecast: its wear rate is not the one the
/// workload would settle at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LifetimeWarning {
    /// The run started on a fresh device: until every block has been written
    /// GC has little to copy, so the wear rate (and the WAF in it) is far below
    /// what the workload settles at, and the lifetime far above it.
    NotAged,
    /// The aging gave up before the WAF settled (`precondition.steady = false`).
    NotSteady,
    /// The measured phase wrote less than the logical capacity: too short for
    /// the wear rate to be the workload's own.
    UnderOneDeviceWrite,
}

impl std::fmt::Display for LifetimeWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::NotAged => {
                "the run was not aged (precondition off): a fresh device's GC copies little, so this lifetime is \
                 optimistic"
            }
            Self::NotSteady => {
                "the aging stopped before the WAF settled (raise precondition.max_device_writes): the wear rate is \
                 not the workload's steady one"
            }
            Self::UnderOneDeviceWrite => {
                "the measured phase wrote less than one logical capacity: too short a run to give the workload's \
                 wear rate"
            }
        })
    }
}

const GB: f64 = 1e9;
const DAYS_PER_YEAR: f64 = 365.25;
const WARRANTY_YEARS: f64 = 5.0;

/// What the forecast is computed from.
#[derive(Clone, Copy, Debug)]
pub struct WearInputs<'a> {
    pub geometry: &'a Geometry,
    /// Erase count of every block now.
    pub erase_counts: &'a [u32],
    /// Erase count of every block when the measured phase began (same order).
    pub erase_counts_at_start: &'a [u32],
    /// Counts of the measured phase.
    pub measured: &'a Counters,
    /// Simulated time the measured phase took, when it had time (timed runs, traces).
    pub measured_ns: Option<u64>,
    pub seed: u64,
    /// How the device was aged before the measured phase: `None` not at
    /// all, `Some(steady)` whether the aging's WAF settled.
    pub aged_steady: Option<bool>,
}

impl LifetimeForecast {
    pub fn new(inputs: &WearInputs<'_>, config: &LifetimeConfig) -> Self {
        let geometry = inputs.geometry;
        let host_gb = f64_of(inputs.measured.host_pages_written * u64::from(geometry.page_size)) / GB;
        let blocks = inputs.erase_counts.len().max(1);
        let rate = (host_gb > 0.0 && inputs.measured.erases > 0)
            .then(|| f64_of(inputs.measured.erases) / f64_of(blocks) / host_gb);
        let (host_gb_per_day, host_rate_source) = match (config.host_gb_per_day, inputs.measured_ns) {
            (Some(rate), _) => (Some(rate), "lifetime.host_gb_per_day"),
            (None, Some(ns)) if ns > 0 && host_gb > 0.0 => {
                (Some(host_gb / (f64_of(ns) / 1e9 / 86_400.0)), "the run's simulated time")
            }
            _ => (None, "none: give lifetime.host_gb_per_day"),
        };
        let spread =
            rate.map(|rate| WearSpread::measure(inputs.erase_counts, inputs.erase_counts_at_start, rate, host_gb));
        let rated = f64::from(geometry.pe_cycles);
        let to_first = spread.map(|spread| spread.host_gb_until(1, rated));
        let share_blocks = share_count(config.worn_share, blocks);
        let to_share = spread.map(|spread| spread.host_gb_until(share_blocks, rated));
        let years = |gb: Option<f64>| Some(gb? / host_gb_per_day? / DAYS_PER_YEAR);
        let logical_gb = {
            let bytes = f64_of(geometry.logical_bytes());
            bytes / GB
        };
        let rber = config.rber.as_ref().and_then(|distribution| {
            let blocks = u32::try_from(inputs.erase_counts.len()).ok()?;
            let model =
                WearModel::sample(blocks, geometry.pe_cycles, distribution, inputs.seed.wrapping_add(27)).ok()?;
            let cycles = |block: usize| {
                let block = BlockId(u32::try_from(block).unwrap_or(u32::MAX));
                cycles_to_rber(&model, block, config.rber_limit)
            };
            Some(rate.map(|rate| host_gb_until(inputs.erase_counts, rate, 1, cycles)))
        });
        Self {
            rated_pe_cycles: geometry.pe_cycles,
            worn_share: config.worn_share,
            erases_per_block_per_host_gb: rate,
            erase_variance_per_host_gb: spread.map(|spread| spread.variance_rate),
            host_gb_per_day,
            host_rate_source,
            host_gb_to_first_worn: to_first,
            host_gb_to_share_worn: to_share,
            years_to_first_worn: years(to_first),
            years_to_share_worn: years(to_share),
            tbw: to_share.map(|gb| gb / 1e3),
            dwpd_workload: host_gb_per_day.map(|rate| rate / logical_gb),
            dwpd_5_years: to_share.map(|gb| gb / logical_gb / (WARRANTY_YEARS * DAYS_PER_YEAR)),
            rber_limit: config.rber.map(|_| config.rber_limit),
            host_gb_to_rber_limit: rber.flatten(),
            years_to_rber_limit: years(rber.flatten()),
            warnings: warnings(inputs),
        }
    }
}

/// What is known against a forecast from `inputs`.
fn warnings(inputs: &WearInputs<'_>) -> Vec<LifetimeWarning> {
    let aging = match inputs.aged_steady {
        None => Some(LifetimeWarning::NotAged),
        Some(false) => Some(LifetimeWarning::NotSteady),
        Some(true) => None,
    };
    let short = (inputs.measured.host_pages_written < u64::from(inputs.geometry.logical_pages))
        .then_some(LifetimeWarning::UnderOneDeviceWrite);
    aging.into_iter().chain(short).collect()
}

/// Blocks that make up `share` of `blocks` (at least one).
fn share_count(share: f64, blocks: usize) -> usize {
    let count = saturating::<usize>((share * f64_of(blocks)).ceil());
    count.clamp(1, blocks)
}

/// The blocks' erase counts as the module's wear spread: normal, with a mean
/// and a variance that grow in proportion to the host GB written.
#[derive(Clone, Copy, Debug)]
struct WearSpread {
    blocks: usize,
    /// Mean and variance of the erase counts now.
    mean: f64,
    variance: f64,
    /// Growth of the mean and of the variance per host GB.
    rate: f64,
    variance_rate: f64,
}

impl WearSpread {
    /// From the counts now and at the measured phase's start, the phase
    /// having written `host_gb` (> 0) at a mean `rate` erases per block per
    /// host GB.
    fn measure(now: &[u32], start: &[u32], rate: f64, host_gb: f64) -> Self {
        let (mean, variance) = mean_and_variance(now.iter().map(|&count| f64::from(count)));
        let gains = now.iter().zip(start).map(|(&now, &start)| f64::from(now.saturating_sub(start)));
        let (_, gain_variance) = mean_and_variance(gains);
        Self { blocks: now.len(), mean, variance, rate, variance_rate: gain_variance / host_gb }
    }

    /// Host GB from now until the `rank`-th most worn block reaches `cycles`:
    /// the `x ≥ 0` where `mean + rate·x + z·√(variance + variance_rate·x) =
    /// cycles`, `z` Blom's score of that rank.
    fn host_gb_until(&self, rank: usize, cycles: f64) -> f64 {
        let z = blom_score(rank, self.blocks);
        let ahead = cycles - self.mean;
        if self.variance_rate <= f64::EPSILON * self.rate {
            return ((ahead - z * self.variance.sqrt()) / self.rate).max(0.0);
        }
        // With s = √(variance + variance_rate·x): (rate / variance_rate)·s² + z·s − (ahead +
        // rate·variance / variance_rate) = 0; its positive root, then x = (s² − variance) / variance_rate.
        let a = self.rate / self.variance_rate;
        let c = ahead + a * self.variance;
        if c <= 0.0 {
            return 0.0;
        }
        let s = (-z + (z * z + 4.0 * a * c).sqrt()) / (2.0 * a);
        ((s * s - self.variance) / self.variance_rate).max(0.0)
    }
}

/// Mean and (population) variance of `values`; zeros when there are none.
fn mean_and_variance(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let (count, sum) = values.clone().fold((0_u64, 0.0), |(count, sum), value| (count + 1, sum + value));
    if count == 0 {
        return (0.0, 0.0);
    }
    let count = f64_of(count);
    let mean = sum / count;
    (mean, values.map(|value| (value - mean).powi(2)).sum::<f64>() / count)
}

/// The expected `rank`-th largest of `count` standard normal draws, by
/// Blom's formula (1958): `Φ⁻¹(1 − (rank − 0.375) / (count + 0.25))`.
fn blom_score(rank: usize, count: usize) -> f64 {
    let (rank, count) = (f64_of(rank), f64_of(count));
    normal_quantile(1.0 - (rank - 0.375) / (count + 0.25))
}

/// `Φ⁻¹(p)` for `0 < p < 1`: Acklam's rational approximation (relative error
/// below 1.2e-9), central and tail pieces split at `p = 0.02425`.
fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [7.784_695_709_041_462e-3, 3.224_671_290_700_398e-1, 2.445_134_137_142_996, 3.754_408_661_907_416];
    const LOW: f64 = 0.024_25;
    let horner =
        |coefficients: &[f64], x: f64| coefficients.iter().fold(0.0, |sum, &coefficient| sum * x + coefficient);
    let tail = |q: f64| horner(&C, q) / (horner(&D, q) * q + 1.0);
    if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        horner(&A, r) * q / (horner(&B, r) * r + 1.0)
    }
}

/// Host GB until `count` blocks have reached their end (`end(block)` erase cycles), every block
/// gaining `rate` erases per host GB.
fn host_gb_until(erase_counts: &[u32], rate: f64, count: usize, end: impl Fn(usize) -> f64) -> f64 {
    let mut remaining: Vec<f64> =
        erase_counts.iter().enumerate().map(|(block, &erases)| (end(block) - f64::from(erases)).max(0.0)).collect();
    remaining.sort_by(f64::total_cmp);
    remaining[count.min(remaining.len()) - 1] / rate
}

/// Erase cycles at which `block`'s eq. (27) RBER reaches `limit` (fractional).
fn cycles_to_rber(model: &WearModel, block: BlockId, limit: f64) -> f64 {
    // Eq. (27) is a line in log-log: log10(W) = log10(W(1)) + y · log10(E), y its slope between
    // E = 1 and E = 2 cycles; solved for log10(W) = log10(limit).
    let probe = |cycles: u32| model.rber(block, cycles).log10();
    let (at_one, at_two) = (probe(1), probe(2));
    let slope = (at_two - at_one) / 2f64.log10();
    10f64.powf((limit.log10() - at_one) / slope)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_nearest_its_end_and_the_share_come_from_the_remaining_cycles() {
        let counts = [90, 50, 80, 10];
        assert_eq!(host_gb_until(&counts, 2.0, 1, |_| 100.0), 5.0);
        assert_eq!(host_gb_until(&counts, 2.0, 2, |_| 100.0), 10.0);
        assert_eq!(host_gb_until(&counts, 2.0, share_count(0.02, 4), |_| 100.0), 5.0);
        assert_eq!(host_gb_until(&counts, 2.0, share_count(1.0, 4), |_| 100.0), 45.0);
    }

    #[test]
    fn the_normal_quantile_and_blom_scores_match_the_tables() {
        assert!(normal_quantile(0.5).abs() < 1e-9);
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-6);
        assert!((normal_quantile(0.01) + 2.326_348).abs() < 1e-6);
        // The expected maximum of 100 standard normal draws is 2.5076 (Harter's 1961 tables);
        // Blom's formula comes within 0.01.
        assert!((blom_score(1, 100) - 2.5076).abs() < 0.01, "{}", blom_score(1, 100));
        assert!(blom_score(50, 100) > 0.0 && blom_score(51, 100) < 0.0);
    }

    #[test]
    fn the_spread_adds_the_expected_maximum_to_the_mean() {
        // No spread now or later: every block ends with the mean.
        let even = WearSpread { blocks: 100, mean: 10.0, variance: 0.0, rate: 2.0, variance_rate: 0.0 };
        assert!((even.host_gb_until(1, 100.0) - 45.0).abs() < 1e-9);
        // A spread that stays: the most worn block is z standard deviations ahead.
        let fixed = WearSpread { variance: 4.0, ..even };
        let z = blom_score(1, 100);
        assert!((fixed.host_gb_until(1, 100.0) - (90.0 - 2.0 * z) / 2.0).abs() < 1e-9);
        // A growing spread: the root satisfies the equation, and comes sooner.
        let growing = WearSpread { variance_rate: 3.0, ..fixed };
        let x = growing.host_gb_until(1, 100.0);
        assert!((10.0 + 2.0 * x + z * (4.0 + 3.0 * x).sqrt() - 100.0).abs() < 1e-9, "{x}");
        assert!(x < fixed.host_gb_until(1, 100.0));
        // Already worn by the model: nothing left.
        assert_eq!(growing.host_gb_until(1, 10.0), 0.0);
    }

    #[test]
    fn the_rber_end_solves_eq_27() {
        let model = WearModel::from_parameters(vec![-2.0], vec![2.0], 1000).expect("model");
        // W = 10^(-2 + 2 log10(E/1000)) = 1e-4 at E = 100.
        let cycles = cycles_to_rber(&model, BlockId(0), 1e-4);
        assert!((cycles - 100.0).abs() < 1e-6, "{cycles}");
    }
}
