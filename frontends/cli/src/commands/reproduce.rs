//! `nandlab reproduce NAME --out DIR`: the registry of paper experiments. Each
//! entry is a name, a one-line description and a function writing data,
//! plots and a `summary.md` into the output folder through `nandlab-report`.
//! `nandlab reproduce list` prints the registry. To add an experiment, add one
//! line to [`EXPERIMENTS`].

pub(crate) mod shared;
mod telomere;

use anyhow::Context as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ReproduceArgs {
    /// Experiment name, `all` (every experiment into `OUT/NAME`, then one
    /// `OUT/report.md`), or `list` to print the available experiments.
    pub name: String,
    /// Output folder for data (CSV/JSON), plots (SVG) and summary.md.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed of every random choice of the experiment (printed and recorded).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run at the paper's full scale instead of the quick default.
    #[arg(long)]
    pub paper_scale: bool,
    /// Random task sets (or repetitions) per point, overriding the scale's default.
    #[arg(long)]
    pub samples: Option<usize>,
    /// An experiment parameter, `KEY=VALUE` (repeatable); `list` shows which
    /// experiment takes which keys (telomere-fig10: the RBER model's
    /// `wear.x_mean`, `wear.x_std_dev`, `wear.y_mean`, `wear.y_std_dev`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// What every experiment receives.
pub struct ExperimentArgs {
    pub out: PathBuf,
    pub seed: u64,
    pub paper_scale: bool,
    pub samples: Option<usize>,
    /// `--set` parameters, each `KEY=VALUE` with a key the experiment takes.
    pub set: Vec<String>,
}

struct Experiment {
    name: &'static str,
    description: &'static str,
    /// Keys `--set` may give this experiment.
    keys: &'static [&'static str],
    run: fn(&ExperimentArgs) -> anyhow::Result<()>,
}

const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "telomere-fig7",
        description: "Telomere Fig. 7: storage/throughput utilization at 100 % schedulable vs granularity",
        keys: &[],
        run: telomere::figure_7,
    },
    Experiment {
        name: "telomere-fig8",
        description: "Telomere Fig. 8: storage/throughput utilization at 100 % schedulable vs number of tasks",
        keys: &[],
        run: telomere::figure_8,
    },
    Experiment {
        name: "telomere-fig9",
        description: "Telomere Fig. 9: Telomere SiP/SharP vs WAO-GC vs MultiLog-Oracle at α = 0.10, 0.30, 0.75",
        keys: &[],
        run: telomere::figure_9,
    },
    Experiment {
        name: "telomere-fig10",
        description: "Telomere Fig. 10: RBER CDF for Telomere HB/RBER/noWL and Pagemap RBER/noWL",
        keys: &super::reproduce_telomere_sim::WEAR_KEYS,
        run: super::reproduce_telomere_sim::figure_10,
    },
    Experiment {
        name: "telomere-table3",
        description: "Telomere Table 3 / Figs. 13-14: the six-task set on the Cosmos board, throughput over time",
        keys: &[],
        run: |args| super::reproduce_telomere_sim::table_3(&args.out),
    },
    Experiment {
        name: "delay-d",
        description: "Delay-D Fig. 3 and Table 2: UAV batch/single-erase on ext4 traces, DISCARD off/online/Delay-D",
        keys: &[],
        run: super::reproduce_discard::delay_d,
    },
    Experiment {
        name: "informed-cleaning",
        description:
            "Informed cleaning (Rajimwale et al., slide 24): Postmark on ext4 with and without free-block info",
        keys: &[],
        run: super::reproduce_discard::informed_cleaning,
    },
    Experiment {
        name: "dhrd",
        description: "DHRD Figs. 6 and 8: block-level random/mixed/sequential I/O, SSD file vs tmpfs vs DHRD, first I/O",
        keys: &[],
        run: super::reproduce_dhrd::run,
    },
    Experiment {
        name: "journal",
        description: "Journal/data separation in a pblk-like host FTL on ext4 traces (Son and Ahn 2021)",
        keys: &[],
        run: super::reproduce_journal::run,
    },
    Experiment {
        name: "priority-cleaning",
        description: "Priority-aware cleaning (Rajimwale et al., slide 19)",
        keys: &[],
        run: |args| super::reproduce_timing::priority_cleaning(&args.out, args.seed),
    },
    Experiment {
        name: "stripe-merging",
        description: "Stripe-aligned write merging (Rajimwale et al., slides 13 and 15)",
        keys: &[],
        run: |args| super::reproduce_timing::stripe_merging(&args.out, args.seed),
    },
];

pub fn run(args: ReproduceArgs) -> anyhow::Result<()> {
    if args.name == "list" {
        let width = EXPERIMENTS.iter().map(|experiment| experiment.name.len()).max().unwrap_or(0);
        for experiment in EXPERIMENTS {
            println!("{:<width$}  {}", experiment.name, experiment.description);
            if !experiment.keys.is_empty() {
                println!("{:<width$}  --set keys: {}", "", experiment.keys.join(", "));
            }
        }
        return Ok(());
    }
    if args.name == "all" {
        return run_all(&args);
    }
    let experiment = EXPERIMENTS.iter().find(|experiment| experiment.name == args.name).with_context(|| {
        let names: Vec<&str> = EXPERIMENTS.iter().map(|experiment| experiment.name).collect();
        format!("unknown experiment {:?}; available: {}", args.name, names.join(", "))
    })?;
    for assignment in &args.set {
        let key = assignment.split_once('=').map_or(assignment.as_str(), |(key, _)| key.trim());
        if !experiment.keys.contains(&key) {
            let takes =
                if experiment.keys.is_empty() { "no --set keys".to_owned() } else { experiment.keys.join(", ") };
            anyhow::bail!("--set {assignment:?}: {} takes {takes}", experiment.name);
        }
    }
    let out = args.out.context("--out DIR is required")?;
    let started = std::time::Instant::now();
    (experiment.run)(&ExperimentArgs {
        out: out.clone(),
        seed: args.seed,
        paper_scale: args.paper_scale,
        samples: args.samples,
        set: args.set,
    })?;
    eprintln!("{}: done in {:.1} s, results in {}", experiment.name, started.elapsed().as_secs_f64(), out.display());
    Ok(())
}

/// How one experiment of `reproduce all` ended.
struct Outcome {
    name: &'static str,
    seconds: f64,
    error: Option<String>,
}

/// `nandlab reproduce all`: every experiment into `OUT/NAME`, one failing
/// (e.g. a capture without root) not stopping the others, then `OUT/report.md`
/// with every summary in it.
fn run_all(args: &ReproduceArgs) -> anyhow::Result<()> {
    if !args.set.is_empty() {
        anyhow::bail!("--set is for one experiment; `all` runs each with its defaults");
    }
    let out = args.out.clone().context("--out DIR is required")?;
    let mut outcomes = Vec::new();
    for experiment in EXPERIMENTS {
        eprintln!("all: {} …", experiment.name);
        let started = std::time::Instant::now();
        let experiment_args = ExperimentArgs {
            out: out.join(experiment.name),
            seed: args.seed,
            paper_scale: args.paper_scale,
            samples: args.samples,
            set: Vec::new(),
        };
        let error = (experiment.run)(&experiment_args).err().map(|error| format!("{error:#}"));
        if let Some(error) = &error {
            eprintln!("all: {} failed: {error}", experiment.name);
        }
        outcomes.push(Outcome { name: experiment.name, seconds: started.elapsed().as_secs_f64(), error });
    }
    let report = out.join("report.md");
    std::fs::write(&report, combined_report(&out, &outcomes, args.seed))
        .with_context(|| format!("writing {}", report.display()))?;
    let failed: Vec<&str> = outcomes.iter().filter(|o| o.error.is_some()).map(|o| o.name).collect();
    eprintln!("all: report in {}", report.display());
    if !failed.is_empty() {
        anyhow::bail!("{} of {} experiments failed: {}", failed.len(), outcomes.len(), failed.join(", "));
    }
    Ok(())
}

fn combined_report(out: &std::path::Path, outcomes: &[Outcome], seed: u64) -> String {
    let mut summary = nandlab_report::Summary::new("nandlab: every paper experiment");
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .map(|o| {
            let status = o.error.as_ref().map_or_else(|| "done".to_owned(), |error| format!("failed: {error}"));
            vec![format!("[{0}](#{0})", o.name), status, format!("{:.1}", o.seconds)]
        })
        .collect();
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
    fn every_experiment_name_is_unique_and_not_a_command_word() {
        let mut names: Vec<&str> = EXPERIMENTS.iter().map(|experiment| experiment.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EXPERIMENTS.len());
        assert!(!names.contains(&"all") && !names.contains(&"list"));
    }
}
