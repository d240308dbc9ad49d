//! The one pipeline: every translation layer × counting/timed × DISCARD
//! policy × classifier runs one short workload through the same driver, and
//! the invariants that hold for all of them are checked (the layer's own
//! after every call, the run's at the end); aging before a replay. (The open-channel layer's closed forms in the shared engine are
//! with the engine's own tests, `timing/tests.rs`.)

mod common;

use nandlab_convert::{f64_of, saturating};
use nandlab_core::ftl::LayerKind;
use nandlab_core::host::classify::WriteFlags;
use nandlab_core::host::discard::{DiscardPolicy, SectorRange};
use nandlab_core::host::event::{HostEvent, HostOp};
use nandlab_core::sim::{Counting, Timed, Workload};
use nandlab_core::units::SimNs;
use nandlab_core::workload::IterEvents;
use nandlab_core::{Config, Report, Simulation};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const MS: u64 = 1_000_000;
/// 4 KiB pages of 512-byte sectors.
const PAGE: u64 = 8;
/// The journal region of the synthetic file system: its first 256 pages.
const JOURNAL_PAGES: u64 = 256;

/// A file-system-like event stream: data writes (some partial pages), a
/// circular journal written by `jbd2` with FUA commits, DISCARDs of earlier
/// data, reads, and flushes; deterministic per seed.
fn workload(seed: u64, events: usize, logical_pages: u64) -> Vec<HostEvent> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let data_pages = logical_pages * 6 / 10 - JOURNAL_PAGES;
    let mut journal_head = 0;
    let mut written: Vec<(u64, u64)> = Vec::new();
    (0..events)
        .map(|index| {
            let time = SimNs(index as u64 * MS / 4);
            let event = |op, start, sectors| HostEvent::new(time, op, SectorRange::new(start, sectors));
            match rng.random_range(0..10) {
                0..=4 => {
                    let first = JOURNAL_PAGES + rng.random_range(0..data_pages - 16);
                    let pages = rng.random_range(1..16);
                    written.push((first, pages));
                    // Every fourth data write ends in the middle of a page.
                    let sectors = pages * PAGE - if index % 4 == 0 { 3 } else { 0 };
                    event(HostOp::Write, first * PAGE, sectors)
                }
                5 | 6 => {
                    let start = journal_head * PAGE;
                    journal_head = (journal_head + 2) % JOURNAL_PAGES;
                    let commit = index % 3 == 0;
                    let flags = WriteFlags { fua: commit, preflush: commit, sync: true, meta: false };
                    HostEvent {
                        flags,
                        journal_thread: true,
                        journal_commit: commit,
                        ..event(HostOp::Write, start, 2 * PAGE)
                    }
                }
                7 => match written.pop() {
                    Some((first, pages)) => event(HostOp::Discard, first * PAGE, pages * PAGE),
                    None => event(HostOp::Flush, 0, 0),
                },
                8 => event(HostOp::Read, rng.random_range(0..logical_pages - 8) * PAGE, 8 * PAGE),
                _ => event(HostOp::Flush, 0, 0),
            }
        })
        .collect()
}

fn config(kind: LayerKind, policy: DiscardPolicy, classifier: &str) -> Config {
    let (name, over_provisioning) = match kind {
        LayerKind::Page | LayerKind::Telomere => ("page", 0.25),
        LayerKind::OpenChannel => ("open-channel", 0.25),
        // Well below WAO-GC's utilization bound (0.74 with Telomere's latencies).
        LayerKind::WaoGc => ("wao-gc", 0.4),
    };
    let (config, _) = common::config(
        "small",
        &[
            &format!("ftl.kind=\"{name}\""),
            &format!("device.over_provisioning={over_provisioning}"),
            &format!("host.classifier=\"{classifier}\""),
            "pblk.write_buffer_pages=64",
            &format!("pblk.separate={}", classifier != "none"),
            "discard.delay_ms=20",
            "precondition.fill_fraction=0.5",
            "precondition.overwrite=false",
            "seed=3",
        ],
    );
    let mut config = config;
    config.discard.policy = policy;
    config
}

/// `checked`: the layer's invariants are checked after each request, and at the end.
fn run(config: &Config, events: &[HostEvent], timed: bool, checked: bool) -> Report {
    let journal = [SectorRange::new(0, JOURNAL_PAGES * PAGE)];
    let mut simulation = Simulation::with_journal(config, &journal).expect("valid configuration");
    if checked {
        simulation = simulation.checked();
    }
    simulation.precondition(&mut |_| {}).expect("ages");
    let mut source = IterEvents(events.iter().copied());
    if timed {
        simulation.run_phase(Workload::Events(&mut source), Timed, &mut |_| {}).expect("replays timed");
    } else {
        simulation.run_phase(Workload::Events(&mut source), Counting::ToEnd, &mut |_| {}).expect("replays");
    }
    simulation.check_invariants().expect("the layer's invariants hold at the end");
    simulation.report()
}

/// Pages each write touches: what the translation layer must account for.
fn written_pages(events: &[HostEvent]) -> u64 {
    events
        .iter()
        .filter(|event| event.op == HostOp::Write)
        .map(|event| event.sectors.end.div_ceil(PAGE) - event.sectors.start / PAGE)
        .sum()
}

#[test]
fn every_layer_mode_policy_and_classifier_keeps_the_invariants() {
    let policies = [DiscardPolicy::Off, DiscardPolicy::Online, DiscardPolicy::DelayD, DiscardPolicy::Periodic];
    for kind in [LayerKind::Page, LayerKind::OpenChannel, LayerKind::WaoGc] {
        let logical_pages =
            u64::from(config(kind, DiscardPolicy::Off, "none").validate().expect("valid").logical_pages);
        let events = workload(11, 6_000, logical_pages);
        let expected_pages = written_pages(&events);
        for policy in policies {
            for classifier in ["none", "journal"] {
                let config = config(kind, policy, classifier);
                if kind == LayerKind::WaoGc && classifier != "none" {
                    // WAO-GC has one write point: a classifier's streams would merge unseen.
                    let refused = Simulation::new(&config).err().expect("WAO-GC refuses a classifier");
                    assert!(refused.to_string().contains("host.classifier"), "{refused}");
                    continue;
                }
                let counted = run(&config, &events, false, true);
                let timed = run(&config, &events, true, true);
                let case = format!("{kind:?} {policy:?} classifier {classifier}");
                for report in [&counted, &timed] {
                    let measured = &report.measured.counters;
                    assert_eq!(measured.host_pages_written, expected_pages, "{case}: host pages in = pages accounted");
                    let per_stream: u64 = measured.stream_host_pages_written.iter().sum();
                    assert_eq!(per_stream, expected_pages, "{case}: every page in some stream");
                    assert!(
                        report.measured.waf.expect("pages written") >= 1.0,
                        "{case}: WAF {:?}",
                        report.measured.waf
                    );
                    assert_eq!(
                        report.host.writes + report.host.reads + report.host.discards + report.host.flushes,
                        6_000
                    );
                    let aging = report.precondition.as_ref().expect("aged");
                    let half = saturating::<u64>((f64_of(logical_pages) * 0.5).round());
                    assert_eq!(aging.phase.counters.host_pages_written, half, "{case}: half filled");
                }
                assert_eq!(counted.discard, timed.discard, "{case}: the DISCARD stage does not depend on time");
                assert_eq!(counted.measured.counters.host_pages_trimmed, timed.measured.counters.host_pages_trimmed);
                let journal_stream = counted.measured.counters.stream_host_pages_written.get(1).copied().unwrap_or(0);
                assert_eq!(journal_stream > 0, classifier == "journal", "{case}: journal writes get their own stream");
                if policy == DiscardPolicy::Off {
                    assert_eq!(counted.measured.counters.host_pages_trimmed, 0, "{case}");
                }
                let again = run(&config, &events, true, false);
                assert_eq!(
                    serde_json::to_string(&again).expect("serializes"),
                    serde_json::to_string(&timed).expect("serializes"),
                    "{case}: deterministic per seed"
                );
            }
        }
    }
}

/// A replay that rewrites less than the device holds causes no GC on an
/// empty device, and GC copies once the device is aged to steady state.
#[test]
fn aging_before_a_replay_shows_the_gc_a_fresh_device_hides() {
    let (fresh, geometry) = common::config("small", &["precondition.enabled=false"]);
    let logical_pages = u64::from(geometry.logical_pages);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let events: Vec<HostEvent> = (0..logical_pages / 2)
        .map(|_| {
            HostEvent::new(SimNs(0), HostOp::Write, SectorRange::new(rng.random_range(0..logical_pages) * PAGE, PAGE))
        })
        .collect();
    let replay = |config: &Config| {
        let mut simulation = Simulation::new(config).expect("valid");
        simulation.precondition(&mut |_| {}).expect("ages");
        simulation
            .run_phase(Workload::Events(&mut IterEvents(events.iter().copied())), Counting::ToEnd, &mut |_| {})
            .expect("replays");
        simulation.report()
    };
    let on_fresh = replay(&fresh);
    assert!(on_fresh.precondition.is_none());
    assert_eq!(on_fresh.measured.counters.gc_page_copies, 0, "half the device rewritten once fits in the spare space");
    let (aged, _) = common::config("small", &[]);
    let on_aged = replay(&aged);
    let aging = on_aged.precondition.as_ref().expect("the report names the aging");
    assert!(aging.steady, "the default aging reaches a steady state");
    assert!(aging.phase.counters.host_pages_written >= logical_pages, "aging wrote the device at least once");
    assert!(on_aged.measured.counters.gc_page_copies > 0, "an aged device collects while the trace runs");
    assert_eq!(on_aged.measured.counters.host_pages_written, logical_pages / 2, "aging is reported apart");
}

/// Steady state with the workload's own mix: with trims in the mix the
/// aging reaches a steady WAF and the measured WAF matches it.
#[test]
fn aging_uses_the_workloads_own_mix() {
    let (config, _) = common::config("small", &["workload.trim_fraction=0.2", "workload.requests=40000"]);
    let report = nandlab_core::run(&config, &mut |_| {}).expect("runs");
    let aging = report.precondition.as_ref().expect("aged");
    assert!(aging.steady);
    assert!(aging.phase.counters.host_pages_trimmed > 0, "the aging mix includes the workload's trims");
    let settled = aging.final_window_waf.expect("windows");
    let measured = report.measured.waf.expect("writes");
    assert!((measured - settled).abs() < 0.06 * settled, "measured {measured:.3} vs settled {settled:.3}");
}
