//! Replays of hand-written event sequences through the driver: the order in
//! which the DISCARD stage's trims and the trace's writes reach the FTL,
//! counting against timed, and aging before a replay.

use super::*;
use crate::config::ConfigBuilder;
use crate::host::discard::DiscardPolicy;
use crate::host::event::{HostEvent, HostOp};
use crate::timing::Arrivals;
use crate::workload::{IterEvents, SyntheticEvents};

const MS: u64 = 1_000_000;
/// 4 KiB pages: 8 sectors each.
const PAGE: u64 = 8;

fn config(policy: DiscardPolicy) -> Config {
    let (mut config, _) =
        ConfigBuilder::preset("small").and_then(ConfigBuilder::build).expect("the small preset is valid");
    config.discard.policy = policy;
    config.discard.delay_ms = 10;
    config.precondition.enabled = false;
    config
}

fn event(time_ms: u64, op: HostOp, first_page: u64, pages: u64) -> HostEvent {
    HostEvent::new(SimNs(time_ms * MS), op, SectorRange::new(first_page * PAGE, pages * PAGE))
}

fn commit(time_ms: u64) -> HostEvent {
    HostEvent { journal_commit: true, ..event(time_ms, HostOp::Flush, 0, 0) }
}

/// Two adjacent files written, deleted (one DISCARD each), the first one's
/// space partly reallocated, and commits before and after the delay.
fn delete_and_reallocate() -> Vec<HostEvent> {
    vec![
        event(0, HostOp::Write, 100, 16),
        event(0, HostOp::Write, 116, 16),
        commit(1),
        event(2, HostOp::Discard, 100, 16),
        event(2, HostOp::Discard, 116, 16),
        commit(3),
        event(5, HostOp::Write, 100, 4),
        commit(6),
        commit(21),
        event(22, HostOp::Read, 100, 32),
    ]
}

fn replay_with(config: &Config, events: &[HostEvent]) -> Report {
    let mut simulation = Simulation::new(config).expect("valid config");
    simulation.precondition(&mut |_| {}).expect("ages");
    simulation
        .run_phase(Workload::Events(&mut IterEvents(events.iter().copied())), Counting::ToEnd, &mut |_| {})
        .expect("the events fit the device");
    simulation.report()
}

fn replay(policy: DiscardPolicy, events: &[HostEvent]) -> Report {
    replay_with(&config(policy), events)
}

#[test]
fn delay_d_cancels_the_reallocated_part_and_merges_the_rest() {
    let report = replay(DiscardPolicy::DelayD, &delete_and_reallocate());
    let discard = &report.discard;
    assert_eq!((discard.received_commands, discard.issued_commands, discard.merged_commands), (2, 1, 1));
    assert_eq!(discard.cancelled_sectors, 4 * PAGE);
    assert_eq!(report.measured.counters.host_pages_trimmed, 28, "pages 104..132 are trimmed in one command");
    // The read of pages 100..132 after the last commit finds the 4 rewritten pages and nothing else.
    assert_eq!(report.measured.counters.unmapped_reads, 28);
}

#[test]
fn online_trims_everything_and_off_nothing() {
    let online = replay(DiscardPolicy::Online, &delete_and_reallocate());
    assert_eq!((online.discard.issued_commands, online.measured.counters.host_pages_trimmed), (2, 32));
    assert_eq!(online.measured.counters.unmapped_reads, 28, "the reallocated pages were written after their trim");
    let off = replay(DiscardPolicy::Off, &delete_and_reallocate());
    assert_eq!((off.discard.issued_commands, off.measured.counters.host_pages_trimmed), (0, 0));
    assert_eq!(off.measured.counters.unmapped_reads, 0);
}

/// Regression: a range the timer made due at a write's arrival was trimmed
/// after the write, wiping the data just written.
#[test]
fn a_range_due_at_a_write_is_trimmed_before_the_write() {
    let events = [
        event(0, HostOp::Write, 10, 8),
        event(1, HostOp::Discard, 10, 8),
        // No commit: the timer issues after twice the delay, at this write.
        event(30, HostOp::Write, 10, 8),
        event(31, HostOp::Read, 10, 8),
    ];
    let report = replay(DiscardPolicy::DelayD, &events);
    assert_eq!(report.discard.issued_commands, 1, "the range was due before the write cancelled it");
    assert_eq!(report.measured.counters.unmapped_reads, 0, "the rewritten pages must survive");
}

#[test]
fn a_request_beyond_the_device_names_its_position() {
    let mut simulation = Simulation::new(&config(DiscardPolicy::Online)).expect("valid config");
    let beyond = u64::from(simulation.geometry().logical_pages);
    let events = [event(0, HostOp::Write, 0, 1), event(0, HostOp::Write, beyond - 1, 2)];
    let error = simulation
        .run_phase(Workload::Events(&mut IterEvents(events.into_iter())), Counting::ToEnd, &mut |_| {})
        .expect_err("out of range");
    assert!(error.to_string().contains("host request #2"), "{error}");
}

fn replay_timed(config: &Config, events: &[HostEvent]) -> Report {
    let mut simulation = Simulation::new(config).expect("valid config");
    simulation.precondition(&mut |_| {}).expect("ages");
    simulation
        .run_phase(Workload::Events(&mut IterEvents(events.iter().copied())), Timed, &mut |_| {})
        .expect("replays");
    simulation.report()
}

#[test]
fn a_timed_replay_reaches_the_ftl_with_what_counting_mode_does() {
    let events = delete_and_reallocate();
    for policy in [DiscardPolicy::Off, DiscardPolicy::Online, DiscardPolicy::DelayD] {
        let counted = replay(policy, &events);
        let timed = replay_timed(&config(policy), &events);
        let (counted_ftl, timed_ftl) = (&counted.measured.counters, &timed.measured.counters);
        assert_eq!(counted_ftl.host_pages_written, timed_ftl.host_pages_written, "{policy:?}");
        assert_eq!(counted_ftl.host_pages_trimmed, timed_ftl.host_pages_trimmed, "{policy:?}");
        assert_eq!(counted_ftl.unmapped_reads, timed_ftl.unmapped_reads, "{policy:?}");
        assert_eq!(counted.discard, timed.discard, "{policy:?}");
        let report = timed.timed.expect("a timed replay reports time");
        let requests = 3 + 1 + 4 + timed.discard.issued_commands;
        assert_eq!(
            report.requests, requests,
            "{policy:?}: writes, the read, the commits' flushes and the trims issued"
        );
    }
}

#[test]
fn an_open_loop_replay_runs_in_trace_time_and_a_closed_loop_one_at_device_speed() {
    // Writes 10 ms apart: in trace time the run lasts as long as the trace.
    let events: Vec<HostEvent> = (0..20).map(|i| event(10 * i, HostOp::Write, 8 * i, 8)).collect();
    let mut open = config(DiscardPolicy::Off);
    open.timing.arrival = crate::timing::Arrival::Open;
    let open_report = replay_timed(&open, &events).timed.expect("timed");
    assert!(open_report.simulated_s >= 0.190, "the last write arrives at 190 ms: {}", open_report.simulated_s);
    // The same trace with absolute timestamps an hour in runs from its first event.
    let shifted: Vec<HostEvent> =
        events.iter().map(|e| HostEvent { time: SimNs(e.time.0 + 3_600 * 1_000 * MS), ..*e }).collect();
    let shifted_report = replay_timed(&open, &shifted).timed.expect("timed");
    assert_eq!(shifted_report.simulated_s, open_report.simulated_s);
    let mut closed = config(DiscardPolicy::Off);
    closed.timing.arrival = crate::timing::Arrival::Closed;
    let closed_report = replay_timed(&closed, &events).timed.expect("timed");
    assert!(
        closed_report.simulated_s < 0.010,
        "160 page programs on 4 dies take milliseconds: {}",
        closed_report.simulated_s
    );
}

/// Regression: with every page of a unit valid and the unit below the low
/// watermark, background GC copied whole blocks without ever freeing one, and
/// a timed replay never ended (this test hung).
#[test]
fn a_timed_replay_of_a_full_device_without_discards_ends() {
    let mut config = config(DiscardPolicy::Off);
    // 64 blocks per plane, 51 of them logical: filling the device leaves
    // every unit far below a low watermark of 40 free blocks.
    config.timing.gc_low_blocks = Some(40);
    let logical_pages = u64::from(Simulation::new(&config).expect("valid").geometry().logical_pages);
    let events: Vec<HostEvent> = (0..logical_pages / 64).map(|i| event(0, HostOp::Write, 64 * i, 64)).collect();
    let report = replay_timed(&config, &events);
    assert_eq!(report.measured.counters.host_pages_written, (logical_pages / 64) * 64);
    let timed = report.timed.expect("timed");
    assert!(timed.drained_s >= timed.simulated_s);
}

/// Reads, trims and writes of four pages, reads priority requests: a
/// synthetic mix whose reads and writes the stages pass as pages.
fn mixed_page_requests() -> Config {
    let mut config = config(DiscardPolicy::Online);
    config.workload.read_fraction = 0.2;
    config.workload.trim_fraction = 0.1;
    config.workload.request_pages = 4;
    config.host.priority = crate::host::stages::PriorityRule::Sync;
    config
}

/// Two runs of `config` to compare: the first takes the stages' page fast
/// path (checked), the second replays the events of the workload returned.
fn page_and_event_runs(config: &Config) -> (Simulation, Simulation, Synthetic) {
    let pages = Simulation::new(config).expect("valid configuration");
    assert!(pages.stages.passes_pages(), "the run must take the fast path");
    let events = Simulation::new(config).expect("valid configuration");
    let workload = Synthetic::new(&config.workload, events.geometry(), config.seed.wrapping_add(1));
    (pages, events, workload)
}

/// The counting loop's fast path (the synthetic workload's reads and writes
/// handed to the stages as page requests) ends exactly where the event path
/// ends: the same counters, host counts, DISCARD counts and erase counts.
#[test]
fn synthetic_page_requests_count_as_their_events_would() {
    let config = mixed_page_requests();
    // Enough writes for the small device to collect garbage.
    let requests = 20_000;
    let (mut pages, mut events, mut workload) = page_and_event_runs(&config);
    pages.run_phase(Workload::Synthetic(requests), Counting::ToEnd, &mut |_| {}).expect("runs");
    let geometry = *events.geometry();
    events
        .run_phase(
            Workload::Events(&mut SyntheticEvents::new(&mut workload, &geometry, requests, None)),
            Counting::ToEnd,
            &mut |_| {},
        )
        .expect("runs");
    let (pages, events) = (pages.report(), events.report());
    assert!(pages.measured.counters.gc_page_copies > 0 && pages.measured.counters.host_pages_trimmed > 0);
    assert!(pages.host.priority > 0, "reads are priority requests under the sync rule");
    assert_eq!(json(&pages.measured.counters), json(&events.measured.counters));
    assert_eq!(json(&pages.host), json(&events.host));
    assert_eq!(json(&pages.discard), json(&events.discard));
    assert_eq!(json(&pages.erase_counts), json(&events.erase_counts));
}

fn json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("serializes")
}

/// The timed engine's fast path (the synthetic workload's reads and writes
/// handed to the stages as page requests, [`StagedSource::next_page_request`])
/// gives the run its events give: the same timed report, counters, host
/// counts and DISCARD counts, open loop with priority bursts and closed loop.
#[test]
fn timed_synthetic_page_requests_run_as_their_events_would() {
    for arrival in [crate::timing::Arrival::Open, crate::timing::Arrival::Closed] {
        let mut config = mixed_page_requests();
        config.timing.arrival = arrival;
        config.timing.arrival_iops = 20_000;
        config.timing.priority_fraction = 0.1;
        let requests = 5_000;
        let (mut pages, mut events, mut workload) = page_and_event_runs(&config);
        pages.run_phase(Workload::Synthetic(requests), Timed, &mut |_| {}).expect("runs");
        let geometry = *events.geometry();
        let iops = (arrival == crate::timing::Arrival::Open).then_some(config.timing.arrival_iops);
        let arrivals = Arrivals::new(iops, config.timing.priority_fraction, config.seed.wrapping_add(2));
        let mut source = SyntheticEvents::new(&mut workload, &geometry, requests, Some(arrivals));
        events.run_phase(Workload::Events(&mut source), Timed, &mut |_| {}).expect("runs");
        let (pages, events) = (pages.report(), events.report());
        assert!(pages.measured.counters.host_pages_trimmed > 0 && pages.host.priority > 0);
        assert_eq!(json(&pages.timed), json(&events.timed), "{arrival:?}");
        assert_eq!(json(&pages.measured.counters), json(&events.measured.counters), "{arrival:?}");
        assert_eq!(json(&pages.host), json(&events.host), "{arrival:?}");
        assert_eq!(json(&pages.discard), json(&events.discard), "{arrival:?}");
    }
}

/// Ready-made timed requests (the timing experiments' sources) pass the
/// host stages, which count them, and reach the engine as they came, at
/// their own arrival times: the report equals the engine's own run of the
/// same requests on a fresh layer past the stages (how the experiments ran
/// before), open loop with priority bursts and closed loop. Reads and
/// writes only: the DISCARD stage issues trims as it schedules them, not
/// with the priority their request carried.
#[test]
fn ready_made_timed_requests_pass_the_stages_unchanged() {
    use crate::ftl::PageFtl;
    use crate::timing::{Arrival, Engine, SyntheticSource};
    for arrival in [Arrival::Open, Arrival::Closed] {
        let mut config = config(DiscardPolicy::Online);
        config.workload.read_fraction = 0.2;
        config.workload.request_pages = 4;
        config.timing.arrival = arrival;
        let requests = 5_000;
        let iops = (arrival == Arrival::Open).then_some(20_000);
        let source_of =
            |workload| SyntheticSource::new(workload, Arrivals::new(iops, 0.1, 7).with_priority_bursts(3, 1_000));
        let mut simulation = Simulation::new(&config).expect("valid configuration");
        let geometry = *simulation.geometry();
        let mut workload = Synthetic::new(&config.workload, &geometry, 5);
        let staged = simulation
            .run_phase(Workload::Requests(&mut source_of(&mut workload), requests), Timed, &mut |_| {})
            .expect("runs")
            .clone();
        let mut ftl = PageFtl::new(&geometry, &config.ftl, config.seed).expect("builds");
        let mut workload = Synthetic::new(&config.workload, &geometry, 5);
        let engine = Engine::new(&geometry, &config.timing, &config.ftl);
        let past = engine.run(&mut ftl, &mut source_of(&mut workload), requests, &mut |_| {}).expect("runs");
        assert!(staged.latency.priority.is_some(), "{arrival:?}");
        assert_eq!(json(&staged), json(&past), "{arrival:?}");
        let host = simulation.report().host;
        assert_eq!(host.reads + host.writes, requests, "the stages saw every request ({arrival:?})");
        assert!(host.priority > 0, "{arrival:?}");
    }
}
