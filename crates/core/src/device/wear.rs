//! Block wear as raw bit error rate (RBER), Telomere Section 6.2, eq. (27)
//! after Pletka et al. (ACM TOS 2018): log10(W_b) = x_b + y_b · log10(E(b)),
//! E(b) the block's program/erase cycles over the rated endurance, x_b and
//! y_b distinct per block. This file owns the per-block parameters (drawn
//! from a seeded distribution), the RBER they give, and the choice of the
//! next free block under the three wear-leveling policies of Figure 10.

use crate::error::ConfigError;
use crate::units::BlockId;
use nandlab_convert::saturating;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// RBER at which a block is declared dead (Telomere Section 6.2 after Zhao et
/// al. FAST'13).
pub const RBER_DEAD: f64 = 1e-2;

/// Share of blocks that may die before a wear run stops (Section 6.2: "we end
/// our simulation when 2 % of the total number of flash blocks get retired").
pub const DEAD_SHARE_END: f64 = 0.02;

/// Distribution of the eq. (27) parameters: x_b ~ N(x_mean, x_std_dev),
/// y_b ~ N(y_mean, y_std_dev). The paper does not publish Pletka's fitted
/// values; the defaults make a block die (W_b = 1e-2) at its rated endurance
/// on average, with a spread of about ±10 % in the cycles to death.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WearDistribution {
    pub x_mean: f64,
    pub x_std_dev: f64,
    pub y_mean: f64,
    pub y_std_dev: f64,
}

impl Default for WearDistribution {
    fn default() -> Self {
        Self { x_mean: -2.0, x_std_dev: 0.08, y_mean: 2.0, y_std_dev: 0.2 }
    }
}

impl WearDistribution {
    fn validate(&self) -> Result<(), ConfigError> {
        for (key, value) in [("wear.x_std_dev", self.x_std_dev), ("wear.y_std_dev", self.y_std_dev)] {
            if !value.is_finite() || value < 0.0 {
                return Err(ConfigError::new(key, format!("{value} must be a finite standard deviation ≥ 0")));
            }
        }
        if !self.x_mean.is_finite() {
            return Err(ConfigError::new("wear.x_mean", "must be finite"));
        }
        if !self.y_mean.is_finite() || self.y_mean <= 0.0 {
            return Err(ConfigError::new("wear.y_mean", "must be positive: RBER grows with wear"));
        }
        Ok(())
    }
}

/// Per-block eq. (27) parameters of one device.
#[derive(Clone, Debug, PartialEq)]
pub struct WearModel {
    x: Vec<f64>,
    y: Vec<f64>,
    rated_endurance: u32,
}

impl WearModel {
    /// Draws x_b, y_b for `blocks` blocks. A y_b drawn non-positive is redrawn:
    /// eq. (27) describes blocks whose RBER grows with wear.
    pub fn sample(
        blocks: u32,
        rated_endurance: u32,
        distribution: &WearDistribution,
        seed: u64,
    ) -> Result<Self, ConfigError> {
        distribution.validate()?;
        if rated_endurance == 0 {
            return Err(ConfigError::new("device.pe_cycles", "rated endurance must be at least 1 cycle"));
        }
        let normal = |mean, std_dev, key| {
            Normal::new(mean, std_dev).map_err(|error| ConfigError::new(key, format!("invalid distribution: {error}")))
        };
        let x_dist = normal(distribution.x_mean, distribution.x_std_dev, "wear.x_std_dev")?;
        let y_dist = normal(distribution.y_mean, distribution.y_std_dev, "wear.y_std_dev")?;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let x = (0..blocks).map(|_| x_dist.sample(&mut rng)).collect();
        let y = (0..blocks)
            .map(|_| loop {
                let y = y_dist.sample(&mut rng);
                if y > 0.0 {
                    break y;
                }
            })
            .collect();
        Ok(Self { x, y, rated_endurance })
    }

    /// A model with given parameters (tests, hand-made devices).
    pub fn from_parameters(x: Vec<f64>, y: Vec<f64>, rated_endurance: u32) -> Result<Self, ConfigError> {
        if x.len() != y.len() {
            return Err(ConfigError::new("wear", format!("{} x_b values but {} y_b values", x.len(), y.len())));
        }
        if rated_endurance == 0 {
            return Err(ConfigError::new("device.pe_cycles", "rated endurance must be at least 1 cycle"));
        }
        Ok(Self { x, y, rated_endurance })
    }

    pub fn blocks(&self) -> usize {
        self.x.len()
    }

    /// W_b of eq. (27) after `erase_count` program/erase cycles. A block never
    /// erased has no wear (E(b) = 0, so W_b = 0 for y_b > 0).
    pub fn rber(&self, block: BlockId, erase_count: u32) -> f64 {
        if erase_count == 0 {
            return 0.0;
        }
        let endurance_fraction = f64::from(erase_count) / f64::from(self.rated_endurance);
        let i = block.index();
        // Telomere eq. (27).
        10f64.powf(self.x[i] + self.y[i] * endurance_fraction.log10())
    }

    /// W_b of every block, given the erase counts of all blocks.
    pub fn rbers(&self, erase_counts: &[u32]) -> Vec<f64> {
        erase_counts.iter().enumerate().map(|(i, &count)| self.rber(block_id(i), count)).collect()
    }

    /// Blocks whose RBER reached [`RBER_DEAD`].
    pub fn dead_blocks(&self, erase_counts: &[u32]) -> usize {
        self.rbers(erase_counts).into_iter().filter(|&rber| rber >= RBER_DEAD).count()
    }

    /// Erase count at which `block` dies; wear runs use it to stop without
    /// evaluating eq. (27) on every erase.
    pub fn cycles_to_death(&self, block: BlockId) -> u32 {
        let i = block.index();
        let log_fraction = (RBER_DEAD.log10() - self.x[i]) / self.y[i];
        let cycles = (10f64.powf(log_fraction) * f64::from(self.rated_endurance)).ceil();
        // Saturates for blocks that would outlive any run.
        let cycles = saturating::<u32>(cycles.clamp(1.0, f64::from(u32::MAX)));
        // Rounding may put the ceiling one cycle short; step to the true crossing.
        if self.rber(block, cycles) < RBER_DEAD {
            cycles.saturating_add(1)
        } else {
            cycles
        }
    }
}

fn block_id(index: usize) -> BlockId {
    // Block counts come from a u32 geometry.
    BlockId(index as u32)
}

/// How the next free block is chosen (Telomere Section 6.2, Figure 10).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WearLeveling {
    /// noWL: the free-block queue is first in, first out.
    #[default]
    Fifo,
    /// RBER-balancing: the free block with the lowest RBER.
    RberBalancing,
    /// Health binning (Pletka and Tomic, SYSTOR'16): hot data go to healthy
    /// blocks, cold data to worn ones. Only for FTLs that keep data of equal
    /// hotness together (Telomere partitions).
    HealthBinning,
}

/// Where a writer's data sit in the hotness order, for health binning:
/// `rank` 0 is the hottest of `of` writers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hotness {
    pub rank: u32,
    pub of: u32,
}

/// Takes the next free block from `free` under `policy`. `rber` gives the
/// current RBER of a block; `hotness` places the writer for health binning
/// (without it health binning takes the healthiest block).
pub fn take_free_block(
    free: &mut VecDeque<u32>,
    policy: WearLeveling,
    rber: impl Fn(u32) -> f64,
    hotness: Option<Hotness>,
) -> Option<u32> {
    if free.is_empty() {
        return None;
    }
    let position = match policy {
        WearLeveling::Fifo => 0,
        WearLeveling::RberBalancing => healthiest_position(free, &rber),
        WearLeveling::HealthBinning => match hotness {
            Some(hotness) if hotness.of > 1 => binned_position(free, &rber, hotness),
            _ => healthiest_position(free, &rber),
        },
    };
    free.remove(position)
}

fn healthiest_position(free: &VecDeque<u32>, rber: &impl Fn(u32) -> f64) -> usize {
    free.iter().enumerate().min_by(|(_, &a), (_, &b)| rber(a).total_cmp(&rber(b)).then(a.cmp(&b))).map_or(0, |(i, _)| i)
}

/// The block at the writer's hotness quantile of the free blocks ordered from
/// healthiest to most worn: the hottest writer takes the healthiest block.
fn binned_position(free: &VecDeque<u32>, rber: &impl Fn(u32) -> f64, hotness: Hotness) -> usize {
    let mut order: Vec<(f64, u32, usize)> = free.iter().enumerate().map(|(i, &b)| (rber(b), b, i)).collect();
    let nth = (free.len() * hotness.rank.min(hotness.of - 1) as usize) / hotness.of as usize;
    order.select_nth_unstable_by(nth, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    order[nth].2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> WearModel {
        WearModel::from_parameters(vec![-2.0, -3.0, -1.5], vec![2.0, 3.0, 1.0], 1000).expect("valid")
    }

    #[test]
    fn rber_follows_eq_27_on_hand_values() {
        let model = model();
        // E = 1 (rated endurance): log10 W = x.
        assert!((model.rber(BlockId(0), 1000) - 1e-2).abs() < 1e-15);
        assert!((model.rber(BlockId(1), 1000) - 1e-3).abs() < 1e-15);
        // E = 0.1: log10 W = -2 + 2·(-1) = -4; -3 + 3·(-1) = -6; -1.5 - 1 = -2.5.
        assert!((model.rber(BlockId(0), 100) / 1e-4 - 1.0).abs() < 1e-12);
        assert!((model.rber(BlockId(1), 100) / 1e-6 - 1.0).abs() < 1e-12);
        assert!((model.rber(BlockId(2), 100) / 10f64.powf(-2.5) - 1.0).abs() < 1e-12);
        // E = 2: log10 W = -3 + 3·log10 2.
        assert!((model.rber(BlockId(1), 2000) / (1e-3 * 8.0) - 1.0).abs() < 1e-12);
        assert_eq!(model.rber(BlockId(0), 0), 0.0);
    }

    #[test]
    fn cycles_to_death_is_the_first_dead_count() {
        let model = model();
        for block in 0..3 {
            let death = model.cycles_to_death(BlockId(block));
            assert!(model.rber(BlockId(block), death) >= RBER_DEAD);
            assert!(model.rber(BlockId(block), death - 1) < RBER_DEAD);
        }
        assert_eq!(model.cycles_to_death(BlockId(0)), 1000);
        // Block 2: log10 E = (-2 + 1.5) / 1 → E = 10^-0.5.
        assert_eq!(model.cycles_to_death(BlockId(2)), 317);
    }

    #[test]
    fn sampling_is_seeded_and_checked() {
        let distribution = WearDistribution::default();
        let a = WearModel::sample(64, 3000, &distribution, 7).expect("valid");
        assert_eq!(a, WearModel::sample(64, 3000, &distribution, 7).expect("valid"));
        assert_ne!(a, WearModel::sample(64, 3000, &distribution, 8).expect("valid"));
        let bad = WearDistribution { y_mean: -1.0, ..distribution };
        let error = WearModel::sample(4, 3000, &bad, 1).expect_err("negative slope");
        assert!(error.to_string().contains("wear.y_mean"), "{error}");
    }

    #[test]
    fn free_block_policies_pick_as_documented() {
        let rbers = [0.5, 0.1, 0.3, 0.2];
        let rber = |b: u32| rbers[b as usize];
        let queue: VecDeque<u32> = [0, 1, 2, 3].into();
        let take = |policy, hotness| take_free_block(&mut queue.clone(), policy, rber, hotness);
        assert_eq!(take(WearLeveling::Fifo, None), Some(0));
        assert_eq!(take(WearLeveling::RberBalancing, None), Some(1));
        assert_eq!(take(WearLeveling::HealthBinning, Some(Hotness { rank: 0, of: 2 })), Some(1));
        assert_eq!(take(WearLeveling::HealthBinning, Some(Hotness { rank: 1, of: 2 })), Some(2));
        assert_eq!(take(WearLeveling::HealthBinning, Some(Hotness { rank: 3, of: 4 })), Some(0));
        assert_eq!(take_free_block(&mut VecDeque::new(), WearLeveling::Fifo, rber, None), None);
    }
}
