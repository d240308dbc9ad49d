//! The lifetime forecast against a run to wear-out: a tiny device (the `small` preset rated for
//! 300 P/E cycles) under its uniform random writes. A short measured run forecasts the host bytes
//! until the first block reaches its rated cycles; the same device then runs until one does.

use nandlab_core::{ConfigBuilder, Report, Simulation};

const RATED_CYCLES: u32 = 300;
const CHUNK_REQUESTS: u64 = 5_000;

fn host_gb(report: &Report) -> f64 {
    let pages = report.measured.counters.host_pages_written;
    (pages * u64::from(report.device.geometry.page_size)) as f64 / 1e9
}

#[test]
fn the_forecast_of_a_short_run_agrees_with_a_run_to_wear_out_within_five_percent() {
    let mut builder = ConfigBuilder::preset("small").expect("small preset");
    builder.set(&format!("device.pe_cycles={RATED_CYCLES}")).expect("pe_cycles");
    let (config, _) = builder.build().expect("valid");
    let mut simulation = Simulation::new(&config).expect("simulation");
    simulation.precondition(&mut |_| {}).expect("ages");
    simulation.measure(4 * CHUNK_REQUESTS, &mut |_| {}).expect("short run");
    let short = simulation.report();
    let short_gb = host_gb(&short);
    let forecast_gb = short_gb + short.lifetime.host_gb_to_first_worn.expect("wear was measured");
    let mut report = short;
    while report.erase_counts.max < RATED_CYCLES {
        simulation.measure(CHUNK_REQUESTS, &mut |_| {}).expect("run on");
        report = simulation.report();
    }
    let actual_gb = host_gb(&report);
    let error = (forecast_gb - actual_gb) / actual_gb;
    eprintln!(
        "first block worn after {actual_gb:.4} host GB; forecast from the first {short_gb:.4} GB: {forecast_gb:.4} GB ({:+.2} %)",
        error * 100.0
    );
    assert!(error.abs() <= 0.05, "forecast {forecast_gb} GB, wear-out at {actual_gb} GB");
}
