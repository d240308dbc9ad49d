//! Analytic write-amplification models for uniform random single-page writes,
//! used to validate the simulator (docs/validation.md).
//!
//! Notation: b pages per block, ρ = physical pages / logical pages − 1, and
//! α = 1 + ρ the physical-to-logical ratio.

use crate::device::Geometry;
use nandlab_convert::{f64_of, saturating};

/// Greedy GC, mean-field fluid limit with finite b (the model behind
/// Desnoyers, SYSTOR 2012 and Van Houdt, SIGMETRICS 2013 for d → ∞).
///
/// A sealed block loses valid pages at a rate proportional to its valid count
/// j, so in steady state the flux of blocks through each level j is the same
/// and the fraction of blocks at level j is ∝ 1/j for j* < j ≤ b, where j* is
/// the valid count at which greedy reclaims. Conservation of blocks then gives
///
///   b · (H(b) − H(j*)) / (α · (b − j*)) = 1,
///
/// with H the harmonic numbers (linearly interpolated between integers), and
/// WAF = b / (b − j*). For b = 256 this gives 7.60, 4.60 and 2.46 at
/// ρ = 0.07, 0.125 and 0.28.
pub fn greedy_waf(pages_per_block: u32, rho: f64) -> f64 {
    let b = f64::from(pages_per_block);
    let alpha = 1.0 + rho;
    let harmonic_b = harmonic(b);
    let level_excess = |j: f64| b * (harmonic_b - harmonic(j)) / (alpha * (b - j)) - 1.0;
    let reclaim_level = bisect(0.0, b * (1.0 - 1e-12), level_excess);
    b / (b - reclaim_level)
}

/// FIFO (and LRW) GC: a page survives the b·N(1 − u) host writes between its
/// block's programming and its reclamation with probability e^{−α(1−u)}, so
/// the valid fraction u at reclamation solves u = e^{−α(1−u)} and
/// WAF = 1 / (1 − u) (Desnoyers 2012, eq. for LRW; Hu et al. 2009).
pub fn fifo_waf(rho: f64) -> f64 {
    let alpha = 1.0 + rho;
    // The root u = 1 is trivial; the root below it is where f changes sign.
    let excess = |u: f64| (-alpha * (1.0 - u)).exp() - u;
    let valid_fraction = bisect(0.0, 1.0 - 1e-9, excess);
    1.0 / (1.0 - valid_fraction)
}

/// Random GC: the victim is a uniformly chosen sealed block, whose valid
/// fraction is on average the device's utilization 1/α, so
/// WAF = 1 / (1 − 1/α) = (1 + ρ) / ρ (Van Houdt 2013, d = 1).
pub fn random_waf(rho: f64) -> f64 {
    (1.0 + rho) / rho
}

/// Blocks per parallel unit the page FTL holds back from the spare space
/// (docs/validation.md, "Reserve accounting"): `gc_threshold_blocks` free
/// blocks, plus the open host block and the open GC block, each half-written
/// on average — `gc_threshold_blocks + 1` blocks' worth.
pub fn reserve_blocks_per_unit(gc_threshold_blocks: u32) -> u32 {
    gc_threshold_blocks.saturating_add(1)
}

/// The over-provisioning the spare space leaves once the reserve
/// ([`reserve_blocks_per_unit`]) is held back in every unit:
/// ρ_eff = (physical pages − reserve · b · units) / logical pages − 1. The
/// models above describe a device without a reserve, so a device with one
/// is compared with them at ρ_eff; on a small device the reserve is a large
/// share of the spare space, and the WAF lies well above the model at the
/// nominal ρ.
pub fn effective_over_provisioning(geometry: &Geometry, gc_threshold_blocks: u32) -> f64 {
    let held_back = f64::from(geometry.units())
        * f64::from(reserve_blocks_per_unit(gc_threshold_blocks))
        * f64::from(geometry.pages_per_block);
    (f64::from(geometry.physical_pages()) - held_back) / f64::from(geometry.logical_pages) - 1.0
}

/// What the reserve does to a device's steady-state WAF under uniform
/// random single-page writes with greedy GC: the textbook figure at the
/// nominal ρ against the one at ρ_eff ([`effective_over_provisioning`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReserveEffect {
    /// Blocks held back per unit ([`reserve_blocks_per_unit`]).
    pub reserve_blocks_per_unit: u32,
    /// Spare blocks per unit: (physical − logical pages) / (b · units).
    pub spare_blocks_per_unit: f64,
    pub over_provisioning: f64,
    pub effective_over_provisioning: f64,
    /// [`greedy_waf`] at the nominal ρ.
    pub greedy_waf: f64,
    /// [`greedy_waf`] at ρ_eff: what the FTL measures (docs/validation.md).
    pub effective_greedy_waf: f64,
}

impl ReserveEffect {
    pub fn of(geometry: &Geometry, gc_threshold_blocks: u32) -> Self {
        let over_provisioning = geometry.over_provisioning();
        let effective = effective_over_provisioning(geometry, gc_threshold_blocks);
        let unit_pages = f64::from(geometry.units()) * f64::from(geometry.pages_per_block);
        Self {
            reserve_blocks_per_unit: reserve_blocks_per_unit(gc_threshold_blocks),
            spare_blocks_per_unit: f64::from(geometry.physical_pages() - geometry.logical_pages) / unit_pages,
            over_provisioning,
            effective_over_provisioning: effective,
            greedy_waf: greedy_waf(geometry.pages_per_block, over_provisioning),
            // No spare space left once the reserve is held back: GC copies without end.
            effective_greedy_waf: if effective > 0.0 {
                greedy_waf(geometry.pages_per_block, effective)
            } else {
                f64::INFINITY
            },
        }
    }
}

/// H(x) for real x ≥ 0: the harmonic number at ⌊x⌋ plus the linear part.
fn harmonic(x: f64) -> f64 {
    let whole = x.floor();
    let integer_part: f64 = (1..=saturating::<u64>(whole)).map(|k| 1.0 / f64_of(k)).sum();
    integer_part + (x - whole) / (whole + 1.0)
}

/// Root of `f` on [lo, hi], where f(lo) > 0 ≥ f(hi) (or the reverse).
fn bisect(mut lo: f64, mut hi: f64, f: impl Fn(f64) -> f64) -> f64 {
    let lo_positive = f(lo) > 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if (f(mid) > 0.0) == lo_positive {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_model_matches_published_values() {
        for (rho, published) in [(0.07, 7.60), (0.125, 4.60), (0.28, 2.46)] {
            let model = greedy_waf(256, rho);
            assert!((model - published).abs() < 0.01, "ρ={rho}: model {model}, published {published}");
        }
    }

    #[test]
    fn fifo_is_worse_than_greedy() {
        for rho in [0.07, 0.125, 0.28] {
            assert!(fifo_waf(rho) > greedy_waf(256, rho));
        }
    }
}
