//! `nandlab run --mqsim SSDCONFIG WORKLOAD` and sizes with units on the
//! command line: MQSim's files (our own, after its schema, in
//! crates/core/tests/mqsim) run as jobs or a replay, with their warnings on
//! standard error; the vs-mqsim device replays a trace exactly as its
//! hand-built TOML does; refused input exits with 2 naming the element or key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn mqsim_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/core/tests/mqsim").join(name)
}

fn nandlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nandlab")).args(args).stdin(Stdio::null()).output().expect("nandlab runs")
}

fn json_of(output: &Output) -> serde_json::Value {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON")
}

#[test]
fn two_synthetic_flows_run_as_two_jobs_with_their_warnings() {
    let ssd = mqsim_file("ssd-mlc.xml");
    let workload = mqsim_file("workload-two-flows.xml");
    let output = nandlab(&[
        "run",
        "--mqsim",
        ssd.to_str().unwrap(),
        workload.to_str().unwrap(),
        "--timing",
        "on",
        "--set",
        "precondition.max_device_writes=1",
        "--json",
        "-",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let report = json_of(&output);
    let jobs = report["timed"]["jobs"].as_array().expect("timed jobs");
    let names: Vec<_> = jobs.iter().map(|job| job["name"].as_str().unwrap_or_default()).collect();
    assert_eq!(names, ["flow-1", "flow-2"]);
    assert_eq!(jobs[0]["requests"], 3000);
    assert_eq!(jobs[1]["requests"], 2000);
    assert_eq!(report["config"]["job"][1]["rate_iops"], 1000);
    assert_eq!(report["config"]["timing"]["write_buffer_pages"], 512);
    for element in ["<Priority_Class> = HIGH", "<Intensity> = 500", "<Caching_Mechanism> = ADVANCED"] {
        assert!(
            stderr.lines().any(|line| line.starts_with("warning: ") && line.contains(element)),
            "{element}: {stderr}"
        );
    }
}

/// scripts/vs_mqsim.py's device: its MQSim files and its hand-built TOML
/// replay the same trace to the same counts and latencies.
#[test]
fn the_vs_mqsim_device_replays_as_its_hand_built_configuration() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A fill of the 24,576 logical pages, then random overwrites, 1 ms apart (MQSim's ASCII format).
    let mut trace = String::new();
    let mut state = 12_345u64;
    for index in 0..45_000u64 {
        let page = if index < 24_576 {
            index
        } else {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % 24_576
        };
        trace.push_str(&format!("{} 0 {} 8 0\n", index * 1_000_000, page * 8));
    }
    std::fs::write(dir.path().join("requests.trace"), trace).unwrap();
    let workload = dir.path().join("workload.xml");
    std::fs::copy(mqsim_file("workload-trace.xml"), &workload).unwrap();
    let hand_built = dir.path().join("device.toml");
    std::fs::write(
        &hand_built,
        "preset = \"small\"\n[device]\nchannels = 4\nchips_per_channel = 1\ndies_per_chip = 1\nplanes_per_die = 1\n\
         blocks_per_plane = 128\npages_per_block = 64\npage_size = 4096\nlogical_pages = 24576\n\
         [ftl]\ngc_policy = \"greedy\"\ngc_threshold_blocks = 10\nallocation = \"static\"\n\
         [precondition]\nenabled = false\n[timing]\nread_ns = 40000\nprogram_ns = 200000\nerase_ns = 2000000\n\
         channel_bytes_per_s = 200000000\nwrite_buffer_pages = 0\n",
    )
    .unwrap();
    let ssd = mqsim_file("ssd-vs-mqsim.xml");
    let trace = dir.path().join("requests.trace");
    for timing in ["off", "on"] {
        let mapped = json_of(&nandlab(&[
            "run",
            "--mqsim",
            ssd.to_str().unwrap(),
            workload.to_str().unwrap(),
            "--timing",
            timing,
            "--json",
            "-",
        ]));
        let hand = json_of(&nandlab(&[
            "replay",
            trace.to_str().unwrap(),
            hand_built.to_str().unwrap(),
            "--format",
            "mqsim",
            "--timing",
            timing,
            "--json",
            "-",
        ]));
        assert!(mapped["measured"]["gc_page_copies"].as_u64().unwrap() > 0, "the overwrites collect");
        assert_eq!(mapped["measured"], hand["measured"], "--timing {timing}");
        assert_eq!(mapped["timed"]["latency"], hand["timed"]["latency"], "--timing {timing}");
    }
}

#[test]
fn a_value_nandlab_cannot_represent_exits_2_naming_the_element() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ssd = dir.path().join("ssd.xml");
    let text = std::fs::read_to_string(mqsim_file("ssd-mlc.xml")).unwrap();
    std::fs::write(&ssd, text.replace(">PAGE_LEVEL<", ">HYBRID<")).unwrap();
    let workload = mqsim_file("workload-two-flows.xml");
    let output = nandlab(&["run", "--mqsim", ssd.to_str().unwrap(), workload.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ssd.xml:13 <Address_Mapping> = HYBRID"), "{stderr}");
}

/// A size with a unit on the command line is the same run as the native
/// number; a bad unit or a size that is no whole number of pages exits 2.
#[test]
fn sizes_with_units_on_the_command_line_give_the_same_run() {
    let run = |set: &[&str]| {
        let mut args = vec!["run", "--preset", "small", "--set", "workload.device_writes=0.5", "--json", "-"];
        for assignment in set {
            args.extend(["--set", assignment]);
        }
        let mut report = json_of(&nandlab(&args));
        report.as_object_mut().unwrap().remove("wall_s");
        report
    };
    assert_eq!(run(&["workload.request_size=8KiB"]), run(&["workload.request_pages=2"]));
    assert_eq!(
        run(&["workload.request_pages=16KiB", "metrics.window_pages=1MiB"]),
        run(&["workload.request_pages=4", "metrics.window_pages=256"])
    );
    for (assignment, needle) in [
        ("workload.request_size=6KiB", "`workload.request_size`: 6144 bytes is not a whole number of 4096-byte pages"),
        ("workload.request_pages=4XB", "`workload.request_pages`: `4XB`: unknown unit suffix"),
    ] {
        let output = nandlab(&["run", "--preset", "small", "--set", assignment]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{assignment}: {stderr}");
        assert!(stderr.contains(needle), "{assignment}: {stderr}");
    }
}
