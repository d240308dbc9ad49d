//! Regression tests of issue 11 (hardening) through the `nandlab` binary,
//! each named after the bug it pins: bad input ends with exit status 2 when
//! a configuration key refuses it (as clap's usage errors), 1 otherwise, and a
//! clear message — never a panic (101), an abort (134), a hang, or exit 0
//! with wrong numbers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn nandlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nandlab")).args(args).stdin(Stdio::null()).output().expect("nandlab runs")
}

/// Runs and expects a refusal: exit 2 for a configuration key, else 1, no
/// panic, a message containing `needle`.
fn refused(args: &[&str], needle: &str) -> String {
    let output = nandlab(args);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let code = if stderr.contains("error: configuration key") { 2 } else { 1 };
    assert_eq!(output.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: expected `{needle}` in {stderr}");
    stderr
}

struct Folder(PathBuf);

impl Folder {
    fn new(name: &str) -> Folder {
        let path = std::env::temp_dir().join(format!("nandlab-cli-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Folder(path)
    }

    fn file(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A native trace by hand: preamble, JSON header, raw record bytes.
fn native(header_json: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = b"NLTRACE\0\x01\x00\x00\x00".to_vec();
    bytes.extend_from_slice(&u32::try_from(header_json.len()).unwrap().to_le_bytes());
    bytes.extend_from_slice(header_json.as_bytes());
    bytes.extend_from_slice(body);
    bytes
}

/// A write record: kind, zigzag time delta 0, zigzag start delta, length, a new empty name.
fn write_record(start: u64, len: u64) -> Vec<u8> {
    let mut out = vec![1u8, 0];
    for value in [start << 1, len, 0, 0] {
        let mut value = value;
        while value >= 0x80 {
            out.push((value as u8) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }
    out
}

#[test]
fn write_at_sector_2_64_minus_1_is_refused_not_written_as_0_pages() {
    let folder = Folder::new("wrap");
    let trace = folder
        .file("t.blk", format!("  8,0    3        1     0.000000000   697  D   W {} + 8 [dd]\n", u64::MAX).as_bytes());
    refused(&["replay", &trace, "--preset", "small"], "t.blk:1:");
}

#[test]
fn native_start_2_62_with_4096_byte_sectors_is_refused_not_wrapped_to_lba_0() {
    let folder = Folder::new("scale");
    let mut body = write_record(1 << 62, 8);
    body.extend([0xff, 1]);
    let trace = folder.file("t.nlt", &native(r#"{"sector_size_bytes":4096}"#, &body));
    refused(&["replay", &trace, "--preset", "small"], "64-bit byte address space");
    refused(&["trace", "info", &trace], "64-bit byte address space");
}

#[test]
fn native_60_byte_file_with_sector_size_2_32_minus_1_does_not_hang_trace_info() {
    let folder = Folder::new("hang");
    let mut body = write_record(0, u64::from(u32::MAX));
    body.extend([0xff, 1]);
    let trace = folder.file("t.nlt", &native(&format!(r#"{{"sector_size_bytes":{}}}"#, u32::MAX), &body));
    refused(&["trace", "info", &trace], "sector_size_bytes");
}

#[test]
fn zero_length_write_is_refused_not_counted_as_a_write() {
    let folder = Folder::new("empty");
    let trace = folder.file("t.blk", b"  8,0    3        1     0.000000000   697  D   W 100 + 0 [dd]\n");
    refused(&["replay", &trace, "--preset", "small"], "0 sectors");
}

#[test]
fn trace_info_into_a_closed_pipe_exits_quietly() {
    let folder = Folder::new("pipe");
    let trace = folder.file("t.blk", b"  8,0    3        1     0.000000000   697  D   W 100 + 8 [dd]\n");
    let mut child = Command::new(env!("CARGO_BIN_EXE_nandlab"))
        .args(["trace", "info", &trace])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn trace_convert_to_blkparse_leaves_an_existing_file_alone() {
    let folder = Folder::new("keep");
    let trace = folder.file("t.blk", b"  8,0    3        1     0.000000000   697  D   W 100 + 8 [dd]\n");
    let keep = folder.file("keep.txt", b"precious");
    refused(&["trace", "convert", &trace, &keep, "--to", "blkparse"], "cannot be written");
    assert_eq!(std::fs::read(&keep).unwrap(), b"precious");
}

#[test]
fn trace_convert_of_4096_byte_sectors_to_msr_is_not_8x_too_small() {
    let folder = Folder::new("msr");
    let mut body = write_record(10, 2);
    body.extend([0xff, 1]);
    let trace = folder.file("t.nlt", &native(r#"{"sector_size_bytes":4096}"#, &body));
    let csv = folder.0.join("t.csv");
    let output = nandlab(&["trace", "convert", &trace, csv.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(std::fs::read_to_string(&csv).unwrap().contains(",Write,40960,8192,"));
}

#[test]
fn config_keys_that_wrapped_or_exhausted_memory_are_refused_naming_the_key() {
    for (assignment, key) in [
        ("discard.delay_ms=18446744073710", "discard.delay_ms"),
        ("discard.period_ms=18446744073710", "discard.period_ms"),
        ("timing.gc_low_blocks=4294967295", "timing.gc_low_blocks"),
        ("ftl.gc_threshold_blocks=4294967295", "ftl.gc_threshold_blocks"),
        ("timing.queue_depth=4294967295", "timing.queue_depth"),
        ("timing.queues=4294967295", "timing.queues"),
        ("timing.channel_bytes_per_s=1", "timing.channel_bytes_per_s"),
        ("timing.series_interval_ns=1", "timing.series_interval_ns"),
        ("timing.read_ns=9223372036854775000", "timing.read_ns"),
        ("timing.stripe_pages=12288", "timing.stripe_pages"),
        ("device.pages_per_block=1", "device.pages_per_block"),
    ] {
        refused(&["run", "--preset", "small", "--timing", "on", "--set", assignment], &format!("`{key}`"));
    }
    refused(
        &["run", "--preset", "small", "--set", "ftl.gc_policy=\"d-choices\"", "--set", "ftl.d_choices=4294967295"],
        "`ftl.d_choices`",
    );
}

#[test]
fn a_geometry_needing_33_gb_is_refused_before_allocating() {
    let output = Command::new(env!("CARGO_BIN_EXE_nandlab"))
        .args([
            "run",
            "--preset",
            "small",
            "--set",
            "device.blocks_per_plane=8000000",
            "--set",
            "device.pages_per_block=128",
        ])
        .env("NANDLAB_MEMORY_BYTES", (24u64 << 30).to_string())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`device`") && stderr.contains("GB of memory"), "{stderr}");
}

fn run_json(args: &[&str]) -> serde_json::Value {
    let output = nandlab(args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("stdout holds only the JSON report")
}

#[test]
fn json_to_dash_writes_stdout_and_no_table() {
    let report = run_json(&["run", "--preset", "small", "--json", "-"]);
    assert_eq!(report["config"]["name"], "small");
    assert!(!Path::new("-").exists(), "no file named `-`");
}

#[test]
fn the_command_line_preset_replaces_a_files_preset_and_set_preset_does_not_reapply() {
    let folder = Folder::new("preset");
    let file = folder.file("f.toml", b"preset = \"femu-32g\"\n");
    let small = run_json(&["run", "--preset", "small", "--json", "-"]);
    let layered = run_json(&["run", &file, "--preset", "small", "--json", "-"]);
    assert_eq!(layered["config"], small["config"], "nothing of the file's femu-32g survives");
    let own = folder.file("own.toml", b"preset = \"femu-32g\"\n[ftl]\ngc_policy = \"fifo\"\n");
    let reset = run_json(&["run", &own, "--set", "preset=small", "--json", "-"]);
    assert_eq!(reset["config"]["name"], "small");
    assert_eq!(reset["config"]["ftl"]["gc_policy"], "fifo", "the file's keys stay above the preset");
}

#[test]
fn capture_checks_out_before_the_workload_runs() {
    let folder = Folder::new("capture");
    let marker = folder.0.join("ran");
    let out = folder.0.join("missing/dir/t.nlt");
    refused(
        &["capture", "--out", out.to_str().unwrap(), "--", "touch", marker.to_str().unwrap()],
        "cannot write there",
    );
    assert!(!marker.exists(), "the workload did not run");
}

#[test]
fn output_to_a_full_disk_is_an_error_not_a_panic() {
    for args in [&["presets"][..], &["run", "--preset", "small"][..]] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_nandlab")).args(args).stdout(full).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("No space left") && !stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// Issue 13: `--fit` on a raw trace was refused ("the trace header gives no
/// device size"); now it takes the highest sector touched, and says so.
#[test]
fn fit_on_a_raw_trace_uses_the_highest_sector_and_says_so() {
    let folder = Folder::new("fit-raw");
    let lines: String = (0..64)
        .map(|index| format!("{},hm,0,Write,{},4096,1\n", 128_166_372_003_061_629_u64 + index, index * (1 << 20)))
        .collect();
    let trace = folder.file("raw.csv", lines.as_bytes());
    let small = ["--preset", "small", "--set", "precondition.enabled=false", "-q"];
    let output = nandlab(&[&["replay", trace.as_str(), "--fit"], &small[..]].concat());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("63.00 MiB logical, from the highest sector the trace touches"), "{stderr}");
    let given = nandlab(&[&["replay", trace.as_str(), "--device-size", "128M"], &small[..]].concat());
    assert!(String::from_utf8_lossy(&given.stderr).contains("128.00 MiB logical, from --device-size"));
}

/// Issue 13: a device fitted too small for a full device aborted mid-replay
/// with "device is full"; then the configuration check refused it up front.
/// Issue 26: the fit now finds a device that holds the reserve (here one
/// parallel unit, larger than the size asked for, at the same
/// over-provisioning) and says so; a size no device can hold is refused up
/// front, naming the key.
#[test]
fn a_device_too_small_for_its_reserve_is_fitted_or_refused_before_the_replay() {
    let folder = Folder::new("fit-small");
    let trace = folder.file("one.csv", b"128166372003061629,hm,0,Write,0,4096,1\n");
    let output = nandlab(&["replay", &trace, "--device-size", "1M", "--set", "precondition.enabled=false", "-q"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("which gives 1.00 MiB") && stderr.contains("1 parallel units instead of 64"), "{stderr}");
    refused(
        &["replay", &trace, "--device-size", "100T", "--set", "precondition.enabled=false"],
        "the device was scaled to 109951162777600 bytes from --device-size",
    );
}
