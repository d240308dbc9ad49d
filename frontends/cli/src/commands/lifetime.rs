//! `nandlab lifetime`: how long a device lasts at W GB/day with a workload, forecast from a short
//! run of that workload (the configured synthetic mix, or a trace replayed in counting mode).
//! The model is nandlab-core's (docs/lifetime.md); this file is glue.

use std::path::PathBuf;

use nandlab_lab::replay::{replay, ReplayMode, TraceSource};

use crate::shared::{print_lifetime, warn_lifetime, ConfigArgs, TraceInputArgs};

#[derive(clap::Args, Debug)]
pub struct LifetimeArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Host writes per day, in GB (10^9 bytes).
    #[arg(long, value_name = "GB")]
    gb_per_day: f64,
    /// The workload: this trace (any format `replay` reads) instead of the configured synthetic mix.
    #[arg(long, value_name = "TRACE")]
    trace: Option<PathBuf>,
    /// How to read `--trace`.
    #[command(flatten)]
    input: TraceInputArgs,
    /// Share of blocks whose wear-out ends the device (default 0.02, Telomere Section 6.2).
    #[arg(long, value_name = "SHARE")]
    worn_share: Option<f64>,
    /// Write the whole report (forecast under `lifetime`) as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

pub fn run(args: LifetimeArgs) -> anyhow::Result<()> {
    let (mut config, _) = args.config.build()?;
    config.lifetime.host_gb_per_day = Some(args.gb_per_day);
    if let Some(share) = args.worn_share {
        config.lifetime.worn_share = share;
    }
    config.validate()?;
    let report = match &args.trace {
        Some(path) => {
            let source = TraceSource { path, format: args.input.format()?, device: args.input.trace_device.as_deref() };
            replay(&source, config, ReplayMode::default(), &mut |_| Ok(()))?
        }
        None => nandlab_core::run(&config, &mut |_| {})?,
    };
    let measured = &report.measured;
    println!(
        "nandlab {} — lifetime of {} ({} logical) at {} GB/day, from a run of {} host pages, WAF {}",
        report.nandlab_version,
        report.config.name.as_deref().unwrap_or("custom"),
        crate::shared::bytes(report.device.logical_bytes),
        args.gb_per_day,
        measured.counters.host_pages_written,
        measured.waf.map_or_else(|| "-".to_owned(), |waf| format!("{waf:.3}"))
    );
    warn_lifetime(&report.lifetime);
    print_lifetime(&report.lifetime)?;
    if let Some(path) = &args.json {
        crate::output::write_json(crate::output::Output::open(path)?, &report)?;
    }
    Ok(())
}
