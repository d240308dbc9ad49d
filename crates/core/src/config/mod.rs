//! Configuration: the TOML schema, embedded presets, layering (preset, file,
//! `--set key=value` overrides) and validation. Every error names the key.

pub mod fio;
pub mod memory;
pub mod mqsim;
mod presets;
mod sizes;

pub use crate::error::ConfigError;
pub use crate::metrics::MetricsConfig;
pub use presets::{preset_description, preset_names, PRESETS};

use crate::device::{DeviceConfig, Geometry};
use crate::ftl::FtlConfig;
use crate::host::discard::DiscardConfig;
use crate::host::pblk::PblkConfig;
use crate::host::stages::HostConfig;
use crate::timing::TimingConfig;
use crate::workload::jobs::{validate_jobs, JobConfig};
use crate::workload::{PreconditionConfig, WorkloadConfig};
use serde::{Deserialize, Serialize};

/// A complete, validated simulation configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// A label for reports; presets set it to their name.
    #[serde(default)]
    pub name: Option<String>,
    /// Seed of every random choice in the run.
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub device: DeviceConfig,
    #[serde(default)]
    pub ftl: FtlConfig,
    #[serde(default)]
    pub workload: WorkloadConfig,
    #[serde(default)]
    pub precondition: PreconditionConfig,
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// The DISCARD stage.
    #[serde(default)]
    pub discard: DiscardConfig,
    /// The other host stages: write classifier, priority.
    #[serde(default)]
    pub host: HostConfig,
    /// The timing model (used by timed runs only).
    #[serde(default)]
    pub timing: TimingConfig,
    /// The host-level FTL of `ftl.kind = "open-channel"`, validated when that layer runs.
    #[serde(default)]
    pub pblk: PblkConfig,
    /// The lifetime forecast of every report.
    #[serde(default)]
    pub lifetime: crate::metrics::LifetimeConfig,
    /// `[[job]]` tables: several workloads at once in place of `[workload]`'s
    /// measured phase (which still ages the device). Absent from reports of
    /// runs without jobs, so their JSON is unchanged.
    #[serde(default, rename = "job", skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobConfig>,
}

fn default_seed() -> u64 {
    1
}

impl Config {
    /// Checks every cross-key rule, and the run's estimated memory against
    /// the memory available ([`memory`]); returns the geometry the config describes.
    pub fn validate(&self) -> Result<Geometry, ConfigError> {
        let geometry = Geometry::from_config(&self.device)?;
        self.ftl.validate(&geometry)?;
        self.workload.validate(&geometry, self.ftl.streams)?;
        validate_jobs(&self.jobs, &geometry, self.ftl.streams)?;
        self.precondition.validate()?;
        self.discard.validate()?;
        self.host.validate(self.ftl.streams)?;
        if self.ftl.kind == crate::ftl::LayerKind::OpenChannel
            && self.pblk.separate
            && self.host.classifier == crate::host::classify::ClassifierKind::None
        {
            return Err(ConfigError::new(
                "pblk.separate",
                "separates the classes of host.classifier, which is `none`: set host.classifier (e.g. \"journal\")",
            ));
        }
        self.timing.validate(&geometry, &self.ftl)?;
        self.lifetime.validate()?;
        if self.metrics.window_pages == Some(0) {
            return Err(ConfigError::new("metrics.window_pages", "must be at least 1"));
        }
        memory::check_available(self, &geometry)?;
        Ok(geometry)
    }
}

impl Config {
    /// Distinct host streams the run writes (the workload, which ages the
    /// device even when jobs run, and every job; with a classifier, its
    /// classes instead): each holds an open block in every parallel unit.
    pub fn host_streams(&self) -> u32 {
        if let Ok(classes @ 1..) = self.host.class_count() {
            return u32::try_from(classes).unwrap_or(u32::MAX);
        }
        let mut written = [false; 256];
        let workloads = std::iter::once(&self.workload).chain(self.jobs.iter().map(|job| &job.workload));
        for &stream in workloads.flat_map(WorkloadConfig::streams_written) {
            written[usize::from(stream)] = true;
        }
        let count = written.iter().filter(|&&used| used).count();
        u32::try_from(count).unwrap_or(u32::MAX)
    }
}

/// Preset used when a run names neither a preset nor a configuration document.
pub const DEFAULT_PRESET: &str = "femu-32g";

/// A configuration document given by a user.
#[derive(Clone, Debug)]
pub enum Document<'a> {
    /// TOML text and where it came from (a file name, for errors).
    Toml { text: &'a str, origin: &'a str },
    /// An already-parsed table (from Python or JSON).
    Table(toml::Table),
}

/// The layering every front end uses: the document, the overrides, then the
/// seed, over a preset. The preset is the one the caller names (`--preset`,
/// which wins over a document's `preset = "NAME"` line: the command line is
/// the user's last word), else the document's, else [`DEFAULT_PRESET`] when
/// no document is given.
pub fn from_sources(
    preset: Option<&str>,
    document: Option<Document<'_>>,
    overrides: &[String],
    seed: Option<u64>,
) -> Result<(Config, Geometry), ConfigError> {
    let mut builder = ConfigBuilder::new();
    if preset.is_none() && document.is_none() {
        builder.merge_preset(DEFAULT_PRESET)?;
    }
    match document {
        Some(Document::Toml { text, origin }) => builder.merge_toml(text, origin)?,
        Some(Document::Table(table)) => builder.merge_table(table)?,
        None => {}
    }
    if let Some(name) = preset {
        builder.merge_preset(name)?;
    }
    for assignment in overrides {
        builder.set(assignment)?;
    }
    if let Some(seed) = seed {
        builder.set(&format!("seed={seed}"))?;
    }
    builder.build()
}

/// Builds a [`Config`] from layers: a base preset, TOML documents, and
/// `key=value` assignments, each overriding the ones before.
///
/// The preset is the bottom layer whatever the order it is named in, and only
/// one preset applies: the last one named (a document's `preset` key, then
/// `--preset`, then a `preset=NAME` assignment) replaces the ones before —
/// presets never merge. Document keys and assignments always lie above it.
#[derive(Clone, Debug, Default)]
pub struct ConfigBuilder {
    base: Option<String>,
    table: toml::Table,
}

impl ConfigBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts from an embedded preset.
    pub fn preset(name: &str) -> Result<Self, ConfigError> {
        let mut builder = Self::new();
        builder.merge_preset(name)?;
        Ok(builder)
    }

    /// Makes `name` the base preset, replacing any named before.
    pub fn merge_preset(&mut self, name: &str) -> Result<(), ConfigError> {
        preset_table(name)?;
        self.base = Some(name.to_owned());
        Ok(())
    }

    /// Merges a TOML document. A top-level `preset = "NAME"` key in it makes
    /// that preset the base (replacing one named before), so a file can say
    /// only what differs from a preset.
    pub fn merge_toml(&mut self, text: &str, origin: &str) -> Result<(), ConfigError> {
        let mut table = parse_toml(text, origin)?;
        self.merge_table_with_preset(&mut table)?;
        merge_tables(&mut self.table, table);
        Ok(())
    }

    /// Merges an already-parsed table (e.g. from Python or JSON), with the
    /// same `preset` rule as [`Self::merge_toml`].
    pub fn merge_table(&mut self, mut table: toml::Table) -> Result<(), ConfigError> {
        self.merge_table_with_preset(&mut table)?;
        merge_tables(&mut self.table, table);
        Ok(())
    }

    fn merge_table_with_preset(&mut self, table: &mut toml::Table) -> Result<(), ConfigError> {
        match table.remove("preset") {
            None => Ok(()),
            Some(toml::Value::String(name)) => self.merge_preset(&name),
            Some(other) => {
                Err(ConfigError::new("preset", format!("expected a preset name, found {}", other.type_str())))
            }
        }
    }

    /// Applies one `dotted.key=value` assignment. The value is read as a TOML
    /// value (`8`, `0.125`, `true`, `"text"`); anything else is taken as a string.
    pub fn set(&mut self, assignment: &str) -> Result<(), ConfigError> {
        let (key, raw) = assignment
            .split_once('=')
            .ok_or_else(|| ConfigError::new(assignment, "an override must look like `section.key=value`"))?;
        let key = key.trim();
        if key.is_empty() || key.split('.').any(str::is_empty) {
            return Err(ConfigError::new(key, "not a valid dotted key"));
        }
        if key == "job" {
            return self.add_job(raw.trim());
        }
        let value = parse_value(raw.trim());
        if let Some(job_key) = key.strip_prefix("job.") {
            return self.set_job_key(job_key, value);
        }
        if key == "preset" {
            let toml::Value::String(name) = value else {
                return Err(ConfigError::new("preset", "expected a preset name"));
            };
            return self.merge_preset(&name);
        }
        let mut parts: Vec<&str> = key.split('.').collect();
        let leaf = parts.pop().unwrap_or_default();
        let mut table = &mut self.table;
        let mut path = String::new();
        for part in parts {
            path = if path.is_empty() { part.to_owned() } else { format!("{path}.{part}") };
            let entry = table.entry(part).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            table = entry.as_table_mut().ok_or_else(|| ConfigError::new(path.clone(), "is a value, not a section"))?;
        }
        table.insert(leaf.to_owned(), value);
        Ok(())
    }

    /// `job.NAME.KEY=VALUE`: sets one key of the `[[job]]` table named NAME.
    fn set_job_key(&mut self, job_key: &str, value: toml::Value) -> Result<(), ConfigError> {
        let full = format!("job.{job_key}");
        let (name, leaf) = job_key
            .rsplit_once('.')
            .ok_or_else(|| ConfigError::new(full.clone(), "a job key is written `job.NAME.KEY=VALUE`"))?;
        let jobs = match self.table.get_mut("job") {
            Some(toml::Value::Array(jobs)) => jobs.as_mut_slice(),
            _ => &mut [],
        };
        let mut names = Vec::new();
        for job in jobs.iter_mut().filter_map(toml::Value::as_table_mut) {
            let job_name = job.get("name").and_then(toml::Value::as_str).unwrap_or_default().to_owned();
            if job_name == name {
                job.insert(leaf.to_owned(), value);
                return Ok(());
            }
            names.push(job_name);
        }
        let known = if names.is_empty() {
            "there are no [[job]] tables".to_owned()
        } else {
            format!("jobs: {}", names.join(", "))
        };
        Err(ConfigError::new(full, format!("no job is named {name:?} ({known})")))
    }

    /// Appends a `[[job]]` table written `key=value,key=value` (the
    /// `job=…` assignment, the CLI's `--job`): values read as in [`Self::set`].
    pub fn add_job(&mut self, spec: &str) -> Result<(), ConfigError> {
        let mut job = toml::Table::new();
        for pair in spec.split(',').map(str::trim).filter(|pair| !pair.is_empty()) {
            let (key, raw) = pair.split_once('=').ok_or_else(|| {
                ConfigError::new("job", format!("{pair:?}: a job is written `name=NAME,key=value,…`"))
            })?;
            job.insert(key.trim().to_owned(), parse_value(raw.trim()));
        }
        let jobs = self.table.entry("job").or_insert_with(|| toml::Value::Array(Vec::new()));
        let toml::Value::Array(jobs) = jobs else {
            return Err(ConfigError::new("job", "must be an array of [[job]] tables"));
        };
        jobs.push(toml::Value::Table(job));
        Ok(())
    }

    /// Deserializes and validates; unknown keys and wrong types are errors
    /// naming the full key path.
    pub fn build(self) -> Result<(Config, Geometry), ConfigError> {
        let mut table = match &self.base {
            Some(name) => preset_table(name)?,
            None => toml::Table::new(),
        };
        merge_tables(&mut table, self.table);
        let config = deserialize(table)?;
        let geometry = config.validate()?;
        Ok((config, geometry))
    }
}

/// A preset as written and its geometry, without the run's other checks
/// (nor the memory estimate: describing a preset allocates nothing).
pub fn preset_config(name: &str) -> Result<(Config, Geometry), ConfigError> {
    let config = deserialize(preset_table(name)?)?;
    let geometry = Geometry::from_config(&config.device)?;
    Ok((config, geometry))
}

/// The table as a [`Config`]; unknown keys and wrong types name the full key path.
fn deserialize(mut table: toml::Table) -> Result<Config, ConfigError> {
    sizes::resolve(&mut table)?;
    crate::device::capacity::resolve(&mut table)?;
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|error| {
        let path = error.path().to_string();
        let key = if path == "." { String::new() } else { path };
        ConfigError::new(key, error.into_inner().to_string())
    })
}

fn preset_table(name: &str) -> Result<toml::Table, ConfigError> {
    let text = presets::preset_text(name).ok_or_else(|| {
        let name = nandlab_quote::quote(name);
        ConfigError::new("preset", format!("unknown preset `{name}`; presets: {}", preset_names().join(", ")))
    })?;
    parse_toml(text, &format!("preset {name}"))
}

fn parse_toml(text: &str, origin: &str) -> Result<toml::Table, ConfigError> {
    text.parse::<toml::Table>().map_err(|error| ConfigError::new("", format!("{origin}: {error}")))
}

fn parse_value(raw: &str) -> toml::Value {
    format!("value = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut table| table.remove("value"))
        .unwrap_or_else(|| toml::Value::String(raw.to_owned()))
}

fn merge_tables(base: &mut toml::Table, overlay: toml::Table) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(base_table)), toml::Value::Table(overlay_table)) => {
                merge_tables(base_table, overlay_table);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests;
