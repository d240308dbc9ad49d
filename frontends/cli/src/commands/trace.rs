//! `nandlab trace`: inspect (`info`), convert (`convert`) and benchmark the
//! parsing of (`bench`) block traces. The formats live in `nandlab-trace`.

use crate::shared::TraceInputArgs;
use anyhow::Context;
use nandlab_trace::{
    Flags, Format, Op, ProcessName, ReadOptions, Record, Sector, SectorCount, TimestampNs, TraceRead, TraceSummary,
};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(clap::Subcommand)]
enum TraceCommand {
    /// Counts by operation, size distribution, footprint, duration, processes.
    Info(InfoArgs),
    /// Convert a trace between formats (streaming).
    Convert(ConvertArgs),
    /// Print requests as text: time (s), operation, flags, start sector, sectors, process, journal mark.
    Cat(CatArgs),
    /// Measure parsing speed of every format on a synthetic trace.
    Bench(BenchArgs),
}

#[derive(clap::Args)]
struct InfoArgs {
    trace: PathBuf,
    #[command(flatten)]
    input: TraceInputArgs,
}

#[derive(clap::Args)]
struct ConvertArgs {
    input_path: PathBuf,
    output_path: PathBuf,
    #[command(flatten)]
    input: TraceInputArgs,
    /// Output format (native, msr, fio-v2, fio-v3, mqsim, disksim); from the extension (.nlt, .csv, .iolog, .mqsim, .disksim) or native when absent.
    #[arg(long = "to", value_name = "FORMAT")]
    to: Option<String>,
}

#[derive(clap::Args)]
struct CatArgs {
    trace: PathBuf,
    #[command(flatten)]
    input: TraceInputArgs,
    /// Print at most this many requests.
    #[arg(long)]
    limit: Option<u64>,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Synthetic requests per format.
    #[arg(long, default_value_t = 5_000_000)]
    records: u64,
    /// Directory for the generated files (tmpfs keeps the disk out of the measurement).
    #[arg(long, default_value = "/dev/shm")]
    dir: PathBuf,
    /// Seed of the synthetic address sequence.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: TraceArgs) -> anyhow::Result<()> {
    match args.command {
        TraceCommand::Info(info) => run_info(&info),
        TraceCommand::Convert(convert) => run_convert(&convert),
        TraceCommand::Cat(cat) => run_cat(&cat),
        TraceCommand::Bench(bench) => run_bench(&bench),
    }
}

fn open_input(path: &Path, input: &TraceInputArgs) -> anyhow::Result<Box<dyn TraceRead + Send>> {
    let options = ReadOptions { device: input.trace_device.clone() };
    Ok(nandlab_trace::open(path, input.format()?, &options)?)
}

fn run_info(args: &InfoArgs) -> anyhow::Result<()> {
    let mut reader = open_input(&args.trace, &args.input)?;
    let header = reader.header().clone();
    let mut summary = TraceSummary::new(&header);
    for record in &mut reader {
        summary.add(&record?, &header);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "trace           {}", args.trace.display())?;
    if let Some(source) = &header.source_format {
        writeln!(out, "format          {source}")?;
    }
    if let Some(size) = header.device_size_bytes {
        writeln!(
            out,
            "device size     {:.1} MiB ({} B sectors)",
            size as f64 / f64::from(1 << 20),
            header.sector_size_bytes
        )?;
    }
    if let Some(capture) = &header.capture {
        writeln!(
            out,
            "captured on     {} (kernel {}), mount -o {}, command: {}",
            capture.file_system,
            capture.kernel,
            capture.mount_options,
            capture.command.join(" ")
        )?;
        let block_size = capture.block_size_bytes.map_or_else(|| "unknown".to_owned(), |bytes| format!("{bytes} B"));
        let options =
            if capture.mkfs_options.is_empty() { "not recorded".to_owned() } else { capture.mkfs_options.join(" ") };
        writeln!(out, "mkfs            options {options}, block size {block_size}")?;
        if capture.events_lost > 0 {
            writeln!(
                out,
                "WARNING         the kernel dropped {} events during capture: the trace is incomplete",
                capture.events_lost
            )?;
        }
    }
    for range in &header.journal {
        // A validated header's journal ranges fit in 64-bit byte addresses.
        let mib = range.len.saturating_mul(u64::from(header.sector_size_bytes)) as f64 / f64::from(1 << 20);
        writeln!(out, "journal         sectors {}..{} ({mib:.1} MiB)", range.start.0, range.end().0)?;
    }
    write!(out, "{summary}")?;
    Ok(out.flush()?)
}

fn run_convert(args: &ConvertArgs) -> anyhow::Result<()> {
    let to = match &args.to {
        Some(name) => Format::from_name(name)?,
        None => Format::from_extension(&args.output_path).unwrap_or(Format::Native),
    };
    let mut reader = open_input(&args.input_path, &args.input)?;
    let mut writer = nandlab_trace::create(&args.output_path, to, reader.header())?;
    for record in &mut reader {
        writer.write(&record?)?;
    }
    let summary = writer.finish()?;
    eprintln!("wrote {} requests to {} ({to})", summary.written, args.output_path.display());
    for op in Op::ALL {
        let dropped = summary.left_out[op.index()];
        if dropped > 0 {
            eprintln!("warning: the {to} format cannot hold {op} requests: {dropped} left out", op = op.name());
        }
    }
    Ok(())
}

fn run_cat(args: &CatArgs) -> anyhow::Result<()> {
    let mut reader = open_input(&args.trace, &args.input)?;
    let header = reader.header().clone();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for record in reader.by_ref().take(usize::try_from(args.limit.unwrap_or(u64::MAX)).unwrap_or(usize::MAX)) {
        let record = record?;
        let journal =
            if record.op == Op::Write && header.is_journal(record.start, record.len) { " journal" } else { "" };
        let stream = record.stream.map(|tag| format!(" stream={}", tag.0)).unwrap_or_default();
        // `nandlab trace cat | head` closes the pipe early: main ends quietly then.
        writeln!(
            out,
            "{:>14.6} {:<7} {:<4} {:>12} {:>8} {}{journal}{stream}",
            record.timestamp.0 as f64 / 1e9,
            record.op.name(),
            record.flags,
            record.start.0,
            record.len.0,
            if record.process.is_empty() { "-" } else { record.process.as_str() }
        )?;
    }
    Ok(out.flush()?)
}

/// A deterministic request mix shaped like a file-system capture: mostly
/// sequential 4-512 KiB writes, some random 4 KiB reads, discards, flushes.
fn synthetic_records(count: u64, seed: u64) -> impl Iterator<Item = Record> {
    let mut state = seed;
    let mut next_sector = 0u64;
    let names = ["dd", "jbd2/loop0-8", "kworker/1:1H"].map(ProcessName::new);
    (0..count).map(move |index| {
        // SplitMix64: a fixed, dependency-free sequence for a benchmark input.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let random = z ^ (z >> 31);
        let (op, start, len) = match random % 16 {
            0 => (Op::Flush, 0, 0),
            1 => (Op::Discard, (random >> 8) % (1 << 24), 2048),
            2..=4 => (Op::Read, ((random >> 8) % (1 << 24)) & !7, 8),
            _ => (Op::Write, next_sector, 8 << ((random >> 40) % 7)),
        };
        if op == Op::Write {
            next_sector = (next_sector + u64::from(len)) % (1 << 24);
        }
        Record {
            timestamp: TimestampNs(index * 10_000 + random % 1000),
            op,
            flags: if op == Op::Write { Flags::SYNC } else { Flags::NONE },
            start: Sector(start),
            len: SectorCount(len),
            process: names[(random >> 20) as usize % names.len()],
            stream: None,
        }
    })
}

/// Bench input for the read-only text formats, in the line layout each
/// reader expects (the writable formats are written by their own writers).
fn write_bench_text(path: &Path, format: Format, records: impl Iterator<Item = Record>) -> anyhow::Result<()> {
    let mut output = nandlab_trace::OutputFile::create(path).with_context(|| format!("creating {}", path.display()))?;
    if format == Format::Tracefs {
        writeln!(output, "# tracer: nop")?;
    }
    for (sequence, record) in records.enumerate() {
        let rwbs = match record.op {
            Op::Read => "R",
            Op::Write => "WS",
            Op::Discard => "D",
            Op::Flush => "FF",
        };
        let (start, len, process) = (record.start.0, record.len.0, record.process);
        let ns = record.timestamp.0 + 4_000_000_000_000;
        let (seconds, nanos) = (ns / 1_000_000_000, ns % 1_000_000_000);
        match format {
            Format::Tracefs => {
                let bytes = u64::from(len) * 512;
                writeln!(output, "{process:>16}-{:<7} [001] ..... {seconds}.{:06}: block_rq_issue: 7,0 {rwbs} {bytes} () {start} + {len} be,0,4 [{process}]", 1234, nanos / 1000)?;
            }
            Format::Blkparse if record.op == Op::Flush => {
                writeln!(output, "  7,0    1 {sequence:>8} {seconds:>5}.{nanos:09}  1234  D  {rwbs} [{process}]")?
            }
            Format::Blkparse => writeln!(
                output,
                "  7,0    1 {sequence:>8} {seconds:>5}.{nanos:09}  1234  D  {rwbs} {start} + {len} [{process}]"
            )?,
            Format::Umass if matches!(record.op, Op::Read | Op::Write) => {
                let opcode = if record.op == Op::Read { 'r' } else { 'w' };
                writeln!(output, "0,{start},{},{opcode},{seconds}.{nanos:09}", u64::from(len) * 512)?;
            }
            _ => {}
        }
    }
    output.commit().with_context(|| format!("writing {}", path.display()))
}

fn run_bench(args: &BenchArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.dir).with_context(|| format!("creating {}", args.dir.display()))?;
    eprintln!(
        "trace bench: {} synthetic requests per format, seed {}, files in {}",
        args.records,
        args.seed,
        args.dir.display()
    );
    let mut files = Vec::new();
    for format in [Format::Tracefs, Format::Blkparse, Format::Umass] {
        let path = args.dir.join(format!("nandlab-bench.{}.txt", format.name()));
        write_bench_text(&path, format, synthetic_records(args.records, args.seed))?;
        files.push((format, path));
    }
    for format in [Format::Native, Format::FioV3, Format::Msr] {
        let path = args.dir.join(format!("nandlab-bench.{}", format.name()));
        let mut writer = nandlab_trace::create(&path, format, &nandlab_trace::TraceHeader::default())?;
        for record in synthetic_records(args.records, args.seed) {
            writer.write(&record)?;
        }
        writer.finish()?;
        files.push((format, path));
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{:<8} {:>12} {:>12} {:>14} {:>12}", "format", "requests", "file MiB", "requests/s", "MB/s")?;
    for (format, path) in &files {
        let bytes = std::fs::metadata(path)?.len();
        let started = Instant::now();
        let mut count = 0u64;
        for record in nandlab_trace::open(path, Some(*format), &ReadOptions::default())? {
            std::hint::black_box(record?);
            count += 1;
        }
        let seconds = started.elapsed().as_secs_f64();
        writeln!(
            out,
            "{:<8} {:>12} {:>12.1} {:>14.0} {:>12.1}",
            format.name(),
            count,
            bytes as f64 / f64::from(1 << 20),
            count as f64 / seconds,
            bytes as f64 / seconds / 1e6
        )?;
        std::fs::remove_file(path)?;
    }
    Ok(())
}
