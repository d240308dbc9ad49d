//! The lifetime forecast against a run to wear-out: a tiny device (the `small` preset rated for
//! 300 P/E cycles) under uniform random writes and under 90/10 hot/cold writes. A short measured
//! run forecasts the host bytes until the first block reaches its rated cycles; the same device
//! then runs until one does.

use nandlab_core::sim::{Counting, Workload};
use nandlab_core::{ConfigBuilder, Report, Simulation};

const RATED_CYCLES: u32 = 300;
const CHUNK_REQUESTS: u64 = 5_000;

fn host_gb(report: &Report) -> f64 {
    let pages = report.measured.counters.host_pages_written;
    (pages * u64::from(report.device.geometry.page_size)) as f64 / 1e9
}

/// Ages the `small` preset (with `assignments`), measures a short run, then
/// runs on until the first block is worn: the forecast error (relative to
/// the measured host GB at the first wear-out), and the error the mean wear
/// rate alone (every block gaining the mean) would have made.
fn forecast_error(label: &str, assignments: &[&str]) -> (f64, f64) {
    let mut builder = ConfigBuilder::preset("small").expect("small preset");
    builder.set(&format!("device.pe_cycles={RATED_CYCLES}")).expect("pe_cycles");
    for assignment in assignments {
        builder.set(assignment).expect("valid assignment");
    }
    let (config, _) = builder.build().expect("valid");
    let mut simulation = Simulation::new(&config).expect("simulation");
    simulation.precondition(&mut |_| {}).expect("ages");
    simulation.run_phase(Workload::Synthetic(4 * CHUNK_REQUESTS), Counting::ToEnd, &mut |_| {}).expect("short run");
    let short = simulation.report();
    let short_gb = host_gb(&short);
    let forecast_gb = short_gb + short.lifetime.host_gb_to_first_worn.expect("wear was measured");
    let rate = short.lifetime.erases_per_block_per_host_gb.expect("a wear rate");
    let mean_gb = short_gb + (f64::from(RATED_CYCLES) - short.erase_counts.max as f64) / rate;
    let mut report = short;
    while report.erase_counts.max < RATED_CYCLES {
        simulation.run_phase(Workload::Synthetic(CHUNK_REQUESTS), Counting::ToEnd, &mut |_| {}).expect("run on");
        report = simulation.report();
    }
    let actual_gb = host_gb(&report);
    let error = (forecast_gb - actual_gb) / actual_gb;
    let mean_error = (mean_gb - actual_gb) / actual_gb;
    eprintln!(
        "{label}: first block worn after {actual_gb:.4} host GB; forecast from the first {short_gb:.4} GB: \
         {forecast_gb:.4} GB ({:+.2} %); the mean rate alone: {mean_gb:.4} GB ({:+.2} %)",
        error * 100.0,
        mean_error * 100.0
    );
    (error, mean_error)
}

#[test]
fn the_forecast_of_a_short_run_agrees_with_a_run_to_wear_out_within_five_percent() {
    let (error, _) = forecast_error("uniform", &[]);
    assert!(error.abs() <= 0.05, "uniform: {:+.2} %", error * 100.0);
}

/// Under 90/10 hot/cold the blocks holding cold data wear slowly and the
/// rest run ahead of the mean: a forecast from the mean rate is optimistic
/// by more than 10 %, the wear-spread forecast within 5 %.
#[test]
fn under_hot_cold_writes_the_forecast_follows_the_blocks_that_wear_fastest() {
    let (error, mean_error) = forecast_error(
        "90/10 hot/cold",
        &["workload.distribution=\"hot-cold\"", "workload.hot_write_fraction=0.9", "workload.hot_space_fraction=0.1"],
    );
    assert!(mean_error > 0.10, "the mean rate alone is optimistic: {:+.2} %", mean_error * 100.0);
    assert!(error.abs() <= 0.05, "hot/cold: {:+.2} %", error * 100.0);
}
