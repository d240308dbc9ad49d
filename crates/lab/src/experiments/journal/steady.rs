//! The journal experiment's replay: the device is aged by the whole capture
//! once (the file system's fill valid, the workload begun), then by the
//! capture's workload part looped until the windowed WAF is steady and the
//! workload has written enough and wrapped the journal often enough; one
//! more pass of the workload part is measured, timed.
//!
//! Looping the workload part (not the whole capture) keeps the fill written
//! once, as on a real file system, where the files laid down before the
//! workload stay valid while it runs. The workload part starts after the
//! fill's marker: one `O_DIRECT` read of the block device by `dd` after
//! the fill's `sync` ([`FILL_END_PROCESS`]).

use crate::error::{Error, Result};
use crate::replay::{fit_error, fit_size, fitted_device, journal_sectors, ReplayMode, TracePass, TraceSource};
use crate::{Observer, Progress, Report};
use nandlab_core::metrics::{Counters, WafSeries};
use nandlab_core::{Config, Simulation};
use nandlab_trace::Op;
use serde::Serialize;
use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The process whose one read marks the end of the fill in a capture.
pub(super) const FILL_END_PROCESS: &str = "dd";

/// When aging by the looped workload stops: the windowed WAF steady, and
/// the workload (the first pass's included) has written `min_device_writes`
/// logical capacities and wrapped the journal `min_journal_wraps` times;
/// or `max_device_writes` were written, steady or not.
#[derive(Clone, Copy, Debug)]
pub(super) struct AgingRule {
    /// Window length in logical capacities of host page writes.
    pub window_device_writes: f64,
    /// Steady: this many consecutive windows each change the WAF by at most `tolerance` ...
    pub steady_windows: u32,
    pub tolerance: f64,
    pub min_device_writes: f64,
    pub min_journal_wraps: f64,
    pub max_device_writes: f64,
}

/// What the aging reached before the measured pass.
#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct Aging {
    /// Host writes of the aging (whole first pass and loops), in logical capacities.
    pub device_writes: f64,
    /// Journal pages written over the journal's size.
    pub journal_wraps: f64,
    /// The windowed WAF met the rule before the budget ran out.
    pub steady: bool,
    /// The rule's device writes and journal wraps were both reached.
    pub long_enough: bool,
    /// WAF of the last aging windows, oldest first.
    pub last_windows: Vec<f64>,
}

/// Windows in a row whose WAF changed by at most the rule's tolerance.
struct Steadiness {
    series: WafSeries,
    tolerance: f64,
    streak: u32,
    previous: Option<f64>,
}

impl Steadiness {
    fn observe(&mut self, counters: &Counters) {
        if let Some(waf) = self.series.observe(counters) {
            if let Some(previous) = self.previous {
                let change = (waf - previous).abs() / previous.max(f64::MIN_POSITIVE);
                self.streak = if change <= self.tolerance { self.streak + 1 } else { 0 };
            }
            self.previous = Some(waf);
        }
    }
}

/// Replays `path` on the open-channel device `config` describes (fitted to
/// the traced file system): aged as the module says, then one timed pass of
/// the workload part. `journal_pages` is the journal's size in pages.
pub(super) fn replay_steady(
    path: &Path,
    mut config: Config,
    rule: &AgingRule,
    journal_pages: u64,
    observer: &mut dyn Observer,
) -> Result<(Report, Aging)> {
    let source = TraceSource::file(path);
    let mode = ReplayMode { fit: true, ..ReplayMode::default() };
    if let Some(size) = fit_size(&source, &mode)? {
        config.device = fitted_device(&config, size).map_err(|error| fit_error(error, size))?;
    }
    let header = source.open()?.header().clone();
    let workload_start = fill_end(&source)?;
    let mut simulation = Simulation::with_journal(&config, &journal_sectors(&header.journal, &header))?;
    let stop = Arc::new(AtomicBool::new(false));
    simulation.stop_when(Arc::clone(&stop));
    let mut progress = |update: Progress| {
        if observer.progress(update).is_err() {
            stop.store(true, Ordering::Relaxed);
        }
    };
    let logical = f64::from(simulation.geometry().logical_pages);
    #[allow(clippy::cast_precision_loss)]
    let capacities = |pages: u64| pages as f64 / logical;
    let journal_written = Rc::new(Cell::new(0_u64));
    let mut whole = TracePass::new(&source, 0, false, Rc::clone(&journal_written))?;
    simulation.age_with(&mut whole, &mut progress)?;
    let start = simulation.counters().clone();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let window_pages = (rule.window_device_writes * logical) as u64;
    let mut steadiness = Steadiness {
        series: WafSeries::new(window_pages, &start),
        tolerance: rule.tolerance,
        streak: 0,
        previous: None,
    };
    #[allow(clippy::cast_precision_loss)]
    let wraps = |journal: &Cell<u64>| journal.get() as f64 / journal_pages.max(1) as f64;
    let mut looped = TracePass::new(&source, workload_start, true, Rc::clone(&journal_written))?;
    let mut settled = |counters: &Counters| {
        steadiness.observe(counters);
        let written = capacities(counters.host_pages_written);
        let long_enough = written >= rule.min_device_writes && wraps(&journal_written) >= rule.min_journal_wraps;
        (steadiness.streak >= rule.steady_windows && long_enough) || written >= rule.max_device_writes
    };
    // The first pass alone may already be long enough; the loop still runs until steady.
    simulation.age_with_until(&mut looped, &mut progress, &mut settled)?;
    let aged = simulation.counters().clone();
    let aging = Aging {
        device_writes: capacities(aged.host_pages_written),
        journal_wraps: wraps(&journal_written),
        steady: steadiness.streak >= rule.steady_windows,
        long_enough: capacities(aged.host_pages_written) >= rule.min_device_writes
            && wraps(&journal_written) >= rule.min_journal_wraps,
        last_windows: last_windows(&steadiness.series, rule.steady_windows as usize + 1),
    };
    simulation.settle()?;
    let mut measured = TracePass::new(&source, workload_start, false, journal_written)?;
    simulation.replay_timed(&mut measured, &mut progress)?;
    if stop.load(Ordering::Relaxed) {
        return Err(Error::Failed("stopped by its observer".to_owned()));
    }
    Ok((simulation.report(), aging))
}

fn last_windows(series: &WafSeries, count: usize) -> Vec<f64> {
    let points = series.points();
    points[points.len().saturating_sub(count)..].iter().map(|point| point.waf_window).collect()
}

/// The index of the first record after the fill's marker: one read by
/// [`FILL_END_PROCESS`].
pub(super) fn fill_end(source: &TraceSource<'_>) -> Result<u64> {
    let mut index = 0;
    for record in source.open()? {
        let record = record?;
        index += 1;
        if record.op == Op::Read && record.process.as_str() == FILL_END_PROCESS {
            return Ok(index);
        }
    }
    Err(Error::Invalid(format!(
        "{}: no read by `{FILL_END_PROCESS}` marks where the fill ends (a capture made before the marker was \
         added): delete it so that the experiment captures it again",
        source.path.display()
    )))
}
