//! The emulated SSD through its block-device interface, without a front end: data reads back
//! (zeros where nothing is), a clean stop saves a state a restart resumes with the same counts in
//! either pace (a paced device's background GC included), a start given up leaves the state
//! resumable, and a state that does not fit (another configuration, a session that did not stop)
//! is refused by name.

use nandlab_core::{Config, ConfigBuilder};
use nandlab_emulate::{EmulateOptions, EmulatedSsd, Pace};
use nandlab_nbd::{BlockDevice, DaemonInfo};

fn config(seed: &str) -> Config {
    let mut builder = ConfigBuilder::preset("small").expect("small");
    builder.set("precondition.enabled=false").expect("key");
    builder.set(&format!("seed={seed}")).expect("key");
    builder.build().expect("valid").0
}

fn options(dir: &std::path::Path, seed: &str, pace: Pace) -> EmulateOptions {
    EmulateOptions { config: config(seed), data: Some(dir.join("data")), state: None, pace, record: None }
}

fn counts(ssd: &EmulatedSsd) -> serde_json::Value {
    let stats = ssd.stats(DaemonInfo { pid: 0, stop_requested: false }).expect("open");
    report_counts(&stats.report)
}

/// Every count of a report: what the host sent, the DISCARD stage, the flash, the wear.
fn report_counts(report: &nandlab_core::Report) -> serde_json::Value {
    serde_json::json!({
        "measured": report.measured,
        "erases": report.erase_counts,
        "host": report.host,
        "discard": report.discard,
        "precondition": report.precondition,
    })
}

/// Overwrites the first 4 MiB `rounds` times with 64 KiB writes, a flush and a discard each round.
fn workload(ssd: &EmulatedSsd, rounds: u8) {
    for round in 0..rounds {
        for chunk in 0..64u64 {
            ssd.write_at(chunk * 65_536, &[round + 1; 65_536], false).expect("write");
        }
        ssd.flush().expect("flush");
        ssd.discard(0, 65_536, false).expect("discard");
    }
}

#[test]
fn a_restart_resumes_the_device_and_a_state_that_does_not_fit_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = EmulatedSsd::open(&options(dir.path(), "1", Pace::None)).expect("open");
    workload(&first, 30);
    let mut page = vec![9; 4096];
    first.read_at(0, &mut page).expect("read");
    assert!(page.iter().all(|&byte| byte == 0), "discarded bytes read as zeros");
    first.read_at(65_536, &mut page).expect("read");
    assert!(page.iter().all(|&byte| byte == 30), "the last write reads back");
    let stopped = first.close().expect("close").expect("report");
    assert!(stopped.measured.counters.erases > 0, "the workload made GC work");

    let error = EmulatedSsd::open(&options(dir.path(), "2", Pace::None)).err().expect("another seed");
    assert!(error.to_string().contains("another configuration"), "{error}");

    let resumed = EmulatedSsd::open(&options(dir.path(), "1", Pace::None)).expect("resume");
    assert_eq!(counts(&resumed), report_counts(&stopped), "the restart replays the history to the same state");
    resumed.read_at(65_536, &mut page).expect("read");
    assert!(page.iter().all(|&byte| byte == 30), "the data survived the restart");
    workload(&resumed, 2);
    drop(resumed);

    let error = EmulatedSsd::open(&options(dir.path(), "1", Pace::None)).err().expect("not stopped cleanly");
    assert!(error.to_string().contains("did not stop cleanly"), "{error}");
}

/// Issue 29: a paced device's background GC (dies cleaning while the host is idle) is part of its
/// state. Its restart ran the history in counting mode and lost that GC (71,774 GC copies at the
/// stop, 62,760 after the restart); now every session runs again at its own pace and recorded
/// times, so every count after each restart is the stop's, over two restarts.
#[test]
fn a_paced_device_restarts_with_every_count_of_its_clean_stop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = EmulatedSsd::open(&options(dir.path(), "1", Pace::Real)).expect("open");
    idle_workload(&first, 40);
    let stopped = first.close().expect("close").expect("report");
    let counting = EmulatedSsd::open(&in_ram(config("1"))).expect("a counting twin");
    idle_workload(&counting, 40);
    let counted = counting.close().expect("close").expect("report");
    assert_ne!(
        stopped.measured.counters, counted.measured.counters,
        "the paced device cleaned in the background (more erases), which counting mode does not"
    );

    let resumed = EmulatedSsd::open(&options(dir.path(), "1", Pace::Real)).expect("resume");
    assert_eq!(counts(&resumed), report_counts(&stopped), "the restart of a paced device");
    idle_workload(&resumed, 10);
    let stopped = resumed.close().expect("close").expect("report");

    // The second session ran after its own start; a counting restart mixes paces in one history.
    let again = EmulatedSsd::open(&options(dir.path(), "1", Pace::None)).expect("resume");
    assert_eq!(counts(&again), report_counts(&stopped), "the second restart, in the other pace");
}

/// [`workload`] with idle gaps of 5 ms between rounds, in which a paced device's dies clean.
fn idle_workload(ssd: &EmulatedSsd, rounds: u8) {
    for _ in 0..rounds {
        workload(ssd, 1);
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Issue 29: a start that fails after opening the device (a front end that does not start) gave
/// the state up as unclean; abandoned, it leaves the state as it was.
#[test]
fn an_abandoned_start_leaves_the_state_resumable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = EmulatedSsd::open(&options(dir.path(), "1", Pace::None)).expect("open");
    workload(&first, 8);
    let stopped = first.close().expect("close").expect("report");
    let saved = std::fs::read(dir.path().join("data.state")).expect("saved");
    let failed = EmulatedSsd::open(&options(dir.path(), "1", Pace::None)).expect("resume");
    failed.abandon().expect("abandon");
    assert_eq!(std::fs::read(dir.path().join("data.state")).expect("kept"), saved, "the state is as it was");
    let resumed = EmulatedSsd::open(&options(dir.path(), "1", Pace::None)).expect("resume after the failed start");
    assert_eq!(counts(&resumed), report_counts(&stopped));

    let fresh = tempfile::tempdir().expect("tempdir");
    EmulatedSsd::open(&options(fresh.path(), "1", Pace::None)).expect("open").abandon().expect("abandon");
    assert!(!fresh.path().join("data.state").exists(), "a new device abandoned leaves no state");
}

#[test]
fn requests_outside_the_device_are_refused_and_change_nothing() {
    let ssd = EmulatedSsd::open(&EmulateOptions {
        config: config("1"),
        data: None,
        state: None,
        pace: Pace::None,
        record: None,
    })
    .expect("open");
    let size = ssd.size_bytes();
    assert!(ssd.write_at(size - 100, &[1; 4096], false).is_err());
    assert!(ssd.discard(size, 1, false).is_err());
    assert_eq!(counts(&ssd)["host"]["writes"], 0);
}

fn preset(name: &str, assignments: &[&str]) -> Config {
    let mut builder = ConfigBuilder::preset(name).expect("preset");
    for assignment in assignments {
        builder.set(assignment).expect("key");
    }
    builder.build().expect("valid").0
}

fn in_ram(config: Config) -> EmulateOptions {
    EmulateOptions { config, data: None, state: None, pace: Pace::None, record: None }
}

/// Issue 26: a fresh emulated device is fresh — no random-fill aging, whose
/// debt would land in the session — so `mkfs` (a DISCARD of the whole
/// device) and 100 MiB of writes after it cost about one flash write each.
#[test]
fn a_fresh_femu_device_writes_100_mib_after_mkfs_at_a_waf_below_2() {
    let ssd = EmulatedSsd::open(&in_ram(preset("femu-32g", &[]))).expect("open");
    ssd.discard(0, ssd.size_bytes(), false).expect("mkfs discards the device");
    let chunk = vec![7_u8; 1 << 20];
    for mib in 0..100_u64 {
        ssd.write_at(mib << 20, &chunk, false).expect("write");
    }
    ssd.flush().expect("flush");
    let report = ssd.close().expect("close").expect("report");
    assert!(report.precondition.is_none(), "a live device is not aged by default");
    assert_eq!(report.measured.counters.host_pages_written, 25_600);
    let waf = report.measured.waf.expect("written");
    assert!(waf < 2.0, "WAF {waf} after mkfs on a fresh device");
}

/// Random fill stays available on request, its GC debt paid before the
/// session; workload aging has nothing to repeat and is refused by name.
#[test]
fn random_fill_is_asked_for_and_workload_aging_is_refused() {
    let aged = EmulatedSsd::open(&in_ram(preset("small", &["precondition.kind=\"random-fill\""]))).expect("open");
    let report = aged.close().expect("close").expect("report");
    let aging = report.precondition.expect("aged on request");
    assert!(aging.debt_paid.is_some(), "the debt is paid before the session");
    assert_eq!(report.measured.counters.flash_pages_programmed, 0, "the session has not begun");
    let error = EmulatedSsd::open(&in_ram(preset("small", &["precondition.kind=\"workload\""])))
        .err()
        .expect("no workload to repeat");
    assert!(error.to_string().contains("precondition.kind"), "{error}");
}
