//! `nandlab reproduce` is glue over nandlab-lab's registry: the same list,
//! the same errors in the same order, and an experiment's files in `--out`.

use std::process::Command;

fn nandlab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_nandlab")).args(args).output().expect("the nandlab binary runs")
}

#[test]
fn list_prints_every_registered_experiment() {
    let output = nandlab(&["reproduce", "list"]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for experiment in nandlab_lab::EXPERIMENTS {
        assert!(text.contains(experiment.name) && text.contains(experiment.description), "{text}");
    }
    assert!(text.contains("--set keys: wear.x_mean"), "{text}");
}

#[test]
fn bad_names_and_keys_fail_before_out_is_needed() {
    let unknown = nandlab(&["reproduce", "fig99"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown experiment \"fig99\"; available: telomere-fig7"));
    let key = nandlab(&["reproduce", "telomere-table3", "--set", "a=1"]);
    assert!(String::from_utf8_lossy(&key.stderr).contains("telomere-table3 takes no --set keys"));
    let out = nandlab(&["reproduce", "telomere-table3"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--out DIR is required"));
}

#[test]
fn an_experiment_writes_its_summary_into_out() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = dir.path().join("t3");
    let output = nandlab(&["reproduce", "telomere-table3", "--out", out.to_str().expect("utf-8 path")]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stderr).contains("telomere-table3: done in"));
    assert!(std::fs::read_to_string(out.join("summary.md")).expect("summary").starts_with('#'));
}
