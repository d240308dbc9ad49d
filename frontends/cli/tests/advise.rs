//! `nandlab advise` on a raw tracefs capture of a real ext4 (no nandlab
//! header): at least four configurations ranked with years of life and p99
//! latencies, the same in JSON, and every row re-runnable from its keys.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};

/// The raw capture as the kernel wrote it, gzip-compressed (the readers take gzip as it is).
fn raw_ext4_capture() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/lab/tests/data/uav-single-ext4-1g-discard.tracefs.gz")
}

fn nandlab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_nandlab")).args(args).stdin(Stdio::null()).output().expect("nandlab runs")
}

#[test]
fn advise_ranks_every_mechanism_that_applies_by_years_of_life() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = raw_ext4_capture();
    let json = dir.path().join("advise.json");
    let out = dir.path().join("report");
    let trace_arg = trace.to_str().unwrap();
    let output = nandlab(&[
        "advise",
        trace_arg,
        "--preset",
        "small",
        "--fit",
        "--json",
        json.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let advice: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("JSON");
    let ranked = advice["ranked"].as_array().expect("ranked");
    assert!(ranked.len() >= 4, "{stdout}");
    let names: Vec<&str> = ranked.iter().map(|row| row["name"].as_str().unwrap()).collect();
    for expected in ["discard off", "discard online", "discard delay-d", "discard periodic"] {
        assert!(names.contains(&expected), "{names:?}");
    }
    // The capture has jbd2 commits: journal separation applies.
    assert!(advice["traits"]["journal_commits"].as_u64().unwrap() > 0);
    assert!(names.iter().any(|name| name.ends_with("journal separation")), "{names:?}");
    let years: Vec<f64> = ranked.iter().map(|row| row["years_to_first_worn"].as_f64().expect("years")).collect();
    assert!(years.iter().all(|years| *years > 0.0), "{years:?}");
    for row in ranked {
        assert!(row["p99_write_us"].as_f64().expect("p99 write") > 0.0, "{row}");
        assert!(stdout.contains(row["name"].as_str().unwrap()), "{stdout}");
    }
    for file in ["report.html", "advise.csv", "advise-years.svg", "summary.md"] {
        assert!(out.join(file).is_file(), "{file}");
    }

    // The best row, re-run as `nandlab replay` with its keys, gives its figures.
    let best = &ranked[0];
    let mut args = vec!["replay", trace_arg, "--preset", "small", "--fit", "--timing", "--json", "-"];
    let sets: Vec<String> =
        best["overrides"].as_array().unwrap().iter().map(|key| key.as_str().unwrap().to_owned()).collect();
    for set in &sets {
        args.extend(["--set", set.as_str()]);
    }
    let replayed = nandlab(&args);
    assert!(replayed.status.success(), "{}", String::from_utf8_lossy(&replayed.stderr));
    let report: serde_json::Value = serde_json::from_slice(&replayed.stdout).expect("replay JSON");
    assert_eq!(report["measured"]["gc_page_copies"], best["gc_page_copies"]);
    assert_eq!(report["measured"]["waf"], best["waf"]);
}

#[test]
fn advise_refuses_a_rate_that_is_not_a_positive_number() {
    let output = nandlab(&["advise", "no-such.trace", "--gb-per-day", "0"]);
    assert_eq!(output.status.code(), Some(2), "refused input");
    assert!(String::from_utf8_lossy(&output.stderr).contains("--gb-per-day 0"));
}
