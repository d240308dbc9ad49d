//! `nandlab reproduce NAME --out DIR`: runs a paper experiment of
//! `nandlab-lab`'s registry; `nandlab reproduce list` prints the registry.

use crate::shared::ProgressReporter;
use anyhow::Context as _;
use nandlab_lab::registry::{self, ExperimentArgs, EXPERIMENTS};
use nandlab_lab::{Observer, Progress, Watch};
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
    /// Captures per scenario of delay-d and informed-cleaning (default 3):
    /// every table and plot shows the median and the range over them.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub repeats: Option<u64>,
    /// An experiment parameter, `KEY=VALUE` (repeatable); `list` shows which
    /// experiment takes which keys (telomere-fig10: the RBER model's
    /// `wear.x_mean`, `wear.x_std_dev`, `wear.y_mean`, `wear.y_std_dev`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

pub fn run(args: ReproduceArgs) -> anyhow::Result<()> {
    if args.name == "list" {
        print_list();
        return Ok(());
    }
    if args.name != "all" {
        registry::find(&args.name)?.check_set(&args.set)?;
    }
    let out = args.out.context("--out DIR is required")?;
    let experiment_args = ExperimentArgs {
        out: out.clone(),
        seed: args.seed,
        paper_scale: args.paper_scale,
        samples: args.samples,
        repeats: args.repeats.and_then(|repeats| usize::try_from(repeats).ok()),
        set: args.set,
        watch: Watch::default().with_display(|| Box::new(Bar(ProgressReporter::new()))),
    };
    let done = registry::reproduce(&args.name, &experiment_args)?;
    if args.name != "all" {
        eprintln!("{}: done in {:.1} s, results in {}", args.name, done.seconds, out.display());
    }
    Ok(())
}

fn print_list() {
    let width = EXPERIMENTS.iter().map(|experiment| experiment.name.len()).max().unwrap_or(0);
    for experiment in EXPERIMENTS {
        println!("{:<width$}  {}", experiment.name, experiment.description);
        if !experiment.keys.is_empty() {
            println!("{:<width$}  --set keys: {}", "", experiment.keys.join(", "));
        }
    }
}

/// The progress bar of one replay inside an experiment, cleared when the replay ends.
struct Bar(ProgressReporter);

impl Observer for Bar {
    fn progress(&mut self, progress: Progress) -> nandlab_lab::Result<()> {
        self.0.update(progress);
        Ok(())
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish();
    }
}
