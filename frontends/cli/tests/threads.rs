//! `nandlab run --threads N`: the JSON report of a static-allocation run on
//! two threads is the one-thread report apart from the wall time, and what
//! the threads cannot run is refused with exit status 2, naming the key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output, Stdio};

const STATIC_SMALL: [&str; 10] = [
    "run",
    "--preset",
    "small",
    "--set",
    "ftl.allocation=static",
    "--set",
    "workload.request_pages=3",
    "--set",
    "workload.trim_fraction=0.1",
    "-q",
];

fn nandlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nandlab")).args(args).stdin(Stdio::null()).output().expect("nandlab runs")
}

/// The report of a run on `threads` threads (with `extra` arguments), without its wall time.
fn report(threads: &str, extra: &[&str]) -> serde_json::Value {
    let output = nandlab(&[&STATIC_SMALL[..], &["--threads", threads, "--json", "-"], extra].concat());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert!(report.as_object_mut().and_then(|fields| fields.remove("wall_s")).is_some(), "a wall time");
    report
}

#[test]
fn two_threads_write_the_one_thread_report() {
    let one = report("1", &[]);
    assert_eq!(report("2", &[]), one);
    assert_ne!(report("2", &["--seed", "99"]), one, "another seed, another report");
}

#[test]
fn what_threads_cannot_run_is_refused_naming_the_key() {
    for (extra, key) in [
        (&["--set", "ftl.allocation=round-robin"][..], "ftl.allocation"),
        (&["--set", "ftl.gc_policy=d-choices"][..], "ftl.gc_policy"),
        (&["--timing", "on"][..], "--threads"),
        (&["--threads", "3"][..], "--threads"),
    ] {
        let threads = if extra.contains(&"--threads") { &[][..] } else { &["--threads", "2"][..] };
        let output = nandlab(&[&STATIC_SMALL[..], threads, extra].concat());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(&format!("`{key}`")), "{extra:?} names {key}: {stderr}");
    }
}
