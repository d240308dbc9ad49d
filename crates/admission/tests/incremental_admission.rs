//! Incremental admission (issue 28) against the whole-set check it replaced:
//! for random task files, every policy and modelling choice, each decision
//! and its numbers equal what checking the admitted tasks plus the candidate
//! from scratch gives.

use nandlab_admission::incremental::{admit_in_order_by, CandidateVerdict, Rejection, Tests};
use nandlab_admission::policy::{check, AdmissionContext, Policy};
use nandlab_admission::storage::{EraseAllowance, Placement, WriteSizeModel};
use nandlab_admission::{DeviceParams, Periodic, Task};
use proptest::prelude::*;
use std::time::Duration;

/// The admission as it was before issue 28: a whole-set check per task,
/// quadratic in the number of tasks.
fn admit_from_scratch(
    policy: &Policy,
    context: &AdmissionContext,
    tasks: &[Task],
    tests: Tests,
) -> Vec<(Option<Rejection>, CandidateVerdict)> {
    let mut admitted: Vec<Task> = Vec::new();
    let mut decisions = Vec::new();
    for task in tasks {
        let candidate: Vec<Task> = admitted.iter().cloned().chain([task.clone()]).collect();
        let verdict = check(policy, context, &candidate);
        let storage = verdict.storage.fits() || tests == Tests::Throughput;
        let throughput = verdict.throughput.fits() || tests == Tests::Storage;
        let rejection = if !storage {
            Some(Rejection::Storage)
        } else if !throughput {
            Some(Rejection::Throughput)
        } else {
            admitted.push(task.clone());
            None
        };
        decisions
            .push((rejection, CandidateVerdict { storage: verdict.storage.totals(), throughput: verdict.throughput }));
    }
    decisions
}

/// Tasks with a few distinct periods and lifetimes, so that data lifetimes
/// tie and partitions form; some only read, some write whole stripes.
fn task() -> impl Strategy<Value = Task> {
    let periodic = |pages: Vec<u64>| {
        (prop::sample::select(pages), prop::sample::select(vec![1_u64, 2, 5, 10, 40, 400])).prop_map(
            |(pages, period_ms)| (pages > 0).then(|| Periodic { pages, period: Duration::from_millis(period_ms) }),
        )
    };
    (
        periodic(vec![0, 1, 8, 64]),
        periodic(vec![0, 1, 3, 16, 128, 256, 1000]),
        prop::sample::select(vec![1_u64, 2, 9, 50, 400]),
    )
        .prop_map(|(read, write, lifetime_periods)| Task { name: "t".to_owned(), read, write, lifetime_periods })
}

fn policy() -> impl Strategy<Value = Policy> {
    prop::sample::select(vec![
        Policy::Telomere { placement: Placement::Sharp },
        Policy::Telomere { placement: Placement::Sharp },
        Policy::Telomere { placement: Placement::Sip },
        Policy::WaoGc,
        Policy::MultiLogOracle { waf: 2.2 },
    ])
}

fn context() -> impl Strategy<Value = AdmissionContext> {
    (prop::bool::ANY, prop::sample::select(vec![1_u64, 2, 8, 64]), 0.0005_f64..1.0, prop::bool::ANY, prop::bool::ANY)
        .prop_map(|(cosmos, granularity, utilization, general, prorated)| {
            let device = if cosmos { DeviceParams::cosmos() } else { DeviceParams::telomere_1tb() };
            let mut context = AdmissionContext::new(device, granularity, utilization).expect("valid context");
            context.storage.write_size = if general { WriteSizeModel::General } else { WriteSizeModel::SmallWrites };
            context.storage.erase_allowance = if prorated { EraseAllowance::Prorated } else { EraseAllowance::Printed };
            context
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn incremental_admission_equals_checking_the_whole_set_each_time(
        policy in policy(),
        context in context(),
        tasks in prop::collection::vec(task(), 0..40),
        tests in prop::sample::select(vec![Tests::Both, Tests::Storage, Tests::Throughput]),
    ) {
        let report = admit_in_order_by(&policy, &context, &tasks, tests);
        let expected = admit_from_scratch(&policy, &context, &tasks, tests);
        prop_assert_eq!(report.decisions.len(), expected.len());
        for (index, (decision, (rejection, verdict))) in report.decisions.iter().zip(&expected).enumerate() {
            prop_assert_eq!(&decision.rejection, rejection, "task {}", index);
            prop_assert_eq!(&decision.verdict, verdict, "task {}", index);
        }
    }
}
