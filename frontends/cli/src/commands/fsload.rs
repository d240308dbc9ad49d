//! `nandlab fsload`: file-system workloads for `nandlab capture` — the UAV
//! scenarios of Delay-D, Postmark and Filebench-like personalities. They
//! run real file operations in `--dir` (default: $NANDLAB_MNT, which
//! `nandlab capture` sets; never the current directory by accident). The
//! workloads live in `nandlab_capture::fsload`.

use anyhow::Context;
use nandlab_capture::fsload::filebench::{FilebenchConfig, Personality};
use nandlab_capture::fsload::postmark::{Engine, PostmarkConfig};
use nandlab_capture::fsload::uav::{self, UavConfig};
use nandlab_capture::fsload::{FileOps, WritebackPacer};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct FsloadArgs {
    #[command(subcommand)]
    workload: FsloadWorkload,
    /// Directory to work in (default: $NANDLAB_MNT, set by `nandlab capture`; one of the two is required).
    #[arg(long, global = true)]
    dir: Option<PathBuf>,
    /// Seed of every random choice.
    #[arg(long, global = true, default_value_t = 1)]
    seed: u64,
    /// syncfs every this many ms while the workload runs, standing in for the kernel's 30 s
    /// write-back on a workload that finishes in seconds (0: leave write-back to the kernel).
    #[arg(long, global = true, default_value_t = 100)]
    writeback_ms: u64,
}

#[derive(clap::Subcommand)]
enum FsloadWorkload {
    /// Delay-D batch-erase: pre-fill to 50 %, then R times create N 1 MiB images one by one and delete them all.
    UavBatch(UavArgs),
    /// Delay-D single-erase: pre-fill to 50 %, create N images, then K times delete the oldest and create a new one.
    UavSingle(UavArgs),
    /// Postmark: small files created, deleted, read and appended in transactions.
    Postmark(PostmarkArgs),
    /// Filebench fileserver personality (single-threaded equivalent).
    Fileserver(FilebenchArgs),
    /// Filebench varmail personality (single-threaded equivalent).
    Varmail(FilebenchArgs),
    /// Filebench webserver personality (single-threaded equivalent).
    Webserver(FilebenchArgs),
}

#[derive(clap::Args)]
struct UavArgs {
    /// The paper's sizes: N = 10,000, R = 50, K = 500,000 (for a 32 GB file system).
    #[arg(long, conflicts_with = "paper_proportions")]
    paper: bool,
    /// The paper's proportions on this file system: N scaled as by default,
    /// R = 50 and K = 50 N (the paper's R and K / N).
    #[arg(long)]
    paper_proportions: bool,
    /// N; default scales the paper's 10,000 files per 32 GB to this file system.
    #[arg(long)]
    files: Option<u64>,
    /// R (batch-erase rounds); default 5 (50 with --paper-proportions).
    #[arg(long)]
    rounds: Option<u64>,
    /// K (single-erase replacements); default 5 N (50 N with --paper-proportions).
    #[arg(long)]
    replacements: Option<u64>,
    /// Image size in KiB.
    #[arg(long, default_value_t = 1024)]
    file_kib: u64,
    /// Fill the file system to this percentage with dummy files first.
    #[arg(long, default_value_t = 50.0)]
    prefill_percent: f64,
    /// Do not fsync each image.
    #[arg(long)]
    no_fsync: bool,
}

#[derive(clap::Args)]
struct PostmarkArgs {
    #[arg(long, default_value_t = 2000)]
    files: u64,
    #[arg(long, default_value_t = 8000)]
    transactions: u64,
    #[arg(long, default_value_t = 500)]
    min_size: u64,
    #[arg(long, default_value_t = 10_000)]
    max_size: u64,
    #[arg(long, default_value_t = 10)]
    subdirectories: u64,
    /// auto (Debian's postmark when installed), debian, builtin.
    #[arg(long, default_value = "auto")]
    engine: String,
}

#[derive(clap::Args)]
struct FilebenchArgs {
    /// Iterations of the personality's flow.
    #[arg(long, default_value_t = 20_000)]
    iterations: u64,
    /// Files in the file set (default: Filebench's).
    #[arg(long)]
    files: Option<u64>,
    /// Mean file size in KiB (default: Filebench's).
    #[arg(long)]
    file_kib: Option<u64>,
}

pub fn run(args: FsloadArgs) -> anyhow::Result<()> {
    // Never the current directory by default: a workload that fills its file
    // system to 50 % must not land on the user's own disk by accident.
    let dir = match args.dir.or_else(|| std::env::var_os(nandlab_capture::MOUNT_ENV).map(PathBuf::from)) {
        Some(dir) => dir,
        None => anyhow::bail!(
            "fsload creates and deletes many files (the UAV scenarios fill the file system to 50 %): run it under `nandlab capture` (which sets ${}) or name a scratch directory with --dir",
            nandlab_capture::MOUNT_ENV
        ),
    };
    let mut progress = |line: &str| eprintln!("fsload: {line}");
    eprintln!("fsload: working in {}, seed {}, syncfs every {} ms", dir.display(), args.seed, args.writeback_ms);
    let _pacer = WritebackPacer::start(&dir, std::time::Duration::from_millis(args.writeback_ms))?;
    match args.workload {
        FsloadWorkload::UavBatch(uav_args) => {
            let (ops, config) = uav_setup(&dir, args.seed, &uav_args)?;
            uav::batch_erase(&ops, &config, &mut progress).context("batch-erase")?;
        }
        FsloadWorkload::UavSingle(uav_args) => {
            let (ops, config) = uav_setup(&dir, args.seed, &uav_args)?;
            uav::single_erase(&ops, &config, &mut progress).context("single-erase")?;
        }
        FsloadWorkload::Postmark(pm) => {
            let engine = match pm.engine.as_str() {
                "auto" => Engine::Auto,
                "debian" => Engine::Debian,
                "builtin" => Engine::Builtin,
                other => anyhow::bail!("unknown --engine `{other}` (auto, debian, builtin)"),
            };
            let config = PostmarkConfig {
                files: pm.files,
                transactions: pm.transactions,
                min_size: pm.min_size,
                max_size: pm.max_size,
                subdirectories: pm.subdirectories,
                seed: args.seed,
                ..PostmarkConfig::default()
            };
            let used =
                nandlab_capture::fsload::postmark::run(&dir, &config, engine, &mut progress).context("postmark")?;
            eprintln!("fsload: ran {used}");
        }
        FsloadWorkload::Fileserver(fb) => run_filebench(&dir, args.seed, Personality::Fileserver, &fb, &mut progress)?,
        FsloadWorkload::Varmail(fb) => run_filebench(&dir, args.seed, Personality::Varmail, &fb, &mut progress)?,
        FsloadWorkload::Webserver(fb) => run_filebench(&dir, args.seed, Personality::Webserver, &fb, &mut progress)?,
    }
    Ok(())
}

fn uav_setup(dir: &std::path::Path, seed: u64, args: &UavArgs) -> anyhow::Result<(FileOps, UavConfig)> {
    let ops = FileOps::new(dir, seed, !args.no_fsync);
    let mut config = if args.paper {
        UavConfig::paper()
    } else if args.paper_proportions {
        UavConfig::paper_proportions(ops.usage()?.0)
    } else {
        UavConfig::scaled(ops.usage()?.0)
    };
    if let Some(files) = args.files {
        // K keeps its proportion to N (the paper's own sizes are fixed).
        if args.replacements.is_none() && !args.paper {
            config.replacements = config.replacements / config.files * files;
        }
        config.files = files;
    }
    config.rounds = args.rounds.unwrap_or(config.rounds);
    config.replacements = args.replacements.unwrap_or(config.replacements);
    config.file_bytes = args.file_kib << 10;
    config.prefill_fraction = args.prefill_percent / 100.0;
    eprintln!(
        "fsload: N = {} files of {} KiB, R = {}, K = {}, prefill {} %",
        config.files, args.file_kib, config.rounds, config.replacements, args.prefill_percent
    );
    Ok((ops, config))
}

fn run_filebench(
    dir: &std::path::Path,
    seed: u64,
    personality: Personality,
    args: &FilebenchArgs,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let mut config = FilebenchConfig::new(personality, args.iterations);
    config.files = args.files.unwrap_or(config.files);
    config.mean_file_bytes = args.file_kib.map_or(config.mean_file_bytes, |kib| kib << 10);
    let mut ops = FileOps::new(dir, seed, false);
    nandlab_capture::fsload::filebench::run(&mut ops, &config, progress).with_context(|| personality.name().to_owned())
}
