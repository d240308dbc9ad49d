//! `nandlab dhrd`: the durable hybrid RAM disk (issue 7, paper 001 sections 3-4). `serve` mounts it
//! over FUSE; `bench` measures the in-process direct byte read and fast initialization; `video`
//! runs the paper's video test on files of any file system. The work lives in nandlab-dhrd and
//! nandlab-fuse; this file is glue and formatting.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use nandlab_dhrd::bench::{self, WorkloadResult, WorkloadSpec};
use nandlab_dhrd::{parse_byte_size, DeviceConfig, Durability, LatencySummary};

#[derive(clap::Args)]
pub struct DhrdArgs {
    #[command(subcommand)]
    command: DhrdCommand,
}

#[derive(clap::Subcommand)]
enum DhrdCommand {
    /// Serve a DHRD over FUSE as DIR/disk (attach it with losetup) plus DIR/stats, until SIGINT/SIGTERM.
    Serve(nandlab_fuse::ServeArgs),
    /// Stop the daemon serving DIR: it flushes and closes the device; while a loop device or an
    /// open file holds DIR/disk it keeps serving until released (or stops at once with --force).
    Stop(nandlab_fuse::StopArgs),
    /// Benchmark the device in-process: first I/O after start, then random/mixed/sequential workloads.
    Bench(BenchArgs),
    /// The paper's video test: read a file, modify part of it, write it as another file.
    Video(VideoArgs),
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Backing file; created and filled with seeded data if missing (so initialization has work).
    #[arg(long)]
    backing: PathBuf,
    /// Device size, e.g. 4GiB.
    #[arg(long, value_parser = parse_byte_size)]
    size: u64,
    #[arg(long, default_value = "1MiB", value_parser = parse_byte_size)]
    chunk: u64,
    #[arg(long, default_value = "direct")]
    durability: Durability,
    /// Seconds per workload.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Threads, each with one request in flight.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(clap::Args)]
struct VideoArgs {
    /// Source file; created with seeded data of --create-size bytes if missing.
    #[arg(long)]
    src: PathBuf,
    /// Destination file (overwritten).
    #[arg(long)]
    dst: PathBuf,
    /// Size of the source file to create when it is missing (the paper's file is 1.8 GB).
    #[arg(long, default_value = "1800MB", value_parser = parse_byte_size)]
    create_size: u64,
    /// Bytes modified in the middle of the file.
    #[arg(long, default_value = "64MiB", value_parser = parse_byte_size)]
    modify: u64,
    /// Repetitions (the paper runs it three times and reports the total).
    #[arg(long, default_value_t = 3)]
    repeat: u32,
    /// Drop the kernel page cache before each read (root), so reads reach the device.
    #[arg(long)]
    drop_caches: bool,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: DhrdArgs) -> anyhow::Result<()> {
    match args.command {
        DhrdCommand::Serve(serve) => nandlab_fuse::serve(&serve).context("dhrd serve"),
        DhrdCommand::Stop(stop) => nandlab_fuse::stop(&stop).context("dhrd stop"),
        DhrdCommand::Bench(bench) => run_bench(&bench),
        DhrdCommand::Video(video) => run_video(&video),
    }
}

fn run_bench(args: &BenchArgs) -> anyhow::Result<()> {
    eprintln!("dhrd bench: seed {}", args.seed);
    if !args.backing.exists() {
        fill_file(&args.backing, args.size, args.seed)?;
    }
    let mut config = DeviceConfig::new(&args.backing, Some(args.size));
    config.chunk_bytes = args.chunk;
    config.durability = args.durability;
    let (device, first) = bench::measure_first_io(&config, Duration::from_secs(3600))?;
    println!("## DHRD in-process, {} bytes, chunk {} bytes, durability {}\n", args.size, args.chunk, args.durability);
    println!("| start-up | ms |\n|---|---:|");
    println!("| open | {:.3} |", bench::millis(first.open));
    println!("| first 4 KiB read served | {:.3} |", bench::millis(first.first_read));
    println!("| first 4 KiB write acknowledged | {:.3} |", bench::millis(first.first_write));
    match first.initialization {
        Some(init) => println!("| initialization complete | {:.1} |", bench::millis(init)),
        None => println!("| initialization complete | did not finish |"),
    }
    println!();
    println!(
        "| workload ({} thread(s), {} s) | IOPS | MiB/s | read p50 / p99 us | write p50 / p99 us |",
        args.threads, args.seconds
    );
    println!("|---|---:|---:|---:|---:|");
    for (name, pattern, block_bytes) in bench::PAPER_WORKLOADS {
        eprintln!("dhrd bench: {name} ...");
        let spec = WorkloadSpec {
            pattern,
            block_bytes,
            duration: Duration::from_secs(args.seconds),
            threads: args.threads,
            seed: args.seed,
        };
        let result = bench::run_workload(&device, &spec)?;
        print_row(name, &result);
    }
    device.close()?;
    Ok(())
}

fn print_row(name: &str, result: &WorkloadResult) {
    let latency = |summary: &LatencySummary| {
        if summary.count == 0 {
            "-".to_owned()
        } else {
            format!("{:.1} / {:.1}", bench::micros(summary.p50_ns), bench::micros(summary.p99_ns))
        }
    };
    println!(
        "| {name} | {:.0} | {:.1} | {} | {} |",
        result.ops_per_s(),
        result.mib_per_s(),
        latency(&result.read_latency),
        latency(&result.write_latency)
    );
}

fn run_video(args: &VideoArgs) -> anyhow::Result<()> {
    eprintln!("dhrd video: seed {}", args.seed);
    if !args.src.exists() {
        fill_file(&args.src, args.create_size, args.seed)?;
    }
    let mut total = Duration::ZERO;
    println!("| run | bytes | read s | write s | total s |\n|---:|---:|---:|---:|---:|");
    for run in 1..=args.repeat {
        if args.drop_caches {
            drop_page_cache()?;
        }
        let result = bench::video_test(&args.src, &args.dst, args.modify)?;
        let elapsed = result.read + result.write;
        total += elapsed;
        println!(
            "| {run} | {} | {:.2} | {:.2} | {:.2} |",
            result.bytes,
            result.read.as_secs_f64(),
            result.write.as_secs_f64(),
            elapsed.as_secs_f64()
        );
    }
    println!("\ntotal over {} runs: {:.2} s", args.repeat, total.as_secs_f64());
    Ok(())
}

/// Writes the seeded image a benchmark starts from, saying how far it got.
fn fill_file(path: &std::path::Path, size: u64, seed: u64) -> anyhow::Result<()> {
    let mut progress = |written: u64| eprintln!("dhrd: filled {} MiB of {}", written >> 20, path.display());
    Ok(bench::fill_file(path, size, seed, &mut progress)?)
}

fn drop_page_cache() -> anyhow::Result<()> {
    // Dirty pages cannot be dropped: write them back first.
    let _ = std::process::Command::new("sync").status();
    std::fs::write("/proc/sys/vm/drop_caches", "3").context("drop page cache (needs root)")
}
