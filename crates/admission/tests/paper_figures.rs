//! The headline numbers of Telomere's Section 6.1 from a reduced sweep (5 task
//! sets per utilization instead of 50): storage cost of SiP about 19 % and of
//! SharP about 6 % at α = 0.10; Telomere 100 % schedulable at about 83 %
//! throughput, WAO-GC only up to about 38 %. Bounds are the paper's numbers
//! ± a few points (see docs/telomere.md for the full-scale figures). Telomere's
//! 83 % needs eq. (19)'s C^g rounded up to 1 ms; with the exact C^g (the
//! default) every task set up to u = 100 % is schedulable.

use nandlab_admission::policy::{AdmissionContext, Policy};
use nandlab_admission::storage::Placement;
use nandlab_admission::sweep::{max_schedulable, SweepConfig};
use nandlab_admission::throughput::GcRounding;
use nandlab_admission::DeviceParams;

#[test]
fn figure_9_at_alpha_0_10_matches_the_paper_within_a_few_points() {
    let utilization = AdmissionContext::utilization_for_over_provisioning(0.10);
    let mut context = AdmissionContext::new(DeviceParams::telomere_1tb(), 64, utilization).expect("valid context");
    let config =
        SweepConfig { context: context.clone(), tasks: 500, task_sets: 5, max_stripes_per_request: 1, seed: 7 };
    let policies = [
        Policy::Telomere { placement: Placement::Sip },
        Policy::Telomere { placement: Placement::Sharp },
        Policy::WaoGc,
    ];
    let limits = max_schedulable(&config, &policies, &mut |_| {}).expect("sweep runs");
    let cost = |index: usize| 100.0 * (utilization - limits[index].storage_utilization);
    assert!((17.0..=22.0).contains(&cost(0)), "SiP storage cost {:.1} %, paper 19 %", cost(0));
    assert!((4.0..=9.0).contains(&cost(1)), "SharP storage cost {:.1} %, paper 6 %", cost(1));
    let throughput = |index: usize| 100.0 * limits[index].throughput_utilization;
    assert!(throughput(1) >= 99.0, "Telomere throughput with the exact C^g {:.0} %", throughput(1));
    assert!((34.0..=42.0).contains(&throughput(2)), "WAO-GC throughput {:.0} %, paper 38 %", throughput(2));
    assert!(limits[2].storage_utilization <= 0.75, "WAO-GC stores at most λ = 0.74");
    context.throughput.gc_rounding = GcRounding::Millisecond;
    let rounded = SweepConfig { context, ..config };
    let limits = max_schedulable(&rounded, &policies[1..], &mut |_| {}).expect("sweep runs");
    let telomere = 100.0 * limits[0].throughput_utilization;
    assert!((80.0..=90.0).contains(&telomere), "Telomere throughput with C^g in ms {telomere:.0} %, paper 83 %");
}
