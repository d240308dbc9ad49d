//! `nandlab bench`: throughput of the counting-mode FTL write path, the
//! figure quoted in the README. Timing lives here, never in tests.

use crate::shared::Timing;
use nandlab_core::sim::{Counting, Timed, Workload};
use nandlab_core::ConfigBuilder;
use std::io::Write;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Preset to benchmark (uniform random single-page writes, greedy GC).
    #[arg(long, default_value = "femu-32g")]
    pub preset: String,
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
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let mut builder = ConfigBuilder::preset(&args.preset)?;
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
    let mut out = std::io::stdout().lock();
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
            #[allow(clippy::cast_precision_loss)]
            let events_per_request = timed.events as f64 / timed.requests.max(1) as f64;
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
    #[allow(clippy::cast_precision_loss)]
    let writes_per_second = args.writes as f64 / best;
    #[allow(clippy::cast_precision_loss)]
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
        #[allow(clippy::cast_precision_loss)]
        let per_cpu_second = args.writes as f64 / best_cpu;
        writeln!(out, "  per CPU-second           {per_cpu_second:>12.0}  (process CPU time, 10 ms resolution)")?;
    }
    if args.timing == Timing::On && best_cpu < f64::MAX && best_cpu > 0.0 {
        // Issue 17's timed/counting ratio: the same device, state and host
        // write count, measured right after, so both see the same machine.
        let cpu_started = process_cpu_seconds();
        simulation.run_phase(Workload::Writes(args.writes), Counting::ToEnd, &mut |_| {})?;
        if let Some(counting_cpu) = cpu_seconds_since(cpu_started) {
            let counting_cpu = counting_cpu.max(0.01);
            #[allow(clippy::cast_precision_loss)]
            let counting_per_cpu_second = args.writes as f64 / counting_cpu;
            writeln!(
                out,
                "counting, same run         {counting_per_cpu_second:>12.0}  host page writes per CPU-second; \
                 timed/counting {:.2}",
                counting_cpu / best_cpu
            )?;
        }
    }
    writeln!(out, "memory / physical page     {bytes_per_page:>12.2} bytes")?;
    Ok(())
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
    #[allow(clippy::cast_precision_loss)]
    let seconds = (user + system) as f64 / 100.0;
    Some(seconds)
}
