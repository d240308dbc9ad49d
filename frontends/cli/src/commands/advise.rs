//! `nandlab advise`: replays a trace under every mechanism that applies to it
//! (crate nandlab-lab, `advise`) and prints them ranked by the flash life
//! they give, with WAF, GC copies and p99 latencies. Glue only.

use crate::shared::{ConfigArgs, ProgressReporter, TraceInputArgs};
use nandlab_dhrd::parse_byte_size;
use nandlab_lab::advise::{advise, figure, lifetime_warnings, significant, write_report, Advice, AdviseOptions};
use nandlab_lab::replay::{fit_size, FitSize, ReplayMode, SizeOrigin, TraceSource};
use std::io::Write as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct AdviseArgs {
    /// The trace (any format `replay` reads).
    pub trace: PathBuf,
    #[command(flatten)]
    pub input: TraceInputArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Scale the device to the traced device's size, as `replay --fit` does.
    #[arg(long)]
    pub fit: bool,
    /// The traced device's size (as `replay --device-size`).
    #[arg(long, value_name = "SIZE", value_parser = parse_byte_size)]
    pub device_size: Option<u64>,
    /// Host writes per day (GB, 10^9 bytes) for the years of life. Default: the trace's own rate.
    #[arg(long, value_name = "GB")]
    pub gb_per_day: Option<f64>,
    /// Write the ranked table as JSON (`-`: to standard output, instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write advise.json, advise.csv, a chart, summary.md and report.html into this folder.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(args: AdviseArgs) -> anyhow::Result<()> {
    if let Some(rate) = args.gb_per_day.filter(|rate| !(rate.is_finite() && *rate > 0.0)) {
        let refusal = format!("--gb-per-day {rate}: give a positive number of GB per day");
        return Err(nandlab_lab::Error::Invalid(refusal).into());
    }
    let ([json], to_stdout) = crate::output::open_all([args.json.as_deref()])?;
    let source =
        TraceSource { path: &args.trace, format: args.input.format()?, device: args.input.trace_device.as_deref() };
    let given = args.device_size.map(|bytes| FitSize { bytes, origin: SizeOrigin::Given });
    // Resolved once, so no candidate scans the trace for its extent again.
    let device_size = fit_size(&source, &ReplayMode { fit: args.fit, device_size: given, ..ReplayMode::default() })?;
    let options = AdviseOptions { fit: false, device_size, host_gb_per_day: args.gb_per_day };
    let configure = |extra: &[String]| -> nandlab_lab::Result<nandlab_core::Config> {
        let mut sources = args.config.clone();
        sources.overrides.extend(extra.iter().cloned());
        sources.build().map(|(config, _)| config).map_err(|error| nandlab_lab::Error::Invalid(format!("{error:#}")))
    };
    let mut progress = ProgressReporter::new();
    let mut announce = |index: usize, total: usize, name: &str| eprintln!("advise: [{index}/{total}] {name}");
    let advice = advise(&source, &configure, options, &mut announce, &mut |update| {
        progress.update(update);
        Ok(())
    });
    progress.finish();
    let advice = advice?;
    if !to_stdout {
        print_ranked(&advice)?;
    }
    if let Some(dir) = &args.out {
        let html = write_report(&advice, dir)?;
        eprintln!("advise: report in {}", html.display());
    }
    json.map(|out| crate::output::write_json(out, &advice)).transpose()?;
    Ok(())
}

fn print_ranked(advice: &Advice) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "nandlab advise — {} (seed {}), best first", advice.trace, advice.seed)?;
    writeln!(
        out,
        "{:>4}  {:<40} {:>10} {:>7} {:>8} {:>12} {:>10} {:>11}",
        "rank", "configuration", "years", "x best", "WAF", "GC copies", "p99 rd us", "p99 wr us"
    )?;
    let best_years = advice.ranked.first().and_then(|best| best.years_to_first_worn);
    for (rank, outcome) in advice.ranked.iter().enumerate() {
        let share = outcome.years_to_first_worn.zip(best_years).map(|(years, best)| years / best);
        writeln!(
            out,
            "{:>4}  {:<40} {:>10} {:>7} {:>8} {:>12} {:>10} {:>11}",
            rank + 1,
            outcome.name,
            significant(outcome.years_to_first_worn),
            figure(share, 2),
            figure(outcome.waf, 3),
            outcome.gc_page_copies,
            figure(outcome.p99_read_us, 0),
            figure(outcome.p99_write_us, 0)
        )?;
    }
    let warnings = lifetime_warnings(advice);
    if !warnings.is_empty() {
        writeln!(
            out,
            "note: the lifetime forecasts carry warnings ({}; docs/lifetime.md): compare the rows with each other, \
             not with the device's rated life",
            warnings.join(", ")
        )?;
    }
    Ok(())
}
