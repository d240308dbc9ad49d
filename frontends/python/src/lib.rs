//! `nandlab._native`: the PyO3 bindings. Wrapper functions only: each converts
//! arguments, releases the GIL around the Rust call, and maps errors to the
//! Python exceptions defined in `errors.rs`.

mod dhrd;
mod errors;
mod lab;

use nandlab_core::config::{self, Document};
use pyo3::prelude::*;

/// Where a configuration comes from: a preset, a document (`config_json`: a
/// JSON object in the TOML layout, or `config_toml`: TOML text with `origin`
/// naming it in errors; at most one of the two), overrides and a seed. Parsed
/// once; `build` may then add overrides (as `advise` does per configuration).
struct ConfigSources {
    preset: Option<String>,
    table: Option<toml::Table>,
    toml: Option<String>,
    origin: String,
    overrides: Vec<String>,
    seed: Option<u64>,
}

impl ConfigSources {
    fn parse(
        preset: Option<String>,
        config_json: Option<String>,
        config_toml: Option<String>,
        origin: Option<String>,
        overrides: Vec<String>,
        seed: Option<u64>,
    ) -> PyResult<Self> {
        if config_json.is_some() && config_toml.is_some() {
            return Err(errors::config_error("give either a dict or TOML text, not both"));
        }
        let table = config_json.map(|json| errors::table_from_json(&json)).transpose()?;
        let origin = origin.unwrap_or_else(|| "<config>".to_owned());
        Ok(Self { preset, table, toml: config_toml, origin, overrides, seed })
    }

    /// The configuration with `extra` overrides after the given ones.
    fn build(
        &self,
        extra: &[String],
    ) -> Result<(nandlab_core::Config, nandlab_core::device::Geometry), nandlab_core::config::ConfigError> {
        let document = match (&self.table, self.toml.as_deref()) {
            (Some(table), _) => Some(Document::Table(table.clone())),
            (None, Some(text)) => Some(Document::Toml { text, origin: &self.origin }),
            (None, None) => None,
        };
        let overrides: Vec<String> = self.overrides.iter().chain(extra).cloned().collect();
        config::from_sources(self.preset.as_deref(), document, &overrides, self.seed)
    }
}

/// The configuration from its sources (see [`ConfigSources`]).
fn build_config(
    preset: Option<String>,
    config_json: Option<String>,
    config_toml: Option<String>,
    origin: Option<String>,
    overrides: Vec<String>,
    seed: Option<u64>,
) -> PyResult<(nandlab_core::Config, nandlab_core::device::Geometry)> {
    if let (Some(path), Some(_)) = (origin.as_deref().map(std::path::Path::new), config_toml.as_ref()) {
        if nandlab_core::config::fio::is_job_file(path) {
            return fio_config(path, preset.as_deref(), &overrides, seed);
        }
    }
    ConfigSources::parse(preset, config_json, config_toml, origin, overrides, seed)?
        .build(&[])
        .map_err(errors::from_config)
}

/// A fio job file's configuration (docs/fio.md); its warnings become Python
/// `UserWarning`s, its refusals `ConfigError`s.
fn fio_config(
    path: &std::path::Path,
    preset: Option<&str>,
    overrides: &[String],
    seed: Option<u64>,
) -> PyResult<(nandlab_core::Config, nandlab_core::device::Geometry)> {
    let environment = |name: &str| std::env::var(name).ok();
    let run = nandlab_core::config::fio::config_from_job_file(path, preset, overrides, seed, &environment)
        .map_err(|error| errors::config_error(&nandlab_quote::error_message(&error)))?;
    Python::attach(|py| {
        let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
        for warning in &run.warnings {
            let message = std::ffi::CString::new(warning.to_string()).unwrap_or_default();
            PyErr::warn(py, category.as_any(), &message, 1)?;
        }
        Ok::<_, PyErr>(())
    })?;
    Ok((run.config, run.geometry))
}

/// Runs one simulation and returns its report as JSON text (the same document
/// `nandlab run --json` writes). The configuration arguments are those of
/// [`validate`]. `timing` runs the measured workload through the timing model
/// (`nandlab run --timing on`); the report then has a `timed` section.
#[pyfunction]
#[allow(clippy::too_many_arguments, reason = "one parameter per Python keyword argument")]
#[pyo3(signature = (preset=None, config_json=None, config_toml=None, origin=None, overrides=Vec::new(), seed=None, timing=false))]
fn run_json(
    py: Python<'_>,
    preset: Option<String>,
    config_json: Option<String>,
    config_toml: Option<String>,
    origin: Option<String>,
    overrides: Vec<String>,
    seed: Option<u64>,
    timing: bool,
) -> PyResult<String> {
    let (config, _) = build_config(preset, config_json, config_toml, origin, overrides, seed)?;
    let simulate = if timing { nandlab_core::sim::run_timed } else { nandlab_core::run };
    let started = std::time::Instant::now();
    let report = py.detach(|| simulate(&config, &mut |_| {})).map_err(errors::from_sim)?;
    let document = nandlab_lab::document::Document::new(&report, started.elapsed());
    serde_json::to_string(&document).map_err(|error| errors::simulation_error(&error.to_string()))
}

/// Checks a configuration without running it: raises `ConfigError` naming
/// the key, as `run_json` would (the synthetic workload fills the device, so
/// the device needs the spare blocks of a full device). `config_json` is a JSON object in the TOML
/// layout, `config_toml` TOML text (with `origin` naming it in errors); at
/// most one of the two.
#[pyfunction]
#[pyo3(signature = (preset=None, config_json=None, config_toml=None, origin=None, overrides=Vec::new()))]
fn validate(
    preset: Option<String>,
    config_json: Option<String>,
    config_toml: Option<String>,
    origin: Option<String>,
    overrides: Vec<String>,
) -> PyResult<()> {
    let (config, geometry) = build_config(preset, config_json, config_toml, origin, overrides, None)?;
    config.ftl.validate_for_full_device(&geometry, config.host_streams()).map_err(errors::from_config)
}

/// (name, description) of every embedded preset.
#[pyfunction]
fn presets() -> Vec<(&'static str, String)> {
    config::preset_names()
        .into_iter()
        .map(|name| (name, config::preset_description(name).unwrap_or_default()))
        .collect()
}

/// The TOML text of one preset.
#[pyfunction]
fn preset_toml(name: &str) -> PyResult<&'static str> {
    config::PRESETS
        .iter()
        .find(|(preset, _)| *preset == name)
        .map(|(_, text)| *text)
        .ok_or_else(|| errors::config_error(&format!("unknown preset `{}`", nandlab_quote::quote(name))))
}

/// Writes `data` to `path` the way every nandlab output is written
/// (`nandlab_trace::OutputPath`): a file is replaced whole, keeping its mode;
/// a device, FIFO or `/dev/stdout` is written in place. Raises `OSError`.
#[pyfunction]
fn write_output(py: Python<'_>, path: std::path::PathBuf, data: Vec<u8>) -> PyResult<()> {
    py.detach(|| nandlab_trace::write_output(&path, &data))
        .map_err(|source| errors::from_trace(nandlab_trace::TraceError::Io { path, source }))
}

/// Runs the `nandlab` command line with `argv` (the program name first), as
/// the `nandlab` binary would, and returns its exit status. The console
/// script `nandlab` and `python -m nandlab` call it; the GIL is released for
/// the whole command.
#[pyfunction]
fn command_line(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> u8 {
    py.detach(|| nandlab_cli::run_command_line(argv))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(preset_toml, m)?)?;
    m.add_function(wrap_pyfunction!(write_output, m)?)?;
    m.add_function(wrap_pyfunction!(lab::replay_json, m)?)?;
    m.add_function(wrap_pyfunction!(lab::advise_json, m)?)?;
    m.add_function(wrap_pyfunction!(lab::read_trace_columns, m)?)?;
    m.add_function(wrap_pyfunction!(lab::experiments, m)?)?;
    m.add_function(wrap_pyfunction!(lab::reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(command_line, m)?)?;
    m.add_class::<dhrd::PyDhrd>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
