//! Issue 28: error messages quote a bounded, escaped prefix of any input
//! (a 10 MB preset name gave 10.5 MB of stderr, NUL bytes reached the
//! terminal), print each OS error once with its path, and name the product
//! when six geometry keys within their bounds multiply to 2^72.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};

/// Runs `nandlab ARGS`, expects a refused input (exit 2, no panic) and returns stderr.
fn refused(args: &[&str]) -> String {
    ends_with(2, args)
}

/// Runs `nandlab ARGS`, expects it to exit with `code` without a panic and returns stderr.
fn ends_with(code: i32, args: &[&str]) -> String {
    let output =
        Command::new(env!("CARGO_BIN_EXE_nandlab")).args(args).stdin(Stdio::null()).output().expect("nandlab runs");
    let stderr = String::from_utf8(output.stderr).expect("stderr is UTF-8");
    assert_eq!(output.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn a_10_mb_preset_name_gives_a_short_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("big.toml");
    std::fs::write(&config, format!("preset = \"{}\"\n", "a".repeat(10_000_000))).unwrap();
    let stderr = refused(&["run", config.to_str().unwrap()]);
    assert!(stderr.len() < 1000, "{} bytes of stderr", stderr.len());
    assert!(stderr.contains("unknown preset") && stderr.contains("…(10000000 bytes)"), "{stderr}");
}

#[test]
fn nul_and_escape_bytes_in_input_are_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("nul.toml");
    std::fs::write(&config, "preset = \"ab\\u0000cd\\u001b[31m\"\n").unwrap();
    let stderr = refused(&["run", config.to_str().unwrap()]);
    assert!(stderr.contains("ab\\0cd\\u{1b}[31m"), "{stderr}");
    let trace = dir.path().join("t.blk");
    std::fs::write(&trace, b"\x00\x1b[2J not a trace\n").unwrap();
    // A trace whose format cannot be told still exits 1 (trace errors are not yet classed as refused input).
    let stderr = ends_with(1, &["replay", trace.to_str().unwrap(), "--preset", "small"]);
    assert!(!stderr.contains('\0') && !stderr.contains('\u{1b}'), "{stderr:?}");
    let stderr = refused(&["run", "--preset", "small", "--set", "bad\u{1b}key=1"]);
    assert!(stderr.contains("bad\\u{1b}key"), "{stderr:?}");
}

#[test]
fn an_os_error_is_printed_once_with_its_path() {
    // A missing file is a failure, not a refused input (exit 1).
    let stderr = ends_with(1, &["replay", "/nonexistent/t.blk", "--preset", "small"]);
    assert!(stderr.contains("/nonexistent/t.blk"), "{stderr}");
    assert_eq!(stderr.matches("No such file or directory").count(), 1, "{stderr}");
    let stderr = ends_with(1, &["trace", "info", "/nonexistent/t.blk"]);
    assert_eq!(stderr.matches("No such file or directory").count(), 1, "{stderr}");
}

#[test]
fn the_2_72_geometry_is_refused_naming_the_product() {
    let stderr = refused(&[
        "run",
        "--preset",
        "small",
        "--set",
        "device.channels=1024",
        "--set",
        "device.chips_per_channel=1024",
        "--set",
        "device.dies_per_chip=64",
        "--set",
        "device.planes_per_die=64",
        "--set",
        "device.blocks_per_plane=16777216",
        "--set",
        "device.pages_per_block=65536",
    ]);
    assert!(stderr.contains("channels × chips_per_channel × dies_per_chip × planes_per_die"), "{stderr}");
    assert!(stderr.contains(&(1u128 << 72).to_string()), "{stderr}");
    assert!(!stderr.contains("logical_pages"), "{stderr}");
}
