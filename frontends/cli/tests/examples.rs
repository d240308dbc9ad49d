//! Every configuration in `examples/` runs, in counting and in timed mode,
//! so the examples cannot rot: each has `[[job]]` tables whose per-job
//! results add up to the device's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn examples() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/ exists")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
}

fn run(example: &Path, timing: &str) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_nandlab"))
        .args(["run", example.to_str().expect("utf-8 path"), "--timing", timing, "--json", "-"])
        .stdin(Stdio::null())
        .output()
        .expect("nandlab runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{} --timing {timing}: {stderr}", example.display());
    serde_json::from_slice(&output.stdout).expect("JSON report")
}

fn number(value: &serde_json::Value, key: &str) -> f64 {
    value[key].as_f64().unwrap_or_else(|| panic!("{key} in {value}"))
}

#[test]
fn every_example_runs_and_its_jobs_add_up() {
    let files = examples();
    let names: Vec<String> =
        files.iter().map(|file| file.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for expected in ["hot-cold-streams.toml", "mqsim-two-flows.toml", "priority-logger.toml"] {
        assert!(names.iter().any(|name| name == expected), "examples/{expected} is missing: {names:?}");
    }
    for example in &files {
        let counted = run(example, "off");
        let jobs = counted["jobs"].as_array().expect("per-job results");
        assert!(jobs.len() >= 2, "{}: {jobs:?}", example.display());
        let measured = &counted["measured"];
        for key in ["requests", "host_pages_written", "flash_pages_programmed", "gc_page_copies"] {
            let sum: f64 = jobs.iter().map(|job| number(job, key)).sum();
            assert_eq!(sum, number(measured, key), "{}: {key}", example.display());
        }

        let timed = run(example, "on");
        let timed = &timed["timed"];
        let jobs = timed["jobs"].as_array().expect("per-job timed results");
        let requests: f64 = jobs.iter().map(|job| number(job, "requests")).sum();
        assert_eq!(requests, number(timed, "requests"), "{}", example.display());
        assert!(jobs.iter().all(|job| number(&job["latency"], "p99_us") > 0.0), "{}", example.display());
    }
}
