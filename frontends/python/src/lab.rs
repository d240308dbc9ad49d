//! The experiments library (crate nandlab-lab) for Python: trace replay,
//! traces as columns, the `reproduce` registry. Each long call releases the
//! GIL; a [`PyObserver`] takes it back briefly every [`POLL`] to forward
//! progress and to let Ctrl-C (or an exception in the progress callback)
//! stop the run.

use crate::errors;
use nandlab_core::ftl::LayerKind;
use nandlab_core::host::discard::DiscardPolicy;
use nandlab_core::timing::Arrival;
use nandlab_lab::advise::AdviseOptions;
use nandlab_lab::registry::{self, EXPERIMENTS};
use nandlab_lab::replay::{FitSize, ReplayMode, SizeOrigin, TraceSource};
use nandlab_lab::table::{self, TraceTable, OP_NAMES};
use nandlab_lab::ExperimentArgs;
use nandlab_lab::{Observer, Progress, Watch};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often a run takes the GIL back: Ctrl-C is answered within this.
const POLL: Duration = Duration::from_millis(50);

/// Forwards progress to an optional Python callable `callback(done)` and
/// checks for signals; the first exception either raises stops the run.
pub struct PyObserver {
    callback: Option<Py<PyAny>>,
    last_poll: Instant,
    raised: Option<PyErr>,
}

impl PyObserver {
    pub fn new(callback: Option<Py<PyAny>>) -> Self {
        Self { callback, last_poll: Instant::now(), raised: None }
    }

    /// The exception that stopped the run, if one did.
    pub fn take_raised(&mut self) -> Option<PyErr> {
        self.raised.take()
    }

    fn poll(&mut self, done: u64) -> PyResult<()> {
        Python::attach(|py| {
            py.check_signals()?;
            if let Some(callback) = &self.callback {
                callback.call1(py, (done,))?;
            }
            Ok(())
        })
    }
}

impl Observer for PyObserver {
    fn progress(&mut self, progress: Progress) -> nandlab_lab::Result<()> {
        if self.last_poll.elapsed() < POLL {
            return Ok(());
        }
        self.last_poll = Instant::now();
        self.poll(progress.done).map_err(|error| {
            self.raised = Some(error);
            nandlab_lab::Error::Cancelled
        })
    }
}

fn discard_policy(name: &str) -> PyResult<DiscardPolicy> {
    serde_json::from_value(serde_json::Value::String(name.to_owned())).map_err(|_| {
        errors::config_error(&format!("discard: unknown policy {name:?} (expected off, online, delay-d or periodic)"))
    })
}

fn arrival(name: &str) -> PyResult<Arrival> {
    match name {
        "trace" | "open" => Ok(Arrival::Open),
        "closed" => Ok(Arrival::Closed),
        other => Err(errors::config_error(&format!("arrival: unknown mode {other:?} (expected trace or closed)"))),
    }
}

/// Replays a trace and returns the report as JSON text: the document
/// `nandlab replay --json` writes. Configuration arguments as in `run_json`.
#[pyfunction]
#[allow(clippy::too_many_arguments, reason = "one parameter per Python keyword argument")]
#[pyo3(signature = (
    trace, preset=None, config_json=None, config_toml=None, origin=None, overrides=Vec::new(), seed=None,
    discard=None, timing=false, arrival_mode="trace", fit=false, device_size=None, format=None, device=None,
    open_channel=false, age_with=None, progress=None,
))]
pub fn replay_json(
    py: Python<'_>,
    trace: PathBuf,
    preset: Option<String>,
    config_json: Option<String>,
    config_toml: Option<String>,
    origin: Option<String>,
    overrides: Vec<String>,
    seed: Option<u64>,
    discard: Option<String>,
    timing: bool,
    arrival_mode: &str,
    fit: bool,
    device_size: Option<u64>,
    format: Option<String>,
    device: Option<String>,
    open_channel: bool,
    age_with: Option<PathBuf>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let (mut config, _) = crate::build_config(preset, config_json, config_toml, origin, overrides, seed)?;
    let policy = discard.as_deref().map(discard_policy).transpose()?;
    let timed = timing.then(|| arrival(arrival_mode)).transpose()?;
    if !timing && arrival_mode != "trace" {
        return Err(errors::config_error("arrival needs timing=True"));
    }
    let format = format.as_deref().map(nandlab_trace::Format::from_name).transpose().map_err(errors::from_trace)?;
    if open_channel {
        config.ftl.kind = LayerKind::OpenChannel;
    }
    let mut observer = PyObserver::new(progress);
    let source = TraceSource { path: &trace, format, device: device.as_deref() };
    let device_size = device_size.map(|bytes| FitSize { bytes, origin: SizeOrigin::Given });
    let mode = ReplayMode { policy, fit, device_size, timed, age_with: age_with.as_deref() };
    let started = std::time::Instant::now();
    let report = py
        .detach(|| nandlab_lab::replay::replay(&source, config, mode, &mut observer))
        .map_err(|error| errors::from_lab(error, observer.take_raised()))?;
    let json = serde_json::to_string(&nandlab_lab::document::Document::new(&report, started.elapsed()));
    json.map_err(|error| errors::simulation_error(&error.to_string()))
}

/// Replays a trace under every mechanism that applies and returns the
/// ranking as JSON text: the document `nandlab advise --json` writes.
/// Configuration arguments as in `run_json`.
#[pyfunction]
#[allow(clippy::too_many_arguments, reason = "one parameter per Python keyword argument")]
#[pyo3(signature = (
    trace, preset=None, config_json=None, config_toml=None, origin=None, overrides=Vec::new(), seed=None,
    fit=false, device_size=None, gb_per_day=None, format=None, device=None, progress=None,
))]
pub fn advise_json(
    py: Python<'_>,
    trace: PathBuf,
    preset: Option<String>,
    config_json: Option<String>,
    config_toml: Option<String>,
    origin: Option<String>,
    overrides: Vec<String>,
    seed: Option<u64>,
    fit: bool,
    device_size: Option<u64>,
    gb_per_day: Option<f64>,
    format: Option<String>,
    device: Option<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let sources = crate::ConfigSources::parse(preset, config_json, config_toml, origin, overrides, seed)?;
    // Refused here, typed, before any replay.
    sources.build(&[]).map_err(errors::from_config)?;
    if let Some(rate) = gb_per_day.filter(|rate| !(rate.is_finite() && *rate > 0.0)) {
        return Err(errors::config_error(&format!("gb_per_day={rate}: give a positive number of GB per day")));
    }
    let format = format.as_deref().map(nandlab_trace::Format::from_name).transpose().map_err(errors::from_trace)?;
    let source = TraceSource { path: &trace, format, device: device.as_deref() };
    let given = device_size.map(|bytes| FitSize { bytes, origin: SizeOrigin::Given });
    let configure = |extra: &[String]| -> nandlab_lab::Result<nandlab_core::Config> { Ok(sources.build(extra)?.0) };
    let mut observer = PyObserver::new(progress);
    let advice = py
        .detach(|| {
            let mode = ReplayMode { fit, device_size: given, ..ReplayMode::default() };
            let device_size = nandlab_lab::replay::fit_size(&source, &mode)?;
            let options = AdviseOptions { fit: false, device_size, host_gb_per_day: gb_per_day };
            nandlab_lab::advise::advise(&source, &configure, options, &mut |_, _, _| {}, &mut observer)
        })
        .map_err(|error| errors::from_lab(error, observer.take_raised()))?;
    serde_json::to_string(&advice).map_err(|error| errors::simulation_error(&error.to_string()))
}

fn le_bytes<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    column: &[T],
    to_bytes: fn(T) -> [u8; N],
) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = column.iter().flat_map(|&value| to_bytes(value)).collect();
    PyBytes::new(py, &bytes)
}

fn bool_bytes<'py>(py: Python<'py>, column: &[bool]) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = column.iter().map(|&value| u8::from(value)).collect();
    PyBytes::new(py, &bytes)
}

fn columns<'py>(py: Python<'py>, table: &TraceTable) -> PyResult<Bound<'py, PyDict>> {
    let columns = PyDict::new(py);
    columns.set_item("time_ns", le_bytes(py, &table.time_ns, u64::to_le_bytes))?;
    columns.set_item("op", PyBytes::new(py, &table.op))?;
    columns.set_item("op_names", OP_NAMES.to_vec())?;
    columns.set_item("start_sector", le_bytes(py, &table.start_sector, u64::to_le_bytes))?;
    columns.set_item("sectors", le_bytes(py, &table.sectors, u64::to_le_bytes))?;
    columns.set_item("process", le_bytes(py, &table.process, u32::to_le_bytes))?;
    columns.set_item("process_names", table.processes.clone())?;
    columns.set_item("flags", PyBytes::new(py, &table.flags))?;
    columns.set_item("flag_names", (0..16).map(table::flag_letters).collect::<Vec<_>>())?;
    let streams: Vec<u8> = table.stream.iter().map(|tag| tag.unwrap_or(0)).collect();
    columns.set_item("stream", PyBytes::new(py, &streams))?;
    columns.set_item("stream_known", bool_bytes(py, &table.stream.iter().map(Option::is_some).collect::<Vec<_>>()))?;
    columns.set_item("in_journal", bool_bytes(py, &table.in_journal))?;
    columns.set_item("journal_commit", bool_bytes(py, &table.journal_commit))?;
    let header = serde_json::to_string(&table.header).map_err(|error| errors::simulation_error(&error.to_string()))?;
    columns.set_item("header_json", header)?;
    columns.set_item("rows", table.len())?;
    Ok(columns)
}

/// Reads a trace into columns: little-endian numeric buffers and code
/// tables (see `nandlab.read_trace`, which makes them a data frame).
#[pyfunction]
#[pyo3(signature = (path, format=None, device=None, progress=None))]
pub fn read_trace_columns<'py>(
    py: Python<'py>,
    path: PathBuf,
    format: Option<String>,
    device: Option<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let format = format.as_deref().map(nandlab_trace::Format::from_name).transpose().map_err(errors::from_trace)?;
    let source = TraceSource { path: &path, format, device: device.as_deref() };
    let mut observer = PyObserver::new(progress);
    let table = py
        .detach(|| table::read_table(&source, &mut observer))
        .map_err(|error| errors::from_lab(error, observer.take_raised()))?;
    columns(py, &table)
}

/// Every experiment of the registry as a dict.
#[pyfunction]
pub fn experiments(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    EXPERIMENTS
        .iter()
        .map(|experiment| {
            let entry = PyDict::new(py);
            entry.set_item("name", experiment.name)?;
            entry.set_item("description", experiment.description)?;
            entry.set_item("keys", experiment.keys.to_vec())?;
            entry.set_item("needs_root", experiment.needs_root)?;
            entry.set_item("rough_seconds", experiment.rough_seconds)?;
            Ok(entry)
        })
        .collect()
}

/// Runs one experiment (or `all`) into `out`; returns (summary path, HTML
/// report path, seconds). The experiment runs on a worker thread; this thread waits with
/// the GIL released, taking it back every [`POLL`] to check for signals, and
/// on Ctrl-C raises the experiment's interrupt and waits for it to stop.
#[pyfunction]
#[pyo3(signature = (name, out, seed=1, paper_scale=false, samples=None, overrides=Vec::new()))]
pub fn reproduce(
    py: Python<'_>,
    name: String,
    out: PathBuf,
    seed: u64,
    paper_scale: bool,
    samples: Option<usize>,
    overrides: Vec<String>,
) -> PyResult<(PathBuf, PathBuf, f64)> {
    if name != "all" {
        let experiment = registry::find(&name).map_err(|error| errors::from_lab(error, None))?;
        experiment.check_set(&overrides).map_err(|error| errors::from_lab(error, None))?;
    }
    let watch = Watch::default();
    let args = ExperimentArgs { out, seed, paper_scale, samples, repeats: None, set: overrides, watch: watch.clone() };
    let mut raised = None;
    let result = py.detach(|| {
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| registry::reproduce(&name, &args));
            while !worker.is_finished() {
                std::thread::sleep(POLL);
                if raised.is_none() && interrupt_requested(&mut raised) {
                    watch.interrupt.raise();
                }
            }
            worker.join()
        })
    });
    let result = result.map_err(|_| errors::simulation_error(&format!("experiment {name} panicked")))?;
    match (result, raised) {
        // Ctrl-C wins even when the experiment finished before it looked.
        (Ok(_), Some(raised)) => Err(raised),
        (Ok(done), None) => Ok((done.summary, done.html, done.seconds)),
        (Err(error), raised) => Err(errors::from_lab(error, raised)),
    }
}

/// Whether a signal handler raised (Ctrl-C): the exception goes to `raised`.
fn interrupt_requested(raised: &mut Option<PyErr>) -> bool {
    match Python::attach(|py| py.check_signals()) {
        Ok(()) => false,
        Err(error) => {
            *raised = Some(error);
            true
        }
    }
}
