//! `nandlab fsload uav-single` sizes: the quick default (K = 5 N) and the
//! paper's proportions (`--paper-proportions`: R = 50, K = 50 N), which
//! `reproduce delay-d-proportions` captures.

use std::process::Command;

fn fsload(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_nandlab"))
        .args(["fsload", "uav-single", "--dir", dir.to_str().expect("utf-8 path"), "--seed", "1"])
        .args(["--files", "2", "--file-kib", "4", "--prefill-percent", "0"])
        .args(args)
        .output()
        .expect("the nandlab binary runs")
}

#[test]
fn paper_proportions_keep_k_at_fifty_times_n_and_the_default_at_five() {
    for (flags, expected) in [
        (&[][..], "N = 2 files of 4 KiB, R = 5, K = 10,"),
        (&["--paper-proportions"][..], "N = 2 files of 4 KiB, R = 50, K = 100,"),
    ] {
        let dir = tempfile::tempdir().expect("temporary directory");
        let output = fsload(dir.path(), flags);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
    }
}

#[test]
fn the_papers_sizes_and_its_proportions_are_one_choice() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let output = fsload(dir.path(), &["--paper", "--paper-proportions"]);
    assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--paper-proportions"));
}
