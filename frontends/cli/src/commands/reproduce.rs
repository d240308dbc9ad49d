//! `nandlab reproduce NAME --out DIR`: runs a paper experiment of
//! `nandlab-lab`'s registry; `nandlab reproduce list` prints the registry.

use crate::shared::ProgressReporter;
use anyhow::Context as _;
use nandlab_lab::registry::{self, EXPERIMENTS};
use nandlab_lab::ExperimentArgs;
use nandlab_lab::{Observer, Progress, Watch};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ReproduceArgs {
    /// Experiment name, `all` (every experiment into `OUT/NAME`, then one
    /// `OUT/report.md` and `OUT/report.html`), or `list` to print the
    /// available experiments with whether they need root and their rough time.
    pub name: String,
    /// Output folder for data (CSV/JSON), plots (SVG), summary.md and report.html.
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
    /// Captures per scenario of delay-d, informed-cleaning and journal
    /// (default 3): every table and plot shows the range over them.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub repeats: Option<u64>,
    /// An experiment parameter, `KEY=VALUE` (repeatable); `list` shows which
    /// experiment takes which keys (telomere-fig10: the RBER model's
    /// `wear.x_mean`, `wear.x_std_dev`, `wear.y_mean`, `wear.y_std_dev`;
    /// journal: a slice of its matrix, e.g. `--set 'points=fio fsync=1
    /// data=ordered' --set victims=greedy --set capture_writes=4`, see
    /// docs/configuration.md).
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
        eprintln!(
            "{}: done in {:.1} s, results in {} ({})",
            args.name,
            done.seconds,
            out.display(),
            done.html.display()
        );
    }
    Ok(())
}

/// One line per experiment: name, whether it needs root, its rough time at
/// the quick scale, its description; then its `--set` keys if it takes any.
fn print_list() {
    let width = EXPERIMENTS.iter().map(|experiment| experiment.name.len()).max().unwrap_or(0);
    println!("{:<width$}  {:<4}  {:>6}  description", "name", "root", "time");
    for experiment in EXPERIMENTS {
        let root = if experiment.needs_root { "yes" } else { "no" };
        let time = rough_time(experiment.rough_seconds);
        println!("{:<width$}  {root:<4}  {time:>6}  {}", experiment.name, experiment.description);
        if !experiment.keys.is_empty() {
            println!("{:<width$}  {:<4}  {:>6}  --set keys: {}", "", "", "", experiment.keys.join(", "));
        }
    }
    let total: u32 = EXPERIMENTS.iter().map(|experiment| experiment.rough_seconds).sum();
    println!(
        "root: captures real ext4 traces on loop devices (cached in OUT/traces afterwards); time: rough, quick scale, \
         2-core VM; all: {}",
        rough_time(total)
    );
}

fn rough_time(seconds: u32) -> String {
    if seconds < 90 {
        format!("~{seconds} s")
    } else {
        format!("~{} min", seconds.div_ceil(60))
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
