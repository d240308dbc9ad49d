//! Issue 28: every output of the `nandlab` binary onto a target that is not a
//! regular file is written in place. As root, `--json /dev/null` used to
//! replace the node with a regular file; a FIFO's reader got nothing; a
//! symbolic link became a file; a 0600 file came back 0644.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A run of a few hundred requests on the small preset.
const TINY_RUN: [&str; 5] = ["run", "--preset", "small", "--set", "workload.requests=500"];

fn nandlab(extra: &[&Path], flags: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nandlab"));
    command.args(TINY_RUN);
    for (flag, path) in flags.iter().zip(extra) {
        command.arg(flag).arg(path);
    }
    let output = command.stdin(Stdio::null()).output().expect("nandlab runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A copy of /dev/null's node (1, 3) in `dir`; `None` (and a note) where `mknod` needs root.
fn null_node(dir: &Path) -> Option<std::path::PathBuf> {
    let node = dir.join("null");
    let made = Command::new("mknod").arg(&node).args(["c", "1", "3"]).status().unwrap().success();
    made.then_some(node).or_else(|| {
        eprintln!("skipped: mknod needs root");
        None
    })
}

#[test]
fn json_onto_a_device_node_leaves_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let Some(node) = null_node(dir.path()) else { return };
    nandlab(&[&node, &node], &["--json", "--csv"]);
    assert!(std::fs::symlink_metadata(&node).unwrap().file_type().is_char_device());
}

#[test]
fn json_onto_a_fifo_reaches_its_reader() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::fs::File::open(reader_path).unwrap().read_to_string(&mut text).unwrap();
        text
    });
    nandlab(&[&fifo], &["--json"]);
    let document: serde_json::Value = serde_json::from_str(&reader.join().unwrap()).expect("the reader got the JSON");
    assert_eq!(document["config"]["name"], "small");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn json_onto_a_symlink_fills_its_target_and_keeps_the_link_and_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("report.json");
    std::fs::write(&target, "old").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    nandlab(&[&link], &["--json"]);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(document["config"]["name"], "small");
    assert_eq!(mode(&target), 0o600);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|entry| entry.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
}

#[test]
fn trace_convert_onto_a_device_node_leaves_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let Some(node) = null_node(dir.path()) else { return };
    let trace = dir.path().join("t.blk");
    std::fs::write(&trace, "  8,0    3        1     0.000000000   697  D   W 100 + 8 [dd]\n").unwrap();
    let output =
        Command::new(env!("CARGO_BIN_EXE_nandlab")).args(["trace", "convert"]).arg(&trace).arg(&node).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(std::fs::symlink_metadata(&node).unwrap().file_type().is_char_device());
}
