//! `cargo bench -p nandlab-admission --bench figure7_grid`: wall time of the
//! full Figure 7 grid (granularity 1…128, 50 task sets of 500 tasks per
//! utilization step, SiP and SharP storage plus EDF throughput admission), the
//! computation behind `nandlab reproduce telomere-fig7 --paper-scale`.
//! Timing lives here, never in tests.

use nandlab_admission::policy::{AdmissionContext, Policy};
use nandlab_admission::storage::Placement;
use nandlab_admission::sweep::{max_schedulable, SweepConfig};
use nandlab_admission::DeviceParams;
use std::time::Instant;

fn main() -> Result<(), nandlab_admission::AdmissionError> {
    let seed = 1;
    let policies = [Policy::Telomere { placement: Placement::Sip }, Policy::Telomere { placement: Placement::Sharp }];
    println!("Figure 7 grid: 500 tasks, 50 task sets per utilization step, λ = 0.90, seed {seed}, one thread");
    let started = Instant::now();
    let mut task_sets = 0_u64;
    for granularity in [1_u64, 2, 4, 8, 16, 32, 64, 128] {
        let point_started = Instant::now();
        let context = AdmissionContext::new(DeviceParams::telomere_1tb(), granularity, 0.90)?;
        let config = SweepConfig { context, tasks: 500, task_sets: 50, max_stripes_per_request: 1, seed };
        let mut steps = 0_u32;
        let limits = max_schedulable(&config, &policies, &mut |percent| steps = percent)?;
        task_sets += u64::from(steps) * 50;
        println!(
            "g = {granularity:>3}: SiP storage {:>3.0} %, SharP storage {:>3.0} %, throughput {:>3.0} %  ({steps} steps, {:.2} s)",
            100.0 * limits[0].storage_utilization,
            100.0 * limits[1].storage_utilization,
            100.0 * limits[1].throughput_utilization,
            point_started.elapsed().as_secs_f64()
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    let rate = nandlab_convert::f64_of(task_sets) / seconds;
    println!("total {seconds:.2} s for {task_sets} task sets of 500 tasks ({rate:.0} task sets/s)");
    Ok(())
}
