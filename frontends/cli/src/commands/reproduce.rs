//! `nandlab reproduce NAME --out DIR`: the registry of paper experiments. Each
//! entry is a name, a one-line description and a function writing data,
//! plots and a `summary.md` into the output folder through `nandlab-report`.
//! `nandlab reproduce list` prints the registry. To add an experiment, add one
//! line to [`EXPERIMENTS`].

mod telomere;

use anyhow::Context as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ReproduceArgs {
    /// Experiment name, or `list` to print the available experiments.
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
        description: "Informed cleaning (Rajimwale et al., slide 24): Postmark on ext4 with and without free-block info",
        keys: &[],
        run: super::reproduce_discard::informed_cleaning,
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
    let experiment = EXPERIMENTS.iter().find(|experiment| experiment.name == args.name).with_context(|| {
        let names: Vec<&str> = EXPERIMENTS.iter().map(|experiment| experiment.name).collect();
        format!("unknown experiment {:?}; available: {}", args.name, names.join(", "))
    })?;
    for assignment in &args.set {
        let key = assignment.split_once('=').map_or(assignment.as_str(), |(key, _)| key.trim());
        if !experiment.keys.contains(&key) {
            let takes = if experiment.keys.is_empty() { "no --set keys".to_owned() } else { experiment.keys.join(", ") };
            anyhow::bail!("--set {assignment:?}: {} takes {takes}", experiment.name);
        }
    }
    let out = args.out.context("--out DIR is required")?;
    let started = std::time::Instant::now();
    (experiment.run)(&ExperimentArgs { out: out.clone(), seed: args.seed, paper_scale: args.paper_scale, samples: args.samples, set: args.set })?;
    eprintln!("{}: done in {:.1} s, results in {}", experiment.name, started.elapsed().as_secs_f64(), out.display());
    Ok(())
}
