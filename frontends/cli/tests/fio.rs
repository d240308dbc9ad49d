//! `nandlab run JOB.fio` through the binary: fio's own example job files
//! (Debian's fio-examples) each run or are refused with a message naming
//! file, line and option; a two-job file's sizes, depths and rates come out
//! in the report as the file says; an unknown option is named in a warning.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Where Debian's fio-examples package puts fio's example job files.
const FIO_EXAMPLES: &str = "/usr/share/doc/fio/examples";

fn nandlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nandlab"))
        .args(args)
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .expect("nandlab runs")
}

fn two_jobs() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/fio-two-jobs.fio").display().to_string()
}

/// A job file for one test, removed at its end.
struct JobFile(PathBuf);

impl JobFile {
    fn new(name: &str, text: &str) -> Self {
        let path = std::env::temp_dir().join(format!("nandlab-cli-{name}-{}.fio", std::process::id()));
        std::fs::write(&path, text).unwrap();
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for JobFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn every_fio_example_runs_or_is_refused_naming_file_line_and_option() {
    let mut examples: Vec<PathBuf> = std::fs::read_dir(FIO_EXAMPLES)
        .unwrap_or_else(|error| panic!("{FIO_EXAMPLES}: {error} (install Debian's fio-examples, .ci/apt-packages)"))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "fio"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 50, "{} examples in {FIO_EXAMPLES}", examples.len());
    let (mut ran, mut refused) = (Vec::new(), Vec::new());
    for example in &examples {
        let name = example.file_name().unwrap().to_string_lossy().into_owned();
        // A fresh device: the examples' jobs, not the aging, are under test.
        let output = nandlab(&["run", example.to_str().unwrap(), "--set", "precondition.enabled=false", "--quiet"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        match output.status.code() {
            Some(0) => ran.push(name.clone()),
            Some(2) => {
                let error = stderr.lines().find(|line| line.starts_with("error: ")).unwrap_or_default();
                let place = format!("fio job file {}:", example.display());
                assert!(error.contains(&place) && error.contains('`'), "{name}: {stderr}");
                refused.push(format!("{name}: {error}"));
            }
            status => panic!("{name}: exit {status:?}: {stderr}"),
        }
        for warning in stderr.lines().filter(|line| line.starts_with("warning: fio job file")) {
            assert!(warning.contains(&format!("{}:", example.display())), "{name}: {warning}");
        }
    }
    println!("ran ({}): {}", ran.len(), ran.join(", "));
    println!("refused ({}):\n{}", refused.len(), refused.join("\n"));
    // fio-examples 3.33: the block I/O jobs that fit the device and need no
    // sequencing run (docs/fio.md lists them).
    for expected in
        ["aio-read.fio", "basic-verify.fio", "fixed-rate-submission.fio", "poisson-rate-submission.fio", "zipf.fio"]
    {
        assert!(ran.iter().any(|name| name == expected), "{expected} should run; ran: {ran:?}");
    }
}

fn json(args: &[&str]) -> serde_json::Value {
    let output = nandlab(args);
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON report")
}

#[test]
fn a_two_job_file_runs_with_the_files_sizes_depths_and_rates() {
    let file = two_jobs();
    let counted = json(&["run", &file, "--preset", "small", "--json", "-"]);
    let configured = &counted["config"]["job"];
    let jobs = &counted["jobs"];
    // writer: randwrite, bs=8k, iodepth=16, size=16m, rate_iops=2000.
    assert_eq!(configured[0]["name"], "writer");
    assert_eq!(configured[0]["queue_depth"], 16);
    assert_eq!(configured[0]["rate_iops"], 2000);
    assert_eq!(configured[0]["request_pages"], 2);
    assert_eq!(jobs[0]["requests"], 2048, "16 MiB in 8 KiB requests");
    assert_eq!(jobs[0]["host_pages_written"], 4096, "16 MiB of 4 KiB pages");
    assert_eq!(jobs[0]["host_pages_read"], 0);
    // reader: randread, bs=4k, iodepth=4, offset=32m, size=16m, io_size=8m, rate_iops=500.
    assert_eq!(configured[1]["name"], "reader");
    assert_eq!(configured[1]["queue_depth"], 4);
    assert_eq!(configured[1]["rate_iops"], 500);
    assert_eq!(jobs[1]["host_pages_read"], 2048, "io_size = 8 MiB of 4 KiB pages");
    assert_eq!(jobs[1]["host_pages_written"], 0);
    let logical_pages = counted["device"]["logical_pages"].as_f64().unwrap();
    let first_page = |job: &serde_json::Value| (job["range_start"].as_f64().unwrap() * logical_pages).floor();
    assert_eq!(first_page(&configured[1]), 8192.0, "offset = 32 MiB");
    assert_eq!((configured[1]["range_end"].as_f64().unwrap() * logical_pages).floor(), 12_288.0, "+ size 16 MiB");
    assert_eq!(counted["seed"], 7, "randseed");
    let timed = json(&["run", &file, "--preset", "small", "--timing", "on", "--json", "-"]);
    let timed_jobs = &timed["timed"]["jobs"];
    assert_eq!(timed_jobs[0]["offered_iops"], 2000.0);
    assert_eq!(timed_jobs[1]["offered_iops"], 500.0);
    assert_eq!(timed_jobs[0]["requests"], 2048);
    assert_eq!(timed_jobs[1]["requests"], 2048);
}

#[test]
fn an_unknown_option_is_named_in_a_warning_and_the_run_goes_on() {
    let file = JobFile::new("unknown-option", "[global]\nsize=1m\n\n[writer]\nrw=write\nfrobnicate=3\n");
    let output = nandlab(&["run", file.path(), "--preset", "small", "--quiet"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let warning = format!("warning: fio job file {}:6: `frobnicate`: not an option nandlab reads", file.path());
    assert!(stderr.contains(&warning), "{stderr}");
}

#[test]
fn an_unrepresentable_value_exits_2_naming_file_line_option_and_value() {
    let file = JobFile::new("bad-bs", "[writer]\nrw=randwrite\nbs=512\n");
    let output = nandlab(&["run", file.path(), "--preset", "small"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("{}:3: `bs=512`", file.path())) && stderr.contains("4096-byte pages"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let missing = nandlab(&["run", "/nonexistent/job.fio"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/job.fio"));
}

#[test]
fn the_command_line_overrides_the_files_jobs_and_seed() {
    let file = two_jobs();
    let report =
        json(&["run", &file, "--preset", "small", "--set", "job.writer.queue_depth=2", "--seed", "9", "--json", "-"]);
    assert_eq!(report["config"]["job"][0]["queue_depth"], 2);
    assert_eq!(report["seed"], 9);
    assert!(Path::new(&file).exists());
}
