//! Issue 13's checks on a trace as a user would bring it: raw tracefs text
//! of Delay-D's UAV single-erase scenario on a 1 GiB ext4 mounted with
//! `-o discard` on a loop device, written by echo to /sys/kernel/tracing
//! (no nandlab header; scripts/capture-raw-uav.sh), with what dumpe2fs and
//! debugfs said about the journal right after.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::journal_facts;
use nandlab_core::ftl::DiscardHandling;
use nandlab_core::host::discard::DiscardPolicy;
use nandlab_core::{Config, ConfigBuilder, Report};
use nandlab_lab::replay::{replay, FitSize, ReplayMode, SizeOrigin, TraceSource};
use nandlab_trace::journal::infer_region;
use nandlab_trace::{open, Op, ReadOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn trace() -> PathBuf {
    data("uav-single-ext4-1g-discard.tracefs.gz")
}

#[test]
fn the_journal_region_is_what_the_file_system_says_and_commits_number_in_the_hundreds() {
    let (region, wraps) = infer_region(open(&trace(), None, &ReadOptions::default()).unwrap()).unwrap();
    assert_eq!(region, journal_facts(&data("uav-single-ext4-1g-discard.journal.txt")).extents);
    assert!(wraps >= 1, "jbd2's log wrapped");
    let report = run(DiscardPolicy::DelayD, DiscardHandling::Exact, &[]);
    assert!((100..10_000).contains(&report.host.journal_commits), "{} commits", report.host.journal_commits);
}

/// A 1 GiB `small` device (25 % spare), aged to steady state by random
/// fill (every LBA valid, then random overwrites): the device on which the
/// policies' order is a property of DISCARD alone. Under a replay's default
/// workload aging each policy ages its own device (the trace looped with or
/// without its DISCARDs), and on this short trace their GC copies differ by
/// about 1 % either way.
fn config(handling: DiscardHandling, overrides: &[&str]) -> Config {
    let mut builder = ConfigBuilder::preset("small").unwrap();
    builder.set("precondition.kind=\"random-fill\"").unwrap();
    for assignment in overrides {
        builder.set(assignment).unwrap();
    }
    let mut config = builder.build().unwrap().0;
    config.ftl.discard = handling;
    config
}

fn run(policy: DiscardPolicy, handling: DiscardHandling, overrides: &[&str]) -> Report {
    let mode = ReplayMode {
        policy: Some(policy),
        device_size: Some(FitSize { bytes: 1 << 30, origin: SizeOrigin::Given }),
        ..ReplayMode::default()
    };
    replay(&TraceSource::file(&trace()), config(handling, overrides), mode, &mut |_| Ok(())).unwrap()
}

/// Counted from the trace alone, for DISCARDs issued at the end of the
/// trace. The sectors a DISCARD makes wait are those no earlier DISCARD
/// still waits for (asked for, not rewritten since); it is cancelled when it
/// made some wait and every one of them is written after it, and redundant
/// when it made none wait (docs/delay-d.md, "Counters").
fn rewritten_before_the_end() -> (u64, u64) {
    let records: Vec<_> = open(&trace(), None, &ReadOptions::default()).unwrap().map(Result::unwrap).collect();
    // Per sector: the index of the last write and of the last DISCARD.
    let (mut last_write, mut last_discard) = (BTreeMap::new(), BTreeMap::new());
    let mut discards = Vec::new();
    let mut redundant = 0;
    for (index, record) in records.iter().enumerate() {
        let sectors = record.start.0..record.end().0;
        match record.op {
            Op::Write => sectors.for_each(|sector| {
                last_write.insert(sector, index);
            }),
            Op::Discard => {
                let pending = |sector: &u64| {
                    last_discard.get(sector).is_some_and(|&at| last_write.get(sector).is_none_or(|&w| w < at))
                };
                let own: Vec<u64> = sectors.clone().filter(|sector| !pending(sector)).collect();
                if own.is_empty() {
                    redundant += 1;
                } else {
                    discards.push((index, own));
                }
                sectors.for_each(|sector| {
                    last_discard.insert(sector, index);
                });
            }
            Op::Read | Op::Flush => {}
        }
    }
    let cancelled = discards
        .iter()
        .filter(|(index, own)| own.iter().all(|sector| last_write.get(sector).is_some_and(|w| w > index)))
        .count();
    (cancelled as u64, redundant)
}

#[test]
fn delay_d_cancels_exactly_the_discards_rewritten_before_their_issue() {
    // A delay longer than the trace: every range is issued at its end.
    let report = run(DiscardPolicy::DelayD, DiscardHandling::Exact, &["discard.delay_ms=86400000"]);
    let (cancelled, redundant) = rewritten_before_the_end();
    eprintln!("cancelled {cancelled}, redundant {redundant}: {:?}", report.discard);
    assert!(cancelled > 100, "single-erase rewrites most deleted images' blocks: {cancelled}");
    assert_eq!(report.discard.cancelled_commands, cancelled);
    assert_eq!(report.discard.redundant_commands, redundant);
}

#[test]
fn device_discard_modes_order_the_policies_as_they_must() {
    let gc_copies = |policy, handling| run(policy, handling, &[]).measured.counters.gc_page_copies;
    let exact: Vec<u64> = [DiscardPolicy::Online, DiscardPolicy::DelayD, DiscardPolicy::Off]
        .into_iter()
        .map(|policy| gc_copies(policy, DiscardHandling::Exact))
        .collect();
    eprintln!("exact: Enabled, Delay-D, Disabled GC copies {exact:?}");
    assert!(exact[0] <= exact[1] && exact[1] <= exact[2], "{exact:?}");
    assert!(exact[0] < exact[2], "DISCARDs save GC copies on an aged device: {exact:?}");
    let ignored = [DiscardPolicy::Online, DiscardPolicy::Off].map(|policy| gc_copies(policy, DiscardHandling::Ignored));
    assert_eq!(ignored[0], ignored[1], "an ignored DISCARD changes nothing");
    for policy in [DiscardPolicy::Online, DiscardPolicy::DelayD, DiscardPolicy::Off] {
        let counters = run(policy, DiscardHandling::Dftl, &[]).measured.counters;
        eprintln!("dftl {policy:?}: {counters:?}");
        assert!(counters.translation_pages_written > 0, "{policy:?}");
    }
}
