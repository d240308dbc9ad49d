//! Rust errors mapped to Python exceptions, one per error kind, all in one place.

use nandlab_core::{ConfigError, SimError};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

create_exception!(_native, NandlabConfigError, PyValueError, "A configuration key is unknown, mistyped or impossible.");
create_exception!(_native, NandlabSimulationError, PyRuntimeError, "The simulation could not go on (e.g. the device is full).");

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ConfigError", m.py().get_type::<NandlabConfigError>())?;
    m.add("SimulationError", m.py().get_type::<NandlabSimulationError>())?;
    Ok(())
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
        other => {
            let mut message = other.to_string();
            let mut source = std::error::Error::source(&other);
            while let Some(cause) = source {
                message = format!("{message}: {cause}");
                source = cause.source();
            }
            simulation_error(&message)
        }
    }
}

/// A JSON object in the TOML layout, as a TOML table.
pub fn table_from_json(json: &str) -> PyResult<toml::Table> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(|error| config_error(&error.to_string()))?;
    serde::Deserialize::deserialize(value).map_err(|error: serde_json::Error| {
        config_error(&format!("configuration must be a table of TOML values (no None): {error}"))
    })
}
