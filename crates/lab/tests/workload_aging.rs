//! Workload aging and a settled start (issue 26): a replay's default aging
//! leaves the pages its trace never wrote invalid (on a raw tracefs capture
//! of a real ext4, no nandlab header); `--age-with` equals a replay of the
//! concatenated traces with the aging part not measured; a read-mostly
//! trace starts its counting and timed replays from one device state, the
//! aging's GC debt paid before measuring, so their WAF agree.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use nandlab_core::sim::AgingKind;
use nandlab_core::timing::Arrival;
use nandlab_core::{Config, ConfigBuilder, Report};
use nandlab_lab::replay::{replay, ReplayMode, TraceSource};
use nandlab_trace::{Op, ReadOptions};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A raw tracefs capture (block_rq_issue events) of ext4 on a loop device
/// mounted with `-o discard`, fsyncs included.
fn ext4_capture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../trace/tests/data/ext4-loop-discard-fsync.tracefs.gz")
}

fn small(assignments: &[&str]) -> Config {
    let mut builder = ConfigBuilder::preset("small").expect("small preset");
    for assignment in assignments {
        builder.set(assignment).expect("a valid assignment");
    }
    builder.build().expect("valid").0
}

fn replayed(trace: &Path, config: Config, mode: ReplayMode<'_>) -> Report {
    replay(&TraceSource::file(trace), config, mode, &mut |_| Ok(())).expect("replays")
}

/// 4 KiB pages the trace leaves holding data, replayed once in order
/// (writes map pages; a DISCARD unmaps the pages it covers): the least and
/// the most the device can hold, as a DISCARD's partly covered pages are
/// counted unmapped or not.
fn pages_left_by(trace: &Path) -> (BTreeSet<u64>, u64, u64) {
    let records = nandlab_trace::open(trace, None, &ReadOptions::default()).expect("opens");
    let sector_bytes = u64::from(records.header().sector_size_bytes);
    let mut written = BTreeSet::new();
    let mut fully_valid = BTreeSet::new();
    let mut partly_valid = BTreeSet::new();
    for record in records {
        let record = record.expect("reads");
        let (start, end) = (record.start.0 * sector_bytes, record.end().0 * sector_bytes);
        let touched = start / 4096..end.div_ceil(4096);
        match record.op {
            Op::Write => {
                for page in touched {
                    written.insert(page);
                    fully_valid.insert(page);
                    partly_valid.insert(page);
                }
            }
            Op::Discard => {
                for page in touched.clone() {
                    fully_valid.remove(&page);
                }
                for page in start.div_ceil(4096)..end / 4096 {
                    partly_valid.remove(&page);
                }
            }
            Op::Read | Op::Flush => {}
        }
    }
    (written, fully_valid.len() as u64, partly_valid.len() as u64)
}

#[test]
fn default_replay_aging_leaves_the_pages_the_trace_never_wrote_invalid() {
    let trace = ext4_capture();
    let mode = ReplayMode { fit: true, ..ReplayMode::default() };
    let report = replayed(&trace, small(&[]), mode);
    let aging = report.precondition.as_ref().expect("a replay ages by default");
    assert_eq!(aging.kind, AgingKind::Workload);
    assert!(aging.passes.expect("passes") >= 1);
    let logical = report.device.geometry.logical_pages;
    let valid = aging.valid_pages.expect("workload aging counts the valid pages");
    let (written, least, most) = pages_left_by(&trace);
    assert!((least..=most).contains(&valid), "{valid} valid pages, the trace leaves {least}..={most}");
    let invalid = u64::from(logical) - valid;
    let never_written = u64::from(logical) - written.len() as u64;
    assert!(never_written > 0, "the capture leaves part of the file system unwritten");
    assert!(invalid >= never_written, "{invalid} invalid pages, but {never_written} were never written");
    // Random fill, by contrast, leaves every logical page valid before the
    // trace's own DISCARDs.
    let filled = replayed(&trace, small(&["precondition.kind=\"random-fill\""]), mode);
    assert_eq!(filled.precondition.as_ref().expect("aged").kind, AgingKind::FillSteady);
}

/// `passes` copies of `aging` then `measured`, as one MSR Cambridge CSV
/// with times that keep increasing.
fn concatenated(dir: &Path, aging: &[String], passes: u64, measured: &[String]) -> PathBuf {
    let mut lines = Vec::new();
    let mut time = 128_166_372_000_000_000_u64;
    for line in (0..passes).flat_map(|_| aging.iter()).chain(measured) {
        time += 10;
        let rest = line.split_once(',').expect("an MSR line").1;
        lines.push(format!("{time},{rest}\n"));
    }
    let path = dir.join("concatenated.csv");
    std::fs::write(&path, lines.concat()).expect("writes");
    path
}

/// MSR Cambridge CSV lines: `count` requests over the first `span_pages`
/// pages, at pseudo-random addresses (a fixed LCG), a write every
/// `write_every` requests (1: writes only), 10 ms apart.
fn msr_lines(count: u64, span_pages: u64, write_every: u64, seed: u64) -> Vec<String> {
    let mut state = seed;
    (0..count)
        .map(|index| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let page = (state >> 33) % span_pages;
            let op = if index % write_every == 0 { "Write" } else { "Read" };
            format!("{},hm,0,{op},{},4096,1", 128_166_372_000_000_000 + index * 100_000, page * 4096)
        })
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.iter().map(|line| format!("{line}\n")).collect::<String>()).expect("writes");
}

/// The numbers of `value` (a report's counters) by key.
fn numbers(value: &Value) -> Vec<(String, u64)> {
    value
        .as_object()
        .expect("an object")
        .iter()
        .filter_map(|(key, value)| Some((key.clone(), value.as_u64()?)))
        .collect()
}

#[test]
fn age_with_equals_the_concatenated_traces_with_the_aging_part_not_measured() {
    let dir = tempfile::tempdir().expect("temporary directory");
    // A pass writes more pages than the flash holds, so GC finds blocks
    // the next pass has not yet invalidated, and copies.
    let logical = u64::from(small(&[]).validate().expect("valid").logical_pages);
    let aging_lines = msr_lines(20_000, logical, 1, 3);
    let measured_lines = msr_lines(3000, 8192, 2, 4);
    let (aging, measured) = (dir.path().join("aging.csv"), dir.path().join("measured.csv"));
    write_lines(&aging, &aging_lines);
    write_lines(&measured, &measured_lines);
    // The low cleaning watermark at the critical one: nothing to settle, so
    // the two runs differ only in where the measurement starts.
    let config = small(&["timing.gc_low_blocks=2"]);
    let mode = ReplayMode { age_with: Some(&aging), ..ReplayMode::default() };
    let aged = replayed(&measured, config.clone(), mode);
    let pre = aged.precondition.as_ref().expect("aged");
    assert!(pre.steady, "the aging settles within its budget");
    let passes = pre.passes.expect("passes");
    assert!(passes > 1, "the aging trace is looped ({passes} passes)");
    let debt = pre.debt_paid.as_ref().expect("settled");
    assert_eq!((debt.counters.gc_page_copies, debt.counters.erases), (0, 0));
    let whole = concatenated(dir.path(), &aging_lines, passes, &measured_lines);
    let mut unaged = config;
    unaged.precondition.enabled = false;
    let once = replayed(&whole, unaged, ReplayMode::default());
    let (aging_counts, measured_counts, whole_counts) = (
        numbers(&serde_json::to_value(&pre.phase.counters).expect("json")),
        numbers(&serde_json::to_value(&aged.measured.counters).expect("json")),
        numbers(&serde_json::to_value(&once.measured.counters).expect("json")),
    );
    for ((key, aging), ((_, measured), (_, whole))) in
        aging_counts.iter().zip(measured_counts.iter().zip(&whole_counts))
    {
        assert_eq!(aging + measured, *whole, "{key}: aging {aging} + measured {measured}");
    }
    assert!(whole_counts.iter().any(|(key, count)| key == "gc_page_copies" && *count > 0), "GC ran");
    assert_eq!(
        serde_json::to_value(&aged.erase_counts).expect("json"),
        serde_json::to_value(&once.erase_counts).expect("json"),
        "the same device at the end"
    );
}

#[test]
fn a_read_mostly_trace_starts_counting_and_timed_replays_from_one_settled_state() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let trace = dir.path().join("read-mostly.csv");
    // 10,000 requests 10 ms apart over the whole device, 500 of them writes.
    let logical = u64::from(small(&[]).validate().expect("valid").logical_pages);
    write_lines(&trace, &msr_lines(10_000, logical, 20, 7));
    let counted = replayed(&trace, small(&[]), ReplayMode::default());
    let timed = replayed(&trace, small(&[]), ReplayMode { timed: Some(Arrival::Open), ..ReplayMode::default() });
    for report in [&counted, &timed] {
        let aging = report.precondition.as_ref().expect("aged");
        assert_eq!(aging.kind, AgingKind::Workload);
        assert!(aging.debt_paid.is_some(), "the debt paid before measuring is reported");
    }
    assert_eq!(
        serde_json::to_value(&counted.precondition).expect("json"),
        serde_json::to_value(&timed.precondition).expect("json"),
        "counting and timed runs start from the same aged, settled device"
    );
    let (count_waf, timed_waf) = (counted.measured.waf.expect("writes"), timed.measured.waf.expect("writes"));
    assert!((timed_waf / count_waf - 1.0).abs() <= 0.25, "timed WAF {timed_waf} against counting WAF {count_waf}");
}

/// The aging budget stops a pass midway: the report says not steady even
/// when the rule's streak holds at that moment (a loose rule that holds
/// after two windows), as the `[precondition]` docs say.
#[test]
fn an_aging_stopped_by_its_budget_midway_through_a_pass_is_not_steady() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let trace = dir.path().join("writes.csv");
    let logical = u64::from(small(&[]).validate().expect("valid").logical_pages);
    // One pass writes the logical space three times; the budget is 1.5 of it.
    write_lines(&trace, &msr_lines(3 * logical, logical, 1, 11));
    let loose = [
        "precondition.max_device_writes=1.5",
        "precondition.steady_tolerance=0.99",
        "precondition.steady_windows=1",
        "precondition.window_device_fraction=0.05",
    ];
    let report = replayed(&trace, small(&loose), ReplayMode::default());
    let aging = report.precondition.as_ref().expect("aged");
    assert_eq!(aging.passes, Some(0), "the budget ran out inside the first pass");
    assert!(aging.final_window_waf.is_some(), "the rule saw windows: {aging:?}");
    assert!(!aging.steady, "a budget stop is never steady: {aging:?}");
}
