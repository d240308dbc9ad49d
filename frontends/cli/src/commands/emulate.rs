//! `nandlab emulate`: the simulated SSD as a live block device, over FUSE (`DIR/disk`) and/or NBD,
//! until SIGINT/SIGTERM; at stop the report `replay` prints. `nandlab emulate status DIR` shows the
//! live statistics of a running one. The work lives in nandlab-emulate and nandlab-fuse.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use nandlab_emulate::{EmulateOptions, EmulatedSsd, Pace};
use nandlab_fuse::{serve_until_stopped, stop_signals, Frontends, MountOptions, NbdArgs};
use nandlab_nbd::BlockDevice;

use crate::shared::{bytes, print_summary, print_timed_summary, write_latency_table, ConfigArgs};

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EmulateArgs {
    #[command(subcommand)]
    command: Option<EmulateCommand>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(clap::Subcommand, Debug)]
enum EmulateCommand {
    /// Show the live statistics of the device served on DIR (from DIR/stats).
    Status {
        /// The mount point the device is served on.
        dir: PathBuf,
        /// Print DIR/stats as it is (JSON).
        #[arg(long)]
        json: bool,
    },
    /// Start a new measured phase on the device served on DIR (e.g. after mkfs): the report
    /// shows what came before the mark apart from what follows.
    Mark(super::emulate_mark::MarkArgs),
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Existing directory to mount on: the device appears as DIR/disk (attach it with losetup),
    /// its statistics as DIR/stats (JSON).
    #[arg(long, value_name = "DIR", required_unless_present = "nbd")]
    mount: Option<PathBuf>,
    #[command(flatten)]
    nbd: NbdArgs,
    /// `real`: each reply waits for the request's simulated completion (the timing engine runs,
    /// simulated time follows the wall clock). `none`: replies at once, the simulation only counts.
    #[arg(long, value_enum, default_value_t = PaceArg::Real)]
    pace: PaceArg,
    /// Keep the device's data in this sparse file (created mode 0600) instead of RAM; with it the
    /// device's state is saved at a clean stop and a restart resumes it.
    #[arg(long, value_name = "FILE")]
    data: Option<PathBuf>,
    /// Where the state is saved (default: DATA.state, its request history in DATA.state.nlt).
    #[arg(long, value_name = "FILE", requires = "data")]
    state: Option<PathBuf>,
    /// Record this session's requests as a native trace (replay it with `nandlab replay`).
    #[arg(long, value_name = "TRACE")]
    record: Option<PathBuf>,
    /// Write the final report as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// FUSE request threads.
    #[arg(long, default_value_t = nandlab_fuse::DEFAULT_THREADS)]
    threads: u16,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum PaceArg {
    Real,
    None,
}

pub fn run(args: EmulateArgs) -> anyhow::Result<()> {
    match args.command {
        Some(EmulateCommand::Status { dir, json }) => status(&dir, json),
        Some(EmulateCommand::Mark(args)) => super::emulate_mark::run(&args),
        None => serve(args.serve),
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let (config, _) = args.config.build()?;
    // The export is named after the device: its preset, or the configuration's own name.
    let export_name = config.name.clone().unwrap_or_else(|| "nandlab".to_owned());
    let signalled = stop_signals()?;
    let marks = super::emulate_mark::mark_requests()?;
    let started = Instant::now();
    let pace = match args.pace {
        PaceArg::Real => Pace::Real,
        PaceArg::None => Pace::None,
    };
    let options =
        EmulateOptions { config, data: args.data.clone(), state: args.state, pace, record: args.record.clone() };
    // Everything that can be checked before the device opens is, so a mistyped option leaves the
    // saved state untouched; a restart refused there still detaches the mount a killed session left.
    args.mount.as_deref().map(usable_mount_point).transpose()?;
    let nbd = args.nbd.export(&export_name, &format!("nandlab emulated SSD ({export_name})"))?;
    let ssd = Arc::new(EmulatedSsd::open(&options)?);
    let device: Arc<dyn BlockDevice> = ssd.clone();
    let mount = MountOptions { threads: args.threads, allow_other: false };
    let (mut frontends, served) = match Frontends::start(&device, args.mount.as_deref(), mount, nbd) {
        Ok(started) => started,
        Err(error) => {
            // A busy port or a mount the kernel refuses: the device goes back to its saved state.
            ssd.abandon()?;
            return Err(error.into());
        }
    };
    drop(device);
    println!(
        "emulate: serving {} ({}, pace {}, data in {}) after {} ms",
        served.join(" and "),
        bytes(ssd.size_bytes()),
        if pace == Pace::Real { "real" } else { "none" },
        args.data.as_ref().map_or_else(|| "RAM".to_owned(), |path| path.display().to_string()),
        started.elapsed().as_millis()
    );
    std::io::stdout().flush()?;
    let ending = serve_until_stopped(&mut frontends, &signalled, &mut || {
        if marks.swap(false, std::sync::atomic::Ordering::AcqRel) && ssd.mark().is_some() {
            eprintln!("emulate: mark {}: a new measured phase starts", ssd.before_marks().len());
        }
    });
    frontends.end(&ending);
    let report = ssd.close()?.context("the device was already closed")?;
    eprintln!("emulate: stopped; data synced{}", if args.data.is_some() { ", state saved" } else { "" });
    let heading = match &args.record {
        Some(path) => format!("emulated SSD, requests recorded in {}", path.display()),
        None => "emulated SSD".to_owned(),
    };
    let before_marks = ssd.before_marks();
    super::emulate_mark::print_before_marks(&before_marks)?;
    let heading = match before_marks.len() {
        0 => heading,
        marks => format!("{heading}; counts since mark {marks}"),
    };
    print_summary(&heading, &report)?;
    report.timed.as_ref().map(print_timed_summary).transpose()?;
    let served_latency = ssd.served_latency();
    print_served(&served_latency)?;
    if let Some(path) = &args.json {
        // The document `replay --json` writes (schema_version, the report, wall_s), with the phases
        // the marks ended and what the clients waited.
        let emulated = EmulatedDocument { report: &report, before_marks, served_latency };
        let document = nandlab_lab::document::Document::new(&emulated, started.elapsed());
        crate::output::write_json(crate::output::Output::open(path)?, &document)?;
    }
    Ok(())
}

/// The emulator's JSON: the report as `replay` writes it and, after marks, the phases they ended
/// (`measured` is then the phase since the last mark).
#[derive(serde::Serialize)]
struct EmulatedDocument<'a> {
    #[serde(flatten)]
    report: &'a nandlab_core::Report,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    before_marks: Vec<nandlab_emulate::MarkedPhase>,
    /// From the moment the server received each request to the moment its reply went out.
    served_latency: nandlab_emulate::ServedLatency,
}

/// What the clients waited, the host path included (the timed table above is the model's, from
/// arrival in the simulated device to its completion).
fn print_served(served: &nandlab_emulate::ServedLatency) -> anyhow::Result<()> {
    if served.all.is_none() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "served     request received to reply sent, the host path included:")?;
    let rows = [
        ("read", &served.read),
        ("write", &served.write),
        ("trim", &served.trim),
        ("flush", &served.flush),
        ("all", &served.all),
    ];
    write_latency_table(&mut out, "served", &rows)?;
    Ok(())
}

/// Refuses a `--mount` that is not an existing directory, before the device opens; detaches the
/// dead FUSE mount a killed session left there.
fn usable_mount_point(dir: &std::path::Path) -> anyhow::Result<()> {
    nandlab_fuse::clear_stale_mount(dir)?;
    let metadata = std::fs::metadata(dir).with_context(|| format!("--mount {}", dir.display()))?;
    anyhow::ensure!(metadata.is_dir(), "--mount {}: not a directory", dir.display());
    Ok(())
}

/// The live statistics of a running device, read from DIR/stats.
fn status(dir: &std::path::Path, json: bool) -> anyhow::Result<()> {
    let path = dir.join(nandlab_fuse::STATS_FILE_NAME);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!("reading {} (is `nandlab emulate --mount {}` running?)", path.display(), dir.display())
    })?;
    if json {
        print!("{text}");
        return Ok(());
    }
    let stats: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not an emulated SSD's statistics", path.display()))?;
    let report = &stats["report"];
    let measured = &report["measured"];
    let number = |value: &serde_json::Value| value.as_u64().unwrap_or(0);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "emulated SSD on {} (daemon {}, pace {}), {} requests in {:.1} s",
        dir.display(),
        stats["daemon_pid"],
        stats["pace"].as_str().unwrap_or("?"),
        number(&stats["requests"]),
        stats["wall_s"].as_f64().unwrap_or(0.0)
    )?;
    let host = &report["host"];
    let discard = &report["discard"];
    let wear = &report["erase_counts"];
    let rows = [
        ("host reads", number(&host["reads"])),
        ("host writes", number(&host["writes"])),
        ("host flushes", number(&host["flushes"])),
        ("flushes in writes", number(&host["flushes_in_writes"])),
        ("journal commits", number(&host["journal_commits"])),
        ("DISCARD received", number(&discard["received_commands"])),
        ("DISCARD issued", number(&discard["issued_commands"])),
        ("host pages written", number(&measured["host_pages_written"])),
        ("flash pages programmed", number(&measured["flash_pages_programmed"])),
        ("GC page copies", number(&measured["gc_page_copies"])),
        ("erases", number(&measured["erases"])),
        ("free blocks", number(&stats["free_blocks"])),
    ];
    for (label, value) in rows {
        writeln!(out, "  {label:<24}{value:>16}")?;
    }
    let waf = report["measured"]["waf"].as_f64().map_or_else(|| "-".to_owned(), |waf| format!("{waf:.3}"));
    writeln!(out, "  {:<24}{waf:>16}", "WAF")?;
    writeln!(
        out,
        "  {:<24}{:>16}",
        "erases per block",
        format!("{}/{:.1}/{}", wear["min"], wear["mean"].as_f64().unwrap_or(0.0), wear["max"])
    )?;
    // The model's latencies, then what the clients waited (the host path included).
    write_latency_lines(&mut out, "latency", &report["timed"]["latency"])?;
    write_latency_lines(&mut out, "served ", &stats["served_latency"])?;
    Ok(())
}

/// One line per operation of a latency table in `DIR/stats` (nothing when it is absent).
fn write_latency_lines(out: &mut impl Write, label: &str, latency: &serde_json::Value) -> anyhow::Result<()> {
    for (op, summary) in latency.as_object().into_iter().flatten() {
        if let Some(summary) = summary.as_object() {
            let us = |key: &str| summary.get(key).and_then(serde_json::Value::as_f64).unwrap_or(0.0);
            writeln!(
                out,
                "  {label} {op:<16}{:>10} requests, p50 {:.1} us, p99 {:.1} us, max {:.1} us",
                summary.get("count").and_then(serde_json::Value::as_u64).unwrap_or(0),
                us("p50_us"),
                us("p99_us"),
                us("max_us")
            )?;
        }
    }
    Ok(())
}
