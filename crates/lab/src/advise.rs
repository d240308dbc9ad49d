//! `nandlab advise`: which host-side mechanism saves this workload's flash?
//!
//! One trace, one device, every mechanism that applies to the trace —
//! DISCARD off / online / Delay-D / periodic, hot/cold streams, journal
//! separation on the open-channel device (when the trace has a journal),
//! priority-aware cleaning (when it has priority requests) and combinations
//! of the best DISCARD policy with the others — each replayed on the device
//! aged by the workload itself, in timed mode. The answer is a table ranked
//! by years until the first block wears out, with WAF, GC copies and p99
//! latencies beside it; each row says its configuration as `--set` keys, so
//! any row can be re-run with `nandlab replay`.

use crate::replay::{replay, ReplayMode, TraceSource};
use crate::{Observer, Result};
use nandlab_core::timing::{Arrival, LatencySummary};
use nandlab_core::{Config, Report};
use nandlab_report::{Axis, BarChart, BarSeries, OutputDir};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Version of the [`Advice`] document (`advise --json`).
pub const ADVICE_SCHEMA_VERSION: u32 = 1;

/// One configuration advise tries: a name and the keys it sets over the
/// user's configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Candidate {
    pub name: String,
    pub overrides: Vec<String>,
}

impl Candidate {
    fn new(name: &str, overrides: &[&str]) -> Self {
        Self { name: name.to_owned(), overrides: overrides.iter().map(|key| (*key).to_owned()).collect() }
    }

    fn and(&self, other: &Candidate) -> Self {
        let mut overrides = self.overrides.clone();
        overrides.extend(other.overrides.iter().cloned());
        Self { name: format!("{} + {}", self.name, other.name), overrides }
    }
}

/// What a trace holds that decides which mechanisms apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TraceTraits {
    pub discards: u64,
    pub journal_commits: u64,
    pub priority_requests: u64,
}

/// The DISCARD policies (Delay-D paper): every trace gets all four, since a
/// trace without DISCARDs shows they cost nothing.
fn discard_policies() -> Vec<Candidate> {
    ["off", "online", "delay-d", "periodic"]
        .iter()
        .map(|policy| Candidate::new(&format!("discard {policy}"), &[&format!("discard.policy=\"{policy}\"")]))
        .collect()
}

/// The placements and cleaning policies that apply to `traits`, each to be
/// combined with the best DISCARD policy.
fn placements(traits: TraceTraits) -> Vec<Candidate> {
    let mut placements = vec![Candidate::new("hot/cold streams", &["host.classifier=\"journal-hot-cold\""])];
    if traits.journal_commits > 0 {
        // Journal separation (pblk-like host FTL on an open-channel device): against the same
        // device without separation, so the row shows separation, not the device change.
        placements.push(Candidate::new("open-channel", &["ftl.kind=\"open-channel\""]));
        placements.push(Candidate::new(
            "journal separation",
            &["ftl.kind=\"open-channel\"", "host.classifier=\"journal\"", "pblk.separate=true"],
        ));
    }
    if traits.priority_requests > 0 {
        placements.push(Candidate::new("priority-aware cleaning", &["timing.priority_aware_gc=true"]));
    }
    placements
}

/// One tried configuration's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub name: String,
    pub overrides: Vec<String>,
    pub waf: Option<f64>,
    pub gc_page_copies: u64,
    pub erases: u64,
    /// Years until the first block reaches its rated P/E cycles, at the
    /// trace's write rate (or the one given).
    pub years_to_first_worn: Option<f64>,
    pub p99_read_us: Option<f64>,
    pub p99_write_us: Option<f64>,
    /// Warnings of the lifetime forecast (too short a run, not aged…).
    pub lifetime_warnings: Vec<String>,
}

impl Outcome {
    fn from_report(candidate: &Candidate, report: &Report) -> Self {
        let latency = report.timed.as_ref().map(|timed| &timed.latency);
        let p99 = |summary: Option<&LatencySummary>| summary.map(|summary| summary.p99_us);
        Self {
            name: candidate.name.clone(),
            overrides: candidate.overrides.clone(),
            waf: report.measured.waf,
            gc_page_copies: report.measured.counters.gc_page_copies,
            erases: report.measured.counters.erases,
            years_to_first_worn: report.lifetime.years_to_first_worn,
            p99_read_us: latency.and_then(|latency| p99(latency.read.as_ref())),
            p99_write_us: latency.and_then(|latency| p99(latency.write.as_ref())),
            lifetime_warnings: report
                .lifetime
                .warnings
                .iter()
                .filter_map(|warning| serde_json::to_value(warning).ok())
                .map(|value| value.as_str().map_or_else(|| value.to_string(), str::to_owned))
                .collect(),
        }
    }

    /// Ranking order: longer life first (to the three significant digits
    /// shown: the forecast is no finer), then lower WAF, then fewer GC copies.
    fn better_than(&self, other: &Self) -> std::cmp::Ordering {
        let years = |outcome: &Self| outcome.years_to_first_worn.map_or(f64::INFINITY, three_significant_digits);
        let waf = |outcome: &Self| outcome.waf.unwrap_or(1.0);
        years(other)
            .total_cmp(&years(self))
            .then(waf(self).total_cmp(&waf(other)))
            .then(self.gc_page_copies.cmp(&other.gc_page_copies))
    }
}

fn three_significant_digits(value: f64) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let scale = 10f64.powf(2.0 - value.abs().log10().floor());
    (value * scale).round() / scale
}

/// The answer: every outcome, best first.
#[derive(Clone, Debug, Serialize)]
pub struct Advice {
    pub schema_version: u32,
    pub trace: String,
    pub seed: u64,
    pub host_gb_per_day: Option<f64>,
    pub traits: TraceTraits,
    pub ranked: Vec<Outcome>,
}

/// How advise replays: device scaling as `replay --fit` / `--device-size`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AdviseOptions {
    pub fit: bool,
    pub device_size: Option<crate::replay::FitSize>,
    /// Host writes per day for the lifetime forecast; `None`: the trace's own rate.
    pub host_gb_per_day: Option<f64>,
}

/// Replays `source` under every mechanism that applies and ranks them.
/// `configure` builds the user's configuration with extra `--set`
/// assignments on top; `announce` hears each candidate before it runs
/// (index from 1, total, name), `observer` watches each replay.
pub fn advise(
    source: &TraceSource<'_>,
    configure: &dyn Fn(&[String]) -> Result<Config>,
    options: AdviseOptions,
    announce: &mut dyn FnMut(usize, usize, &str),
    observer: &mut dyn Observer,
) -> Result<Advice> {
    let mut run = |candidate: &Candidate, index: usize, total: usize| -> Result<Report> {
        announce(index, total, &candidate.name);
        let mut config = configure(&candidate.overrides)?;
        if options.host_gb_per_day.is_some() {
            config.lifetime.host_gb_per_day = options.host_gb_per_day;
        }
        let mode = ReplayMode {
            fit: options.fit,
            device_size: options.device_size,
            timed: Some(Arrival::Open),
            ..ReplayMode::default()
        };
        replay(source, config, mode, observer)
    };
    let policies = discard_policies();
    let mut outcomes = Vec::new();
    let mut traits = TraceTraits::default();
    for (index, candidate) in policies.iter().enumerate() {
        let report = run(candidate, index + 1, policies.len())?;
        traits = TraceTraits {
            discards: report.host.discards,
            journal_commits: report.host.journal_commits,
            priority_requests: report.host.priority,
        };
        outcomes.push(Outcome::from_report(candidate, &report));
    }
    let best_discard = best(&outcomes).map_or(0, |(at, _)| at);
    let placements = placements(traits);
    let total = policies.len() + placements.len();
    for (index, placement) in placements.iter().enumerate() {
        let candidate = policies[best_discard].and(placement);
        let report = run(&candidate, policies.len() + index + 1, total)?;
        outcomes.push(Outcome::from_report(&candidate, &report));
    }
    outcomes.sort_by(Outcome::better_than);
    let seed = configure(&[])?.seed;
    Ok(Advice {
        schema_version: ADVICE_SCHEMA_VERSION,
        trace: source.path.display().to_string(),
        seed,
        host_gb_per_day: options.host_gb_per_day,
        traits,
        ranked: outcomes,
    })
}

/// Writes `advice` into `dir`: `advise.json`, `advise.csv`, a bar chart of
/// the years each configuration gives (`advise-years.svg`), `summary.md` and
/// the self-contained `report.html`. Returns the HTML report's path.
pub fn write_report(advice: &Advice, dir: &Path) -> Result<PathBuf> {
    let out = OutputDir::create(dir)?;
    out.write_json("advise.json", advice)?;
    let rows: Vec<CsvRow<'_>> =
        advice.ranked.iter().enumerate().map(|(at, outcome)| CsvRow::new(at + 1, outcome)).collect();
    out.write_csv("advise.csv", &rows)?;
    let names: Vec<String> = advice.ranked.iter().map(|outcome| outcome.name.clone()).collect();
    let chart = match advice.ranked.iter().map(|outcome| outcome.years_to_first_worn).collect::<Option<Vec<f64>>>() {
        Some(years) => BarChart::new("Years until the first block wears out", names, Axis::new("years"))
            .with(BarSeries::new("nandlab", years)),
        None => BarChart::new("Write amplification", names, Axis::new("WAF"))
            .with(BarSeries::new("nandlab", advice.ranked.iter().map(|outcome| outcome.waf.unwrap_or(1.0)).collect())),
    };
    out.write_bar_chart("advise-years.svg", &chart)?;
    let markdown = markdown(advice);
    out.write_text("summary.md", &markdown)?;
    Ok(out.write_html("report.html", "nandlab advise", &markdown)?)
}

/// One CSV row: the outcome with its overrides joined by spaces.
#[derive(Serialize)]
struct CsvRow<'a> {
    rank: usize,
    name: &'a str,
    waf: Option<f64>,
    gc_page_copies: u64,
    erases: u64,
    years_to_first_worn: Option<f64>,
    p99_read_us: Option<f64>,
    p99_write_us: Option<f64>,
    overrides: String,
}

impl<'a> CsvRow<'a> {
    fn new(rank: usize, outcome: &'a Outcome) -> Self {
        Self {
            rank,
            name: &outcome.name,
            waf: outcome.waf,
            gc_page_copies: outcome.gc_page_copies,
            erases: outcome.erases,
            years_to_first_worn: outcome.years_to_first_worn,
            p99_read_us: outcome.p99_read_us,
            p99_write_us: outcome.p99_write_us,
            overrides: outcome.overrides.join(" "),
        }
    }
}

/// The summary: the ranked table (each figure beside the best's) and how to re-run a row.
pub fn markdown(advice: &Advice) -> String {
    let mut text = format!(
        "# Which mechanism saves this workload's flash?\n\nTrace `{}`, seed {}; each configuration replayed in timed \
         mode on the device aged by the trace itself. Lifetime at {}.\n\n",
        advice.trace,
        advice.seed,
        advice.host_gb_per_day.map_or_else(|| "the trace's own write rate".to_owned(), |rate| format!("{rate} GB/day"))
    );
    text.push_str(
        "| rank | configuration | years to first wear-out | WAF | GC copies | p99 read µs | p99 write µs |\n",
    );
    text.push_str("| --- | --- | --- | --- | --- | --- | --- |\n");
    for (rank, outcome) in advice.ranked.iter().enumerate() {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} | {} | {} | {} |",
            rank + 1,
            outcome.name,
            significant(outcome.years_to_first_worn),
            figure(outcome.waf, 3),
            outcome.gc_page_copies,
            figure(outcome.p99_read_us, 0),
            figure(outcome.p99_write_us, 0)
        );
    }
    let warnings = lifetime_warnings(advice);
    if !warnings.is_empty() {
        let _ = write!(
            text,
            "\nThe lifetime forecasts carry warnings ({}; docs/lifetime.md): compare the rows with each other, \
             not with a device's rated life.\n",
            warnings.join(", ")
        );
    }
    text.push_str("\n![Years until the first block wears out](advise-years.svg)\n\n");
    text.push_str("Re-run a row with `nandlab replay TRACE --timing on --set KEY=VALUE …` and its keys:\n\n");
    for outcome in &advice.ranked {
        let _ = writeln!(text, "- {}: `{}`", outcome.name, outcome.overrides.join(" "));
    }
    text
}

/// `value` with `decimals` decimals, or `-` when there is none.
pub fn figure(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".to_owned(), |value| format!("{value:.decimals$}"))
}

/// `value` to three significant digits (years of life span 10^-4 to 10^3
/// across workloads), or `-` when there is none.
pub fn significant(value: Option<f64>) -> String {
    match value {
        None => "-".to_owned(),
        Some(value) if value == 0.0 || !value.is_finite() => format!("{value}"),
        Some(value) => {
            // Digits after the point that leave three significant ones (none at 100 and above).
            let magnitude = value.abs().log10().floor();
            let decimals = if magnitude >= 2.0 { 0 } else { (2.0 - magnitude) as usize };
            format!("{value:.decimals$}")
        }
    }
}

/// The lifetime warnings any outcome carries, each once, in order.
pub fn lifetime_warnings(advice: &Advice) -> Vec<&str> {
    let mut warnings: Vec<&str> = Vec::new();
    for warning in advice.ranked.iter().flat_map(|outcome| &outcome.lifetime_warnings) {
        if !warnings.contains(&warning.as_str()) {
            warnings.push(warning);
        }
    }
    warnings
}

fn best(outcomes: &[Outcome]) -> Option<(usize, &Outcome)> {
    outcomes.iter().enumerate().min_by(|(_, left), (_, right)| left.better_than(right))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(name: &str, years: Option<f64>, waf: f64, copies: u64) -> Outcome {
        Outcome {
            name: name.to_owned(),
            overrides: Vec::new(),
            waf: Some(waf),
            gc_page_copies: copies,
            erases: 0,
            years_to_first_worn: years,
            p99_read_us: None,
            p99_write_us: None,
            lifetime_warnings: Vec::new(),
        }
    }

    #[test]
    fn years_keep_three_significant_digits() {
        let shown: Vec<String> =
            [Some(0.000_123_4), Some(0.0421), Some(5.678), Some(1234.5), None].into_iter().map(significant).collect();
        assert_eq!(shown, ["0.000123", "0.0421", "5.68", "1234", "-"]);
    }

    #[test]
    fn longer_life_ranks_first_then_lower_waf_then_fewer_copies() {
        let mut outcomes = [
            outcome("short", Some(1.0), 1.0, 0),
            outcome("long, high waf", Some(5.0), 2.0, 9),
            outcome("long, low waf", Some(5.0), 1.5, 9),
            outcome("long, low waf, few copies", Some(5.0), 1.5, 3),
            outcome("as long to three digits, lowest waf", Some(4.999), 1.2, 3),
        ];
        outcomes.sort_by(Outcome::better_than);
        let names: Vec<&str> = outcomes.iter().map(|outcome| outcome.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "as long to three digits, lowest waf",
                "long, low waf, few copies",
                "long, low waf",
                "long, high waf",
                "short"
            ]
        );
    }

    #[test]
    fn journal_separation_and_priority_cleaning_apply_only_when_the_trace_has_them() {
        let names = |traits| placements(traits).into_iter().map(|candidate| candidate.name).collect::<Vec<_>>();
        assert_eq!(names(TraceTraits::default()), ["hot/cold streams"]);
        let rich = TraceTraits { discards: 1, journal_commits: 3, priority_requests: 2 };
        assert_eq!(names(rich), ["hot/cold streams", "open-channel", "journal separation", "priority-aware cleaning"]);
    }
}
