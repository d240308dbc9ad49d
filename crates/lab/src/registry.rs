//! The registry of paper experiments behind `nandlab reproduce` and
//! `nandlab.reproduce`: each entry is a name, a one-line description, whether
//! it needs root, a rough run time and a function writing data, plots and a
//! `summary.md` into the output folder through `nandlab-report`. To add an
//! experiment, add one entry to [`EXPERIMENTS`].

use crate::args::ExperimentArgs;
use crate::error::{error_chain, Context as _, Error, Result};
use crate::experiments::{delay_d_proportions, dhrd, discard, journal, telomere, telomere_sim, timing};
use crate::provenance::Provenance;
use nandlab_report::OutputDir;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One paper experiment.
#[derive(Debug)]
pub struct Experiment {
    pub name: &'static str,
    pub description: &'static str,
    /// Keys `--set` may give this experiment.
    pub keys: &'static [&'static str],
    /// It captures traces of a real ext4 on loop devices (root), unless the
    /// traces are cached in `OUT/traces` already.
    pub needs_root: bool,
    /// Rough wall time at the quick scale on a 2-core VM, captures included
    /// (measured 2026-11-23 with `nandlab reproduce NAME`).
    pub rough_seconds: u32,
    run: fn(&ExperimentArgs) -> Result<()>,
}

pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "telomere-fig7",
        description: "Telomere Fig. 7: storage/throughput utilization at 100 % schedulable vs granularity",
        keys: &[],
        needs_root: false,
        rough_seconds: 5,
        run: telomere::figure_7,
    },
    Experiment {
        name: "telomere-fig8",
        description: "Telomere Fig. 8: storage/throughput utilization at 100 % schedulable vs number of tasks",
        keys: &[],
        needs_root: false,
        rough_seconds: 3,
        run: telomere::figure_8,
    },
    Experiment {
        name: "telomere-fig9",
        description: "Telomere Fig. 9: Telomere SiP/SharP vs WAO-GC vs MultiLog-Oracle at α = 0.10, 0.30, 0.75",
        keys: &telomere::FIGURE_9_KEYS,
        needs_root: false,
        rough_seconds: 3,
        run: telomere::figure_9,
    },
    Experiment {
        name: "telomere-fig10",
        description: "Telomere Fig. 10: RBER CDF for Telomere HB/RBER/noWL and Pagemap RBER/noWL, over 10 seeds",
        keys: &telomere_sim::WEAR_KEYS,
        needs_root: false,
        rough_seconds: 15,
        run: telomere_sim::figure_10,
    },
    Experiment {
        name: "telomere-table3",
        description: "Telomere Table 3 / Figs. 13-14: the six-task set on the Cosmos board, throughput over time",
        keys: &telomere_sim::TABLE_3_KEYS,
        needs_root: false,
        rough_seconds: 13,
        run: telomere_sim::table_3,
    },
    Experiment {
        name: "delay-d",
        description: "Delay-D Fig. 3 and Table 2: UAV batch/single-erase on ext4 traces, DISCARD off/online/Delay-D",
        keys: &[],
        needs_root: true,
        rough_seconds: 750,
        run: discard::delay_d,
    },
    Experiment {
        name: "delay-d-proportions",
        description: "Delay-D Fig. 3a at the paper's proportions: single-erase with K = 50 N, ratios per device DISCARD mode and size",
        keys: &delay_d_proportions::KEYS,
        needs_root: true,
        // Issue 30's two 4 GiB captures (788 s and 266 s of workload at a load of 11-15) and 187 s of replays.
        rough_seconds: 1250,
        run: delay_d_proportions::delay_d_proportions,
    },
    Experiment {
        name: "informed-cleaning",
        description:
            "Informed cleaning (Rajimwale et al., slide 24): Postmark on ext4 with and without free-block info",
        keys: &[],
        needs_root: true,
        rough_seconds: 60,
        run: discard::informed_cleaning,
    },
    Experiment {
        name: "dhrd",
        description:
            "DHRD Figs. 6 and 8: block-level random/mixed/sequential I/O, SSD file vs tmpfs vs DHRD, first I/O",
        keys: &[],
        needs_root: false,
        rough_seconds: 120,
        run: dhrd::run,
    },
    Experiment {
        name: "journal",
        description: "Journal/data separation in a pblk-like host FTL on ext4 traces (Son and Ahn 2021); \
                      --paper-scale for the full matrix",
        keys: &journal::KEYS,
        needs_root: true,
        rough_seconds: 800,
        run: journal::run,
    },
    Experiment {
        name: "priority-cleaning",
        description: "Priority-aware cleaning (Rajimwale et al., slide 19)",
        keys: &[],
        needs_root: false,
        rough_seconds: 1,
        run: |args| timing::priority_cleaning(&args.out, args.seed),
    },
    Experiment {
        name: "stripe-merging",
        description: "Stripe-aligned write merging (Rajimwale et al., slides 13 and 15): synthetic sweep, and \
                      Postmark, OLTP, mail-server and IOzone-like fio workloads captured on ext4",
        keys: &[],
        needs_root: true,
        rough_seconds: 120,
        run: timing::stripe_merging,
    },
];

/// The experiment called `name`, or an error listing the names.
pub fn find(name: &str) -> Result<&'static Experiment> {
    EXPERIMENTS.iter().find(|experiment| experiment.name == name).ok_or_else(|| {
        let names: Vec<&str> = EXPERIMENTS.iter().map(|experiment| experiment.name).collect();
        Error::Invalid(format!("unknown experiment {name:?}; available: {}", names.join(", ")))
    })
}

/// What a finished `reproduce` left behind.
#[derive(Clone, Debug)]
pub struct Reproduced {
    /// `OUT/summary.md`, or `OUT/report.md` for `all`.
    pub summary: PathBuf,
    /// `OUT/report.html`: the same as one self-contained page, plots inline.
    pub html: PathBuf,
    pub seconds: f64,
}

/// Appends the provenance to the markdown file `name` in `out` and writes
/// it as `out/report.html` too; returns the HTML file's path.
fn finish_report(out: &Path, name: &str, title: &str, started: Instant) -> Result<PathBuf> {
    let markdown_path = out.join(name);
    let mut markdown =
        std::fs::read_to_string(&markdown_path).with_context(|| format!("reading {}", markdown_path.display()))?;
    markdown.push('\n');
    markdown.push_str(&Provenance::now(started.elapsed()).to_markdown());
    let dir = OutputDir::create(out)?;
    dir.write_text(name, &markdown)?;
    Ok(dir.write_html("report.html", title, &markdown)?)
}

impl Experiment {
    /// Refuses a `--set` key the experiment does not take.
    pub fn check_set(&self, set: &[String]) -> Result<()> {
        for assignment in set {
            let key = assignment.split_once('=').map_or(assignment.as_str(), |(key, _)| key.trim());
            if !self.keys.contains(&key) {
                let takes = if self.keys.is_empty() { "no --set keys".to_owned() } else { self.keys.join(", ") };
                return Err(Error::Invalid(format!("--set {assignment:?}: {} takes {takes}", self.name)));
            }
        }
        Ok(())
    }

    /// Runs the experiment into `args.out` after checking its `--set` keys.
    pub fn run(&self, args: &ExperimentArgs) -> Result<Reproduced> {
        self.check_set(&args.set)?;
        let started = Instant::now();
        (self.run)(args)?;
        let html = finish_report(&args.out, "summary.md", &format!("nandlab: {}", self.description), started)?;
        Ok(Reproduced { summary: args.out.join("summary.md"), html, seconds: started.elapsed().as_secs_f64() })
    }
}

/// `reproduce NAME` for one experiment, or `all`: every experiment into
/// `OUT/NAME`, one failing (e.g. a capture without root) not stopping the
/// others, then `OUT/report.md` with every summary in it.
pub fn reproduce(name: &str, args: &ExperimentArgs) -> Result<Reproduced> {
    if name == "all" {
        run_all(args)
    } else {
        find(name)?.run(args)
    }
}

/// How one experiment of `reproduce all` ended.
struct Outcome {
    name: &'static str,
    seconds: f64,
    error: Option<String>,
}

fn run_all(args: &ExperimentArgs) -> Result<Reproduced> {
    if !args.set.is_empty() {
        return Err(Error::Invalid("--set is for one experiment; `all` runs each with its defaults".to_owned()));
    }
    let started = Instant::now();
    let mut outcomes = Vec::new();
    for experiment in EXPERIMENTS {
        eprintln!("all: {} …", experiment.name);
        let experiment_started = Instant::now();
        let experiment_args = ExperimentArgs { out: args.out.join(experiment.name), ..args.clone() };
        let result = experiment.run(&experiment_args);
        if result.as_ref().is_err_and(Error::is_cancelled) {
            return result;
        }
        let error = result.err().map(|error| error_chain(&error));
        if let Some(error) = &error {
            eprintln!("all: {} failed: {error}", experiment.name);
        }
        outcomes.push(Outcome { name: experiment.name, seconds: experiment_started.elapsed().as_secs_f64(), error });
    }
    let report = args.out.join("report.md");
    nandlab_trace::write_output(&report, combined_report(&args.out, &outcomes, args.seed).as_bytes())
        .with_context(|| format!("writing {}", report.display()))?;
    let html = finish_report(&args.out, "report.md", "nandlab: every paper experiment", started)?;
    let failed: Vec<&str> = outcomes.iter().filter(|o| o.error.is_some()).map(|o| o.name).collect();
    eprintln!("all: report in {} and {}", report.display(), html.display());
    if !failed.is_empty() {
        return Err(Error::Failed(format!(
            "{} of {} experiments failed: {}",
            failed.len(),
            outcomes.len(),
            failed.join(", ")
        )));
    }
    Ok(Reproduced { summary: report, html, seconds: started.elapsed().as_secs_f64() })
}

/// Each finished experiment's comparison rows (`OUT/NAME/comparisons.json`);
/// one whose file is missing or unreadable contributes none.
fn compared(out: &Path, outcomes: &[Outcome]) -> Vec<(String, Vec<nandlab_report::Comparison>)> {
    outcomes
        .iter()
        .filter(|o| o.error.is_none())
        .map(|o| {
            let rows = std::fs::read_to_string(out.join(o.name).join("comparisons.json"))
                .ok()
                .and_then(|text| serde_json::from_str(&text).ok())
                .unwrap_or_default();
            (o.name.to_owned(), rows)
        })
        .collect()
}

fn combined_report(out: &Path, outcomes: &[Outcome], seed: u64) -> String {
    let mut summary = nandlab_report::Summary::new("nandlab: every paper experiment");
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .map(|o| {
            let status = o.error.as_ref().map_or_else(|| "done".to_owned(), |error| format!("failed: {error}"));
            vec![format!("[{0}](#{0})", o.name), status, format!("{:.1}", o.seconds)]
        })
        .collect();
    let not_run: Vec<&str> = outcomes.iter().filter(|o| o.error.is_some()).map(|o| o.name).collect();
    summary.scoreboard(&compared(out, outcomes), &not_run).heading("Experiments");
    summary
        .paragraph(&format!(
            "`nandlab reproduce all --seed {seed}`: each experiment's data, plots and summary are in its own folder."
        ))
        .table(&["experiment", "status", "seconds"], &rows);
    let mut text = summary.to_markdown();
    for outcome in outcomes.iter().filter(|o| o.error.is_none()) {
        match std::fs::read_to_string(out.join(outcome.name).join("summary.md")) {
            Ok(markdown) => {
                text.push('\n');
                text.push_str(&format!("<a id=\"{}\"></a>\n\n", outcome.name));
                text.push_str(&nandlab_report::nest_summary(&markdown, outcome.name));
            }
            Err(error) => text.push_str(&format!("\n{}: no summary.md ({error})\n", outcome.name)),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_combined_report_lists_every_outcome_and_nests_the_summaries() {
        let dir = tempfile::tempdir().expect("temporary directory");
        std::fs::create_dir_all(dir.path().join("delay-d")).expect("folder");
        std::fs::write(dir.path().join("delay-d/summary.md"), "# Delay-D\n\n![Figure 3a](figure3a.svg)\n")
            .expect("summary");
        let outcomes = [
            Outcome { name: "delay-d", seconds: 35.0, error: None },
            Outcome { name: "journal", seconds: 0.1, error: Some("capture needs root".to_owned()) },
        ];
        let report = combined_report(dir.path(), &outcomes, 7);
        assert!(report.contains("reproduce all --seed 7"), "{report}");
        assert!(report.contains("| [delay-d](#delay-d) | done | 35.0 |"), "{report}");
        assert!(report.contains("| [journal](#journal) | failed: capture needs root | 0.1 |"), "{report}");
        assert!(report.contains("## Delay-D") && report.contains("](delay-d/figure3a.svg)"), "{report}");
        assert!(!report.contains("<a id=\"journal\">"), "a failed experiment has no section");
    }

    #[test]
    fn the_combined_report_opens_with_a_scoreboard_of_every_comparison_row() {
        use nandlab_report::{Comparison, OutputDir, Summary, Verdict};
        let dir = tempfile::tempdir().expect("temporary directory");
        let row = |quantity: &str, verdict| Comparison {
            quantity: quantity.to_owned(),
            paper: "4.1x".to_owned(),
            measured: "143x [120x–150x]".to_owned(),
            verdict,
            note: String::new(),
        };
        for (name, rows) in [
            ("delay-d", vec![row("DISCARDs", Verdict::Partly), row("GC copies", Verdict::Differs)]),
            ("dhrd", vec![row("reads", Verdict::Reproduces)]),
        ] {
            let mut summary = Summary::new(name);
            summary.comparisons(&rows);
            OutputDir::create(dir.path().join(name)).and_then(|d| d.write_summary(&summary)).expect("summary");
        }
        let outcomes = [
            Outcome { name: "delay-d", seconds: 1.0, error: None },
            Outcome { name: "dhrd", seconds: 1.0, error: None },
            Outcome { name: "journal", seconds: 0.1, error: Some("capture needs root".to_owned()) },
        ];
        let report = combined_report(dir.path(), &outcomes, 1);
        let scoreboard = report.find("## Scoreboard").expect("a scoreboard");
        assert!(scoreboard < report.find("## Experiments").expect("the experiments"), "{report}");
        assert!(
            report.contains(
                "**3 claims of the papers: 1 reproduces, 1 partly, 1 does not reproduce, 0 not comparable.** \
                 **Not in the totals: journal did not run**"
            ),
            "{report}"
        );
        assert!(
            report.contains("| [delay-d](#delay-d) | GC copies | 4.1x | 143x [120x–150x] | does not reproduce |"),
            "{report}"
        );
    }

    #[test]
    fn every_experiment_name_is_unique_and_not_a_command_word() {
        let mut names: Vec<&str> = EXPERIMENTS.iter().map(|experiment| experiment.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EXPERIMENTS.len());
        assert!(!names.contains(&"all") && !names.contains(&"list"));
    }

    #[test]
    fn an_unknown_name_or_key_is_refused_before_anything_runs() {
        let error = reproduce("fig99", &ExperimentArgs::default()).expect_err("unknown");
        assert!(error.to_string().contains("available: telomere-fig7"), "{error}");
        let args = ExperimentArgs { set: vec!["x=1".to_owned()], ..ExperimentArgs::default() };
        let error = reproduce("stripe-merging", &args).expect_err("no keys");
        assert_eq!(error.to_string(), "--set \"x=1\": stripe-merging takes no --set keys");
    }
}
