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
    let key = nandlab(&["reproduce", "telomere-fig8", "--set", "a=1"]);
    assert!(String::from_utf8_lossy(&key.stderr).contains("telomere-fig8 takes no --set keys"));
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

/// Every figure of a reproduced experiment draws the paper's numbers with a
/// legend entry, and report.html holds the figures inline with the provenance.
#[test]
fn reproduced_figures_carry_the_papers_numbers_and_report_html_is_self_contained() {
    let dir = tempfile::tempdir().expect("temporary directory");
    for experiment in ["telomere-fig9", "priority-cleaning"] {
        let out = dir.path().join(experiment);
        let output = nandlab(&["reproduce", experiment, "--out", out.to_str().expect("utf-8 path")]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let mut figures = 0;
        for entry in std::fs::read_dir(&out).expect("the output folder") {
            let path = entry.expect("an entry").path();
            if path.extension().is_some_and(|extension| extension == "svg") {
                figures += 1;
                let svg = std::fs::read_to_string(&path).expect("svg");
                assert!(svg.contains("paper"), "{} has no paper reference", path.display());
            }
        }
        assert!(figures > 0, "{experiment} drew no figure");
        let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
        assert_eq!(html.matches("<svg").count(), figures, "every figure inline in report.html");
        assert!(html.contains("Provenance") && html.contains("commit") && html.contains("reproduce"));
        assert!(html.contains("<th>verdict</th>"), "{experiment}: the paper-vs-nandlab table has a verdict column");
        assert!(!html.contains("src=\""), "nothing loaded from elsewhere");
    }
}
