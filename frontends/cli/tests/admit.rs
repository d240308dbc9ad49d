//! `nandlab admit` end to end: the paper's worked examples (P = 8) through a
//! device TOML file, issue 15's admitted-but-late task set, and bad task and
//! device files refused with the key named (exit 1, never a panic).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo_file(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path).display().to_string()
}

fn nandlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nandlab")).args(args).stdin(Stdio::null()).output().expect("nandlab runs")
}

/// Runs `nandlab admit ARGS --json -` and returns the report.
fn admit_json(args: &[&str]) -> Value {
    let mut all = vec!["admit"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "-"]);
    let output = nandlab(&all);
    assert!(output.status.success(), "{all:?}: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON report")
}

/// The paper's examples: g = 1 on the P = 8 device, storage admission only.
fn example(tasks: &str, extra: &[&str]) -> Value {
    let (tasks, device) = (repo_file(tasks), repo_file("crates/admission/devices/paper-example-p8.toml"));
    let mut args = vec![tasks.as_str(), "--preset", device.as_str(), "--granularity", "1", "--tests", "storage"];
    args.extend_from_slice(extra);
    admit_json(&args)
}

fn plan(report: &Value) -> (u64, Vec<Vec<u64>>) {
    let storage = &report["report"]["verdict"]["storage"];
    let partitions = storage["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|partition| partition["tasks"].as_array().unwrap().iter().map(|task| task.as_u64().unwrap()).collect())
        .collect();
    (storage["blocks_needed"].as_u64().unwrap(), partitions)
}

#[test]
fn section_4_2_example_runs_from_a_device_file() {
    let report = example("crates/admission/tasksets/section4_2.toml", &[]);
    assert_eq!(report["context"]["device"]["pages_per_block"], 8);
    assert_eq!(report["report"]["admitted"], serde_json::json!([0, 1, 2]));
    // opt2 = H([τ0]) + H([τ1, τ2]) = 19 wins over opt1 = 20 and opt3 = 21.
    assert_eq!(plan(&report), (19, vec![vec![0], vec![1, 2]]));
    // SiP: opt3 = 21.
    assert_eq!(plan(&example("crates/admission/tasksets/section4_2.toml", &["--placement", "sip"])).0, 21);
    // The printed erase term does not give the paper's numbers (docs/telomere.md).
    let printed = example("crates/admission/tasksets/section4_2.toml", &["--erase-term", "printed"]);
    assert_eq!(printed["context"]["storage"]["erase_allowance"], "printed");
    assert_eq!(plan(&printed).0, 20);
    let alias = example("crates/admission/tasksets/section4_2.toml", &["--erase-term", "per-period"]);
    assert_eq!(plan(&alias), plan(&printed));
}

#[test]
fn figures_5_and_6_example_runs_from_a_device_file() {
    assert_eq!(
        plan(&example("crates/admission/tasksets/figure5.toml", &["--placement", "sip"])),
        (4, vec![vec![0], vec![1]])
    );
    assert_eq!(plan(&example("crates/admission/tasksets/figure5.toml", &[])), (3, vec![vec![0, 1]]));
}

struct Folder(PathBuf);

impl Folder {
    fn new(name: &str) -> Folder {
        let path = std::env::temp_dir().join(format!("nandlab-admit-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Folder(path)
    }

    fn file(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Issue 15: on `cosmos` at g = 1 this task was admitted with EDF load 0.353
/// and then missed all its deadlines, its partition being on one chip.
#[test]
fn a_job_is_charged_on_its_stripe() {
    let folder = Folder::new("stripe");
    let tasks = folder
        .file("one.toml", "[[task]]\nname = \"w\"\nwrite_pages = 32\nwrite_period_ms = 10\nlifetime_periods = 20\n");
    let at = |granularity: &str, spread: &str| {
        admit_json(&[&tasks, "--preset", "cosmos", "--granularity", granularity, "--write-spread", spread])
    };
    let striped = at("1", "stripe");
    assert_eq!(striped["report"]["decisions"][0]["rejection"], "throughput");
    assert!(striped["report"]["decisions"][0]["verdict"]["throughput"]["write"].as_f64().unwrap() > 2.0);
    let printed = at("1", "all-chips");
    assert_eq!(printed["report"]["admitted"], serde_json::json!([0]));
    let load = |report: &Value| {
        let edf = &report["report"]["verdict"]["throughput"];
        ["blocking", "read", "write", "gc"].iter().map(|term| edf[term].as_f64().unwrap()).sum::<f64>()
    };
    // t_e/T + t_w/T + ⌈t_e/32⌉/(T·⌊256/32⌋) with T = 10 ms.
    let expected = 2.7 / 10.0 + 0.7 / 10.0 + 84_375e-9 / 0.080;
    assert!((load(&printed) - expected).abs() < 1e-9, "{}", load(&printed));
    // The 0.353 had C^g rounded up to 1 ms.
    let rounded = admit_json(&[
        &tasks,
        "--preset",
        "cosmos",
        "--granularity",
        "1",
        "--write-spread",
        "all-chips",
        "--gc-rounding",
        "millisecond",
    ]);
    assert!((load(&rounded) - 0.3525).abs() < 1e-9, "{}", load(&rounded));
    let wide = at("32", "stripe");
    assert_eq!(wide["report"]["admitted"], serde_json::json!([0]));
    assert!((load(&wide) - load(&printed)).abs() < 1e-12, "g = S_chips: both readings agree");
    // The simulator shows why: the printed charge's admitted set is late on
    // its one chip, the stripe charge's set at g = 32 never is.
    let simulated = |granularity: &str, spread: &str| {
        let report = admit_json(&[
            &tasks,
            "--preset",
            "cosmos",
            "--granularity",
            granularity,
            "--write-spread",
            spread,
            "--simulate",
            "2",
        ]);
        let deadlines = report["simulation"]["deadlines"].clone();
        (deadlines["misses"].as_u64().unwrap(), deadlines["requests"].as_u64().unwrap())
    };
    let (late, jobs) = simulated("1", "all-chips");
    assert!(jobs >= 200 && late == jobs, "{late} of {jobs} late");
    assert_eq!(simulated("32", "stripe").0, 0);
}

/// The paper's Figure 5 tasks on its P = 8 device, run by `--simulate`:
/// counting mode reports GC copies and erases, no deadlines.
#[test]
fn admitted_examples_run_in_the_simulator_from_the_command_line() {
    let report = example("crates/admission/tasksets/figure5.toml", &["--simulate", "1", "--timing", "off"]);
    let simulation = &report["simulation"];
    assert_eq!(simulation["layer"], "telomere");
    assert_eq!(simulation["gc_page_copies"], 0);
    assert!(simulation["erases"].as_u64().unwrap() > 10, "{simulation}");
    assert!(simulation.get("deadlines").is_none());
    let per_task: Vec<f64> = simulation["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["write_pages_per_s"].as_f64().unwrap())
        .collect();
    assert!(per_task.iter().all(|&rate| rate > 0.0), "{per_task:?}");
}

fn refused(args: &[&str], needles: &[&str]) {
    let output = nandlab(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{args:?}: expected `{needle}` in {stderr}");
    }
}

#[test]
fn bad_task_files_are_refused_naming_task_and_key() {
    let folder = Folder::new("tasks");
    let writer = |period: &str| {
        format!("[[task]]\nname = \"w\"\nwrite_pages = 4\nwrite_period_ms = {period}\nlifetime_periods = 3\n")
    };
    // Issue 15: 1e300 panicked (exit 101), 1e-12 printed "load inf".
    for period in ["1e300", "1e-12", "0", "-1", "nan"] {
        let tasks = folder.file("period.toml", &writer(period));
        refused(
            &["admit", &tasks],
            &["period.toml:1", "task \"w\"", "key `write_period_ms`", "from 0.001 to 10000000000"],
        );
    }
    let pages = folder.file("pages.toml", "[[task]]\nname = \"r\"\nread_pages = 1e300\nread_period_ms = 4\n");
    refused(&["admit", &pages], &["task \"r\"", "key `read_pages`"]);
    let twice = folder.file("twice.toml", &format!("{}\n{}", writer("5"), writer("6")));
    refused(&["admit", &twice], &["twice.toml:7", "key `name`", "already defined on line 1"]);
    let tasks = folder.file("ok.toml", &writer("5"));
    refused(&["admit", &tasks, "--over-provisioning", "inf"], &["--over-provisioning"]);
}

#[test]
fn bad_device_files_are_refused_naming_the_key() {
    let folder = Folder::new("device");
    let tasks = folder.file("ok.toml", "[[task]]\nwrite_pages = 4\nwrite_period_ms = 5\nlifetime_periods = 3\n");
    let device = |text: &str| folder.file("dev.toml", &format!("preset = \"cosmos\"\n{text}\n"));
    refused(
        &["admit", &tasks, "--preset", &device("pages_per_block = 0")],
        &["dev.toml", "key `pages_per_block`", "from 1 to 65536"],
    );
    refused(&["admit", &tasks, "--preset", &device("erase_us = 1e300")], &["key `erase_us`", "1e300"]);
    refused(&["admit", &tasks, "--preset", &device("blocks = 5")], &["dev.toml", "blocks"]);
    refused(&["admit", &tasks, "--preset", "no-such-device"], &["no-such-device", "cosmos"]);
    let small = folder.file("small.toml", "channels = 1\nchips_per_channel = 1\nblocks_per_chip = 64\npages_per_block = 8\npage_size_bytes = 4096\nread_us = 25\nwrite_us = 200\nerase_us = 1500\n");
    let report = admit_json(&[&tasks, "--preset", &small]);
    assert_eq!(report["context"]["device"]["name"], "small");
    assert_eq!(report["context"]["device"]["blocks_per_chip"], 64);
}
