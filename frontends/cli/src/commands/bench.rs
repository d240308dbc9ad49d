//! `nandlab bench`: throughput of the counting-mode FTL write path, the
//! figure quoted in the README, at the preset's size or any other
//! (`--size`). Timing lives here, never in tests.

use crate::shared::Timing;
use nandlab_convert::f64_of;
use nandlab_core::sim::{Counting, Timed, Workload};
use nandlab_core::{ConfigBuilder, ConfigError};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Preset to benchmark (uniform random single-page writes, greedy GC).
    #[arg(long, default_value = "femu-32g")]
    pub preset: String,
    /// Flash size (`256GiB`, `1TiB`): the preset's device with as many
    /// blocks per plane as make this much flash; channels, chips, block and
    /// page sizes and the over-provisioning ratio stay the preset's. It must
    /// be a whole number of blocks per plane. Default: the preset's size.
    #[arg(long, value_name = "SIZE", value_parser = parse_flash_size)]
    pub size: Option<u64>,
    /// Measured host page writes after preconditioning.
    #[arg(long, default_value_t = 30_000_000)]
    pub writes: u64,
    /// Repetitions of the measured phase; the best is reported.
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// `on`: benchmark the timing model instead (closed loop at queue depth
    /// 32, simulated host requests per wall-clock second). A bare `--timing`
    /// means `on`.
    #[arg(long, value_enum, default_value_t = Timing::Off, num_args = 0..=1, default_missing_value = "on")]
    pub timing: Timing,
    /// Also write the figures, the measured counters and the provenance as
    /// JSON (`-`: to standard output, instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// What `--json` writes: the table's figures, plus what a results file
/// needs to trace them.
#[derive(Serialize)]
struct BenchReport {
    preset: String,
    flash_bytes: u64,
    physical_pages: u32,
    rho: f64,
    seed: u64,
    timing: bool,
    writes: u64,
    repeat: u32,
    preconditioning_wall_s: f64,
    preconditioning_host_pages: u64,
    steady: bool,
    measured_waf: f64,
    /// Best wall-clock rate of the repetitions (host page writes, or timed requests, per second).
    per_second: f64,
    /// Best rate per CPU-second of the process (`None` where /proc is missing).
    per_cpu_second: Option<f64>,
    memory_bytes_per_physical_page: f64,
    /// The measured phases' counters (all repetitions).
    measured: nandlab_core::metrics::Counters,
    /// /proc/loadavg when the run ended: the machine's load the figures were measured under.
    load_average: Option<String>,
    provenance: nandlab_lab::provenance::Provenance,
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let run_started = Instant::now();
    let mut builder = ConfigBuilder::preset(&args.preset)?;
    if let Some(bytes) = args.size {
        builder.set(&format!("device.blocks_per_plane={}", blocks_per_plane_for(&args.preset, bytes)?))?;
    }
    for assignment in [
        "workload.pattern=\"random\"",
        "workload.distribution=\"uniform\"",
        "workload.request_pages=1",
        "ftl.gc_policy=\"greedy\"",
    ] {
        builder.set(assignment)?;
    }
    builder.set(&format!("seed={}", args.seed))?;
    if args.timing == Timing::On {
        builder.set("timing.arrival=\"closed\"")?;
        builder.set("timing.queue_depth=32")?;
    }
    let (config, geometry) = builder.build()?;
    eprintln!(
        "bench: {} ({} physical pages of {} B, ρ = {:.3}), seed {}: preconditioning…",
        args.preset,
        geometry.physical_pages(),
        geometry.page_size,
        geometry.over_provisioning(),
        args.seed
    );
    let mut simulation = nandlab_core::Simulation::new(&config)?;
    let started = Instant::now();
    let precondition = simulation.precondition(&mut |_| {})?.cloned();
    let precondition_seconds = started.elapsed().as_secs_f64();
    let json = args.json.as_deref().map(crate::output::Output::open).transpose()?;
    let table_to_stdout = !args.json.as_deref().is_some_and(crate::output::is_stdout);
    let mut out: Box<dyn Write> =
        if table_to_stdout { Box::new(std::io::stdout().lock()) } else { Box::new(std::io::sink()) };
    let mut best = f64::MAX;
    let mut best_cpu = f64::MAX;
    let before = simulation.counters().clone();
    for _ in 0..args.repeat.max(1) {
        let started = Instant::now();
        let cpu_started = process_cpu_seconds();
        if args.timing == Timing::On {
            let timed = simulation.run_phase(Workload::Synthetic(args.writes), Timed, &mut |_| {})?;
            writeln!(
                out,
                "simulated                  {:>12.0} IOPS, write p99 {:.0} us",
                timed.iops,
                timed.latency.write.as_ref().map_or(0.0, |w| w.p99_us)
            )?;
            let events_per_request = f64_of(timed.events) / f64_of(timed.requests.max(1));
            writeln!(out, "engine events / request    {events_per_request:>12.2}")?;
        } else {
            simulation.run_phase(Workload::Writes(args.writes), Counting::ToEnd, &mut |_| {})?;
        }
        best = best.min(started.elapsed().as_secs_f64());
        if let Some(cpu) = cpu_seconds_since(cpu_started) {
            best_cpu = best_cpu.min(cpu);
        }
    }
    let measured = simulation.counters().since(&before);
    let writes_per_second = f64_of(args.writes) / best;
    let bytes_per_page = simulation.report().memory_bytes_per_physical_page;
    writeln!(
        out,
        "preconditioning            {:>12.2} s ({} host pages, steady: {})",
        precondition_seconds,
        precondition.as_ref().map_or(0, |p| p.phase.counters.host_pages_written),
        precondition.as_ref().is_some_and(|p| p.steady)
    )?;
    writeln!(out, "measured WAF               {:>12.3}", measured.waf().unwrap_or(0.0))?;
    let label = if args.timing == Timing::On { "timed requests / second" } else { "host page writes / second" };
    writeln!(
        out,
        "{label:<27}{:>12.0}  (best of {}, {} writes each, one thread)",
        writes_per_second,
        args.repeat.max(1),
        args.writes
    )?;
    if best_cpu < f64::MAX && best_cpu > 0.0 {
        // On a busy machine wall-clock time includes waiting for a core.
        let per_cpu_second = f64_of(args.writes) / best_cpu;
        writeln!(out, "  per CPU-second           {per_cpu_second:>12.0}  (process CPU time, 10 ms resolution)")?;
    }
    if args.timing == Timing::On && best_cpu < f64::MAX && best_cpu > 0.0 {
        // Issue 17's timed/counting ratio: the same device, state and host
        // write count, measured right after, so both see the same machine.
        let cpu_started = process_cpu_seconds();
        simulation.run_phase(Workload::Writes(args.writes), Counting::ToEnd, &mut |_| {})?;
        if let Some(counting_cpu) = cpu_seconds_since(cpu_started) {
            let counting_cpu = counting_cpu.max(0.01);
            let counting_per_cpu_second = f64_of(args.writes) / counting_cpu;
            writeln!(
                out,
                "counting, same run         {counting_per_cpu_second:>12.0}  host page writes per CPU-second; \
                 timed/counting {:.2}",
                counting_cpu / best_cpu
            )?;
        }
    }
    writeln!(out, "memory / physical page     {bytes_per_page:>12.2} bytes")?;
    if let Some(json) = json {
        let per_cpu_second = (best_cpu < f64::MAX && best_cpu > 0.0).then(|| f64_of(args.writes) / best_cpu);
        let report = BenchReport {
            preset: args.preset,
            flash_bytes: u64::from(geometry.physical_pages()) * u64::from(geometry.page_size),
            physical_pages: geometry.physical_pages(),
            rho: geometry.over_provisioning(),
            seed: args.seed,
            timing: args.timing == Timing::On,
            writes: args.writes,
            repeat: args.repeat.max(1),
            preconditioning_wall_s: precondition_seconds,
            preconditioning_host_pages: precondition.as_ref().map_or(0, |p| p.phase.counters.host_pages_written),
            steady: precondition.as_ref().is_some_and(|p| p.steady),
            measured_waf: measured.waf().unwrap_or(0.0),
            per_second: writes_per_second,
            per_cpu_second,
            memory_bytes_per_physical_page: bytes_per_page,
            measured,
            load_average: std::fs::read_to_string("/proc/loadavg").ok().map(|text| text.trim().to_owned()),
            provenance: nandlab_lab::provenance::Provenance::now(run_started.elapsed()),
        };
        crate::output::write_json(json, &report)?;
    }
    Ok(())
}

/// `--size`'s bytes: a size with a unit, as the configuration's sizes take.
fn parse_flash_size(text: &str) -> Result<u64, String> {
    nandlab_quote::parse_byte_size(text).map_err(|reason| format!("`{text}`: {reason}; e.g. `1TiB`"))
}

/// Blocks per plane that make `bytes` of flash with `preset`'s units, block
/// and page sizes; refused unless whole.
fn blocks_per_plane_for(preset: &str, bytes: u64) -> Result<u64, ConfigError> {
    let (_, geometry) = nandlab_core::config::preset_config(preset)?;
    let plane_block_bytes = u64::from(geometry.units())
        .saturating_mul(u64::from(geometry.pages_per_block))
        .saturating_mul(u64::from(geometry.page_size));
    let blocks = bytes / plane_block_bytes.max(1);
    if blocks == 0 || !bytes.is_multiple_of(plane_block_bytes) {
        return Err(ConfigError::new(
            "--size",
            format!(
                "{bytes} bytes is not a whole number of blocks per plane on {preset} ({} units of {}-page blocks of \
                 {} B: {plane_block_bytes} bytes per block per plane); the nearest sizes are {} and {} bytes",
                geometry.units(),
                geometry.pages_per_block,
                geometry.page_size,
                (blocks.max(1)) * plane_block_bytes,
                (blocks + 1) * plane_block_bytes,
            ),
        ));
    }
    Ok(blocks)
}

/// CPU seconds this process spent since `start` (a [`process_cpu_seconds`] reading).
fn cpu_seconds_since(start: Option<f64>) -> Option<f64> {
    Some(process_cpu_seconds()? - start?)
}

/// CPU time (user + system) of this process so far, from /proc/self/stat
/// (Linux; `None` elsewhere). /proc counts in USER_HZ = 100 ticks a second.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    let seconds = f64_of(user + system) / 100.0;
    Some(seconds)
}
