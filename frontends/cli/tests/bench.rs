//! `nandlab bench --size` (issue 33): the preset's device grown to the flash
//! size asked for, other ratios kept, and refused with exit 2 when the size
//! is not a whole number of blocks per plane. Only sizes and counts are
//! checked here; timings belong to benchmarks, never to tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output, Stdio};

fn nandlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nandlab")).args(args).stdin(Stdio::null()).output().expect("nandlab runs")
}

/// `bench --json -` on `small` at `size`: the JSON document.
fn bench_json(size: &str) -> serde_json::Value {
    let output =
        nandlab(&["bench", "--preset", "small", "--size", size, "--writes", "20000", "--repeat", "1", "--json", "-"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("stdout is the JSON document alone")
}

#[test]
fn size_sets_the_flash_and_keeps_the_presets_ratio() {
    // `small`: 4 units of 64-page blocks of 4 KiB, ρ = 0.25, 64 blocks per plane (64 MiB).
    let report = bench_json("256MiB");
    assert_eq!(report["flash_bytes"], 256 << 20);
    assert_eq!(report["physical_pages"], (256 << 20) / 4096);
    let rho = report["rho"].as_f64().unwrap();
    assert!((rho - 0.25).abs() < 1e-3, "ρ = {rho}");
    assert_eq!(report["measured"]["host_pages_written"], 20000);
    assert!(report["measured_waf"].as_f64().unwrap() > 1.0, "steady random writes collect garbage");
    assert_eq!(report["preset"], "small");
}

#[test]
fn the_same_size_gives_the_same_counts() {
    let (first, second) = (bench_json("128MiB"), bench_json("128MiB"));
    assert_eq!(first["measured"], second["measured"]);
    assert_eq!(first["preconditioning_host_pages"], second["preconditioning_host_pages"]);
}

#[test]
fn a_size_between_whole_blocks_per_plane_is_refused_with_the_nearest() {
    let output = nandlab(&["bench", "--preset", "small", "--size", "100MB", "--writes", "10"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--size") && stderr.contains("99614720 and 100663296 bytes"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
