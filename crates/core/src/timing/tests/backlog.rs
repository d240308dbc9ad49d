//! Open-loop backlogs: requests that arrive while every host queue is
//! blocked wait in the request source, and the runs are the same as with
//! every arrival queued.

use super::*;
use crate::metrics::WafSeries;

/// The same run through the engine as it is and through one that takes
/// every open-loop request into its host queue on arrival (the reference
/// for requests that wait in the source while every queue is blocked).
fn run_both_ways<T: TranslationLayer + Clone>(
    config: &Config,
    geometry: &Geometry,
    ftl: &T,
    requests: &[TimedRequest],
) -> (TimedReport, TimedReport) {
    let count = requests.len() as u64;
    let run = |engine: Engine| {
        let mut layer = ftl.clone();
        // A WAF point per page written: the counters at every completion.
        let mut waf = WafSeries::new(1, layer.counters());
        let report = engine
            .run_with_waf(&mut layer, &mut script(requests.to_vec()), count, &mut |_| {}, Some(&mut waf))
            .expect("timed run");
        (report, waf.into_points(), layer.counters().clone())
    };
    let engine = || Engine::new(geometry, &config.timing, &config.ftl);
    let (deferred, deferred_waf, deferred_counters) = run(engine());
    let (reference, reference_waf, reference_counters) = run(engine().queueing_every_arrival());
    assert_eq!(deferred_counters, reference_counters, "the layer saw the same requests in the same order");
    assert_eq!(deferred_waf, reference_waf, "the layer's counters were the same at every completion");
    (deferred, reference)
}

#[test]
fn timing_an_open_loop_backlog_on_one_die_completes_as_the_closed_form_says() {
    // One die, queue depth 4, reads arriving every microsecond and served
    // in s = read + transfer = 60 us: the die never idles once the first
    // arrives, so request i (arriving at i us) completes at (i + 1) s and
    // waits (i + 1) s - i us; nearly all of it in the backlog.
    let (config, geometry) =
        config(&["device.channels=1", "device.chips_per_channel=1", "timing.arrival=\"open\"", "timing.queue_depth=4"]);
    let mut ftl = PageFtl::new(&geometry, &config.ftl, 1).expect("ftl");
    submit(&mut ftl, &Request { op: Op::Write, start: Lpn(0), pages: 64, stream: StreamId(0) }).expect("fill");
    let (gap_ns, count) = (1_000, 2_000_u64);
    let service_ns = config.timing.read_ns + config.timing.page_transfer_ns(geometry.page_size);
    let reads: Vec<_> = (0..count).map(|i| at(i * gap_ns, Op::Read, (i % 64) as u32, 1)).collect();
    let (report, reference) = run_both_ways(&config, &geometry, &ftl, &reads);
    assert_eq!(report, reference, "waiting in the source or in the queue is the same wait");
    let read = report.latency.read.expect("reads");
    assert_eq!(read.count, count);
    let last_done_ns = count * service_ns;
    assert!(within(report.simulated_s, last_done_ns as f64 / 1e9, 1e-12), "{} s", report.simulated_s);
    let latency_us = |i: u64| ((i + 1) * service_ns - i * gap_ns) as f64 / 1e3;
    // Latencies are kept to three significant digits.
    let median = latency_us(count / 2 - 1);
    assert!(within(read.p50_us, median, 0.001), "p50 {} us, closed form {median} us", read.p50_us);
    let last = latency_us(count - 1);
    assert!(within(read.max_us, last, 0.001), "max {} us, closed form {last} us", read.max_us);
    let mean = (0..count).map(latency_us).sum::<f64>() / count as f64;
    assert!(within(read.mean_us, mean, 0.001), "mean {} us, closed form {mean} us", read.mean_us);
}

/// Random open-loop request lists: every operation, bursts of equal
/// arrival times, gaps far shorter and far longer than a flash operation,
/// now and then a time earlier than the one before, priorities and deadlines.
fn open_loop_requests() -> impl proptest::strategy::Strategy<Value = Vec<TimedRequest>> {
    use proptest::prelude::*;
    let request = (
        0u8..10,
        0u32..1_400,
        1u32..6,
        prop_oneof![Just(0u64), 0..2_000u64, (0..40u64).prop_map(|tens| tens * 10_000), 0..400_000u64],
        0u8..20,
    );
    proptest::collection::vec(request, 1..300).prop_map(|drawn| {
        let mut now = 0_u64;
        drawn
            .into_iter()
            .map(|(kind, start, pages, gap, extra)| {
                now += gap;
                let arrival = if extra == 0 { now.saturating_sub(50_000) } else { now };
                let op = match kind {
                    0..=3 => Op::Write,
                    4..=7 => Op::Read,
                    8 => Op::Trim,
                    _ => Op::Flush,
                };
                let pages = if op == Op::Flush { 0 } else { pages };
                TimedRequest {
                    priority: extra % 3 == 1,
                    deadline: (extra % 4 == 2).then_some(SimNs(arrival + u64::from(extra) * 40_000)),
                    ..at(arrival, op, start, pages)
                }
            })
            .collect()
    })
}

/// Host interfaces, queues, buffers, stripes and die queues the backlog
/// must not change, on a device small enough to collect garbage.
const BACKLOG_SETUPS: [&[&str]; 7] = [
    &["timing.queue_depth=4"],
    &["timing.queues=3", "timing.queue_depth=2"],
    &["timing.interface=\"sata\"", "timing.queue_depth=3"],
    &[
        "timing.interface=\"sata\"",
        "timing.queue_depth=8",
        "timing.write_buffer_pages=16",
        "timing.priority_aware_gc=true",
    ],
    &["timing.queues=2", "timing.queue_depth=3", "timing.write_buffer_pages=8", "timing.priority_aware_gc=true"],
    &["timing.stripe_pages=4", "timing.write_buffer_pages=32", "timing.flush=\"stripe-merge\"", "timing.queue_depth=2"],
    &["timing.die_queue=\"edf\"", "timing.queue_depth=6", "timing.multi_plane=true", "device.planes_per_die=2"],
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Waiting in the source instead of the host queue changes nothing a run
    /// reports, nor what the layer did, for any set-up and request list.
    #[test]
    fn timing_a_backlog_in_the_source_gives_the_run_a_queued_backlog_gives(
        setup in 0..BACKLOG_SETUPS.len(),
        requests in open_loop_requests(),
        open_channel: bool,
    ) {
        let mut overrides = vec!["timing.arrival=\"open\"", "device.blocks_per_plane=16", "timing.gc_low_blocks=6"];
        overrides.extend_from_slice(BACKLOG_SETUPS[setup]);
        let (config, geometry) = config(&overrides);
        let (report, reference) = if open_channel {
            run_both_ways(&config, &geometry, &pblk(&geometry), &requests)
        } else {
            let mut ftl = PageFtl::new(&geometry, &config.ftl, 1).expect("ftl");
            let logical = geometry.logical_pages;
            submit(&mut ftl, &Request { op: Op::Write, start: Lpn(0), pages: logical, stream: StreamId(0) })
                .expect("fill");
            run_both_ways(&config, &geometry, &ftl, &requests)
        };
        proptest::prop_assert_eq!(report.requests, requests.len() as u64);
        proptest::prop_assert_eq!(report, reference);
    }
}
