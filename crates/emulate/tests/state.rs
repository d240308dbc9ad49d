//! The emulated SSD through its block-device interface, without a front end: data reads back
//! (zeros where nothing is), a clean stop saves a state a restart resumes with the same counts,
//! and a state that does not fit (another configuration, a session that did not stop) is refused
//! by name.

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
    serde_json::json!({ "measured": stats.report.measured, "erases": stats.report.erase_counts, "host": stats.report.host })
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

    // Counting mode: a timed device would start background GC at once on its idle dies.
    let resumed = EmulatedSsd::open(&options(dir.path(), "1", Pace::None)).expect("resume");
    let report =
        serde_json::json!({ "measured": stopped.measured, "erases": stopped.erase_counts, "host": stopped.host });
    assert_eq!(counts(&resumed), report, "the restart replays the history to the same state");
    resumed.read_at(65_536, &mut page).expect("read");
    assert!(page.iter().all(|&byte| byte == 30), "the data survived the restart");
    workload(&resumed, 2);
    drop(resumed);

    let error = EmulatedSsd::open(&options(dir.path(), "1", Pace::None)).err().expect("not stopped cleanly");
    assert!(error.to_string().contains("did not stop cleanly"), "{error}");
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
