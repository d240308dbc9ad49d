//! Rust errors mapped to Python exceptions, one per error kind, all in one place.

use nandlab_core::{ConfigError, SimError};
use nandlab_lab::Error as LabError;
use nandlab_trace::TraceError;
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    nandlab._native,
    NandlabConfigError,
    PyValueError,
    "A configuration key is unknown, mistyped or impossible."
);
create_exception!(
    nandlab._native,
    NandlabSimulationError,
    PyRuntimeError,
    "The simulation could not go on (e.g. the device is full)."
);
create_exception!(
    nandlab._native,
    NandlabTraceError,
    PyValueError,
    "A trace does not parse (the message names the file and line) or its format is unknown."
);
create_exception!(
    nandlab._native,
    NandlabExperimentError,
    PyRuntimeError,
    "An experiment could not produce its result (e.g. a capture needs root)."
);

/// Each exception under its public name and under its own: pickle finds a
/// class by `__module__` and `__qualname__` (`nandlab._native.NandlabConfigError`),
/// so an error raised in a sweep's worker process arrives as the same class.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let types = [
        ("ConfigError", py.get_type::<NandlabConfigError>()),
        ("SimulationError", py.get_type::<NandlabSimulationError>()),
        ("TraceError", py.get_type::<NandlabTraceError>()),
        ("ExperimentError", py.get_type::<NandlabExperimentError>()),
    ];
    for (public, class) in types {
        m.add(class.name()?, &class)?;
        m.add(public, class)?;
    }
    Ok(())
}

/// `error: cause: cause …`, each cause once, bounded ([`nandlab_quote::error_message`]).
fn chain(error: &dyn std::error::Error) -> String {
    nandlab_quote::error_message(error)
}

fn os_error(source: &std::io::Error, message: String) -> PyErr {
    match source.raw_os_error() {
        // OSError(errno, text) becomes FileNotFoundError, PermissionError, ... as Python does.
        Some(errno) => PyOSError::new_err((errno, message)),
        None => PyOSError::new_err(message),
    }
}

pub fn from_trace(error: TraceError) -> PyErr {
    match &error {
        TraceError::Io { source, .. } => os_error(source, chain(&error)),
        _ => NandlabTraceError::new_err(chain(&error)),
    }
}

/// A lab error as the Python exception of its kind. A run stopped by its
/// observer raises what stopped it (`raised`: KeyboardInterrupt on Ctrl-C,
/// or the progress callback's exception).
pub fn from_lab(error: LabError, raised: Option<PyErr>) -> PyErr {
    if error.is_cancelled() {
        return raised.unwrap_or_else(|| PyKeyboardInterrupt::new_err("interrupted"));
    }
    let message = chain(&error);
    match error.root() {
        LabError::Config(_) | LabError::Simulation(SimError::Config(_)) => config_error(&message),
        LabError::Simulation(_) | LabError::Ftl(_) | LabError::Telomere(_) | LabError::Periodic(_) => {
            simulation_error(&message)
        }
        LabError::Trace(TraceError::Io { source, .. }) | LabError::Io(source) => os_error(source, message),
        LabError::Trace(_) => NandlabTraceError::new_err(message),
        LabError::Invalid(_) => PyValueError::new_err(message),
        _ => NandlabExperimentError::new_err(message),
    }
}

pub fn config_error(message: &str) -> PyErr {
    NandlabConfigError::new_err(message.to_owned())
}

pub fn simulation_error(message: &str) -> PyErr {
    NandlabSimulationError::new_err(message.to_owned())
}

pub fn from_config(error: ConfigError) -> PyErr {
    config_error(&error.to_string())
}

pub fn from_sim(error: SimError) -> PyErr {
    match error {
        SimError::Config(error) => from_config(error),
        other => simulation_error(&chain(&other)),
    }
}

/// A JSON object in the TOML layout, as a TOML table.
pub fn table_from_json(json: &str) -> PyResult<toml::Table> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(|error| config_error(&error.to_string()))?;
    serde::Deserialize::deserialize(value).map_err(|error: serde_json::Error| {
        config_error(&format!("configuration must be a table of TOML values (no None): {error}"))
    })
}
