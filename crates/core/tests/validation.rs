//! Validation against analytic models (docs/validation.md): uniform random
//! single-page writes at steady state.
//!
//! Blocks the FTL holds back lower the over-provisioning the model should be
//! given: per unit, `gc_threshold_blocks` free blocks plus the host and GC
//! open blocks, each half-written on average — `gc_threshold_blocks + 1`
//! blocks in all. The models are evaluated at that effective ρ; the nominal
//! values are printed next to them.

mod common;

use nandlab_core::ftl::analytic::{effective_over_provisioning, fifo_waf, greedy_waf, random_waf};
use nandlab_core::sim::{Counting, Workload};
use nandlab_core::Simulation;

const BLOCKS: u32 = 2048;

/// Measured steady-state WAF after filling and overwriting the device.
fn steady_waf(rho: f64, policy: &str) -> (f64, f64) {
    let (mut config, geometry) = common::single_unit(BLOCKS, rho, policy);
    config.precondition.max_device_writes = 5.0;
    config.precondition.steady_tolerance = 0.002;
    let mut simulation = Simulation::new(&config).expect("valid config");
    simulation.precondition(&mut |_| {}).expect("preconditioning runs");
    let before = simulation.counters().clone();
    simulation
        .run_phase(Workload::Writes(3 * u64::from(geometry.logical_pages)), Counting::ToEnd, &mut |_| {})
        .expect("writes succeed");
    let measured = simulation.counters().since(&before).waf().expect("pages written");
    (measured, effective_over_provisioning(&geometry, config.ftl.gc_threshold_blocks))
}

fn assert_within(measured: f64, model: f64, tolerance: f64, what: &str) {
    let error = (measured - model).abs() / model;
    eprintln!("{what}: measured {measured:.3}, model {model:.3}, error {:.2} %", error * 100.0);
    assert!(error <= tolerance, "{what}: measured {measured:.3} vs model {model:.3} ({:.2} % off)", error * 100.0);
}

#[test]
fn greedy_agrees_with_mean_field_model() {
    for rho in [0.07, 0.125, 0.28] {
        let (measured, rho_effective) = steady_waf(rho, "greedy");
        eprintln!("ρ = {rho}: nominal model {:.3}, effective ρ {rho_effective:.4}", greedy_waf(256, rho));
        assert_within(measured, greedy_waf(256, rho_effective), 0.05, &format!("greedy ρ={rho}"));
    }
}

#[test]
fn fifo_agrees_with_closed_form() {
    for rho in [0.07, 0.28] {
        let (measured, rho_effective) = steady_waf(rho, "fifo");
        assert_within(measured, fifo_waf(rho_effective), 0.05, &format!("fifo ρ={rho}"));
    }
}

#[test]
fn random_agrees_with_closed_form() {
    let (measured, rho_effective) = steady_waf(0.125, "random");
    assert_within(measured, random_waf(rho_effective), 0.05, "random ρ=0.125");
}

#[test]
fn policies_rank_as_theory_says() {
    let rho = 0.125;
    let greedy = steady_waf(rho, "greedy").0;
    let d_choices = steady_waf(rho, "d-choices").0;
    let cost_benefit = steady_waf(rho, "cost-benefit").0;
    let fifo = steady_waf(rho, "fifo").0;
    eprintln!(
        "ρ = {rho}: greedy {greedy:.3}, d-choices(10) {d_choices:.3}, cost-benefit {cost_benefit:.3}, fifo {fifo:.3}"
    );
    // Greedy is optimal for uniform traffic; the others cannot beat it, and
    // all of them beat random choice by far.
    let random = random_waf(rho);
    for (name, waf) in [("d-choices", d_choices), ("cost-benefit", cost_benefit), ("fifo", fifo)] {
        assert!(greedy <= waf * 1.001, "greedy {greedy:.3} should not lose to {name} {waf:.3}");
        assert!(waf < 0.6 * random, "{name} {waf:.3} should be far below random {random:.3}");
    }
}
