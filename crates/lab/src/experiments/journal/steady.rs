//! The journal experiment's replay: workload aging (the one workload aging
//! of every replay, `Simulation::age_with_workload`, under the
//! `[precondition]` steady-state rule) whose first pass is the whole
//! capture — the file system's fill, then the workload — and whose further
//! passes are the capture's workload part, until the windowed WAF is steady
//! at the end of a pass; the aging's GC debt is paid
//! (`Simulation::settle`) and one more pass of the workload part is
//! measured, timed.
//!
//! Looping the workload part (not the whole capture) keeps the fill written
//! once, as on a real file system, where the files laid down before the
//! workload stay valid while it runs. The workload part starts after the
//! fill's marker: one `O_DIRECT` read of the block device by `dd` after
//! the fill's `sync` ([`FILL_END_PROCESS`]).

use crate::error::{Error, Result};
use crate::replay::{fit_error, fit_size, fitted_device, ReplayMode, TracePass, TraceSource};
use crate::{Observer, Progress, Report};
use nandlab_convert::f64_of;
use nandlab_core::sim::{Timed, Workload};
use nandlab_core::{Config, Simulation};
use nandlab_trace::host::journal_sectors;
use nandlab_trace::Op;
use serde::Serialize;
use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The process whose one read marks the end of the fill in a capture.
pub(super) const FILL_END_PROCESS: &str = "dd";

/// What the aging reached before the measured pass.
#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct Aging {
    /// Host writes of the aging (whole first pass and loops), in logical capacities.
    pub device_writes: f64,
    /// Journal pages written over the journal's size.
    pub journal_wraps: f64,
    /// Whole passes run (the first, the whole capture, included).
    pub passes: u64,
    /// The windowed WAF met the `[precondition]` rule before its budget ran out.
    pub steady: bool,
    /// WAF of the last aging window.
    pub final_window_waf: Option<f64>,
}

/// Replays `path` on the open-channel device `config` describes (fitted to
/// the traced file system): aged as the module says, then one timed pass of
/// the workload part. `journal_pages` is the journal's size in pages.
pub(super) fn replay_steady(
    path: &Path,
    mut config: Config,
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
    let journal_written = Rc::new(Cell::new(0_u64));
    let mut passes = TracePass::new(&source, 0, Rc::clone(&journal_written))?.restarting_at(workload_start);
    let logical = f64::from(simulation.geometry().logical_pages);
    let aged = simulation.age_with_workload(&mut passes, &mut progress);
    if let Some(failure) = passes.take_failure() {
        return Err(failure);
    }
    let aged = aged?;
    let aging = Aging {
        device_writes: f64_of(aged.phase.counters.host_pages_written) / logical,
        journal_wraps: f64_of(journal_written.get()) / f64_of(journal_pages.max(1)),
        passes: aged.passes.unwrap_or(0),
        steady: aged.steady,
        final_window_waf: aged.final_window_waf,
    };
    simulation.settle()?;
    let mut measured = TracePass::new(&source, workload_start, journal_written)?;
    simulation.run_phase(Workload::Events(&mut measured), Timed, &mut progress)?;
    if let Some(failure) = measured.take_failure() {
        return Err(failure);
    }
    if stop.load(Ordering::Relaxed) {
        return Err(Error::Failed("stopped by its observer".to_owned()));
    }
    Ok((simulation.report(), aging))
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
