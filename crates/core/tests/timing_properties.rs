//! Properties of the timing engine over random set-ups of the `small`
//! device (issue 11): every request completes exactly once, no request
//! completes before its arrival, and die-time accounting adds up.

mod common;

use proptest::prelude::*;

fn setups() -> impl Strategy<Value = Vec<String>> {
    (
        1u32..5,
        1u32..40,
        prop_oneof![Just("closed"), Just("open")],
        prop_oneof![Just(1u32), Just(4), Just(16)],
        prop_oneof![Just("eager"), Just("stripe-merge")],
        0.0f64..0.6,
        0.0f64..0.3,
        any::<bool>(),
        200u64..3000,
        1u64..1000,
    )
        .prop_map(|(queues, depth, arrival, stripe, flush, reads, trims, multi_plane, requests, seed)| {
            let buffer = if flush == "stripe-merge" { stripe * 8 } else { 0 };
            vec![
                format!("timing.queues={queues}"),
                format!("timing.queue_depth={depth}"),
                format!("timing.arrival=\"{arrival}\""),
                "timing.arrival_iops=20000".to_owned(),
                format!("timing.stripe_pages={stripe}"),
                format!("timing.flush=\"{flush}\""),
                format!("timing.write_buffer_pages={buffer}"),
                format!("timing.multi_plane={multi_plane}"),
                format!("workload.read_fraction={reads}"),
                format!("workload.trim_fraction={trims}"),
                format!("workload.requests={requests}"),
                "precondition.enabled=false".to_owned(),
                format!("seed={seed}"),
            ]
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_request_completes_once_after_it_arrived_and_die_time_adds_up(overrides in setups()) {
        let overrides: Vec<&str> = overrides.iter().map(String::as_str).collect();
        let (config, _) = common::config("small", &overrides);
        let report = nandlab_core::sim::run_timed(&config, &mut |_| {}).map_err(|error| TestCaseError::fail(error.to_string()))?;
        let timed = report.timed.ok_or_else(|| TestCaseError::fail("no timing report"))?;
        let requests = config.workload.requests.unwrap_or_default();
        prop_assert_eq!(timed.requests, requests, "every request completes exactly once");
        let all = timed.latency.all.as_ref().ok_or_else(|| TestCaseError::fail("no latencies"))?;
        prop_assert_eq!(all.count, requests);
        let by_op: u64 = [&timed.latency.read, &timed.latency.write, &timed.latency.trim].iter().filter_map(|summary| summary.as_ref()).map(|summary| summary.count).sum();
        prop_assert_eq!(by_op, requests, "each completion is counted under one operation");
        prop_assert!(all.p50_us >= 0.0 && all.max_us >= all.p50_us, "completion never precedes arrival");
        prop_assert!((0.0..=1.0).contains(&timed.die_utilization), "die busy time within dies x time: {}", timed.die_utilization);
        prop_assert!((0.0..=1.0).contains(&timed.gc_die_time_share), "GC time within busy time: {}", timed.gc_die_time_share);
        prop_assert!(timed.drained_s >= timed.simulated_s);
    }
}
