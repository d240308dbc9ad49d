//! What several experiments of `nandlab reproduce` share: traces captured
//! once and cached in the output folder, and experiment devices built from a
//! TOML base and overrides.

use crate::args::ExperimentArgs;
use crate::error::{Context as _, Error, Result};
use nandlab_capture::{capture, CaptureConfig, Workload};
use nandlab_core::config::ConfigBuilder;
use nandlab_core::Config;
use std::path::{Path, PathBuf};

/// What a cached capture is made of.
pub(crate) struct CaptureSpec<'a> {
    /// File name of the trace in the cache folder.
    pub name: &'a str,
    pub size: &'a str,
    pub mount_options: &'a str,
    /// Extra mkfs arguments (recorded with the whole mkfs command line in the trace header).
    pub mkfs_options: &'a [String],
    /// Where the sparse image lives while capturing.
    pub image_dir: &'a Path,
    pub argv: Vec<String>,
}

/// Captures `spec` into `traces` unless the trace is there already; a
/// workload that fails leaves no trace behind.
pub(crate) fn capture_cached(spec: &CaptureSpec<'_>, traces: &Path, tag: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(traces).with_context(|| format!("creating {}", traces.display()))?;
    let output = traces.join(spec.name);
    if output.exists() {
        eprintln!("{tag}: reusing {}", output.display());
        return Ok(output);
    }
    let config = CaptureConfig {
        file_system: "ext4".to_owned(),
        size_bytes: nandlab_dhrd::parse_byte_size(spec.size)?,
        mount_options: spec.mount_options.to_owned(),
        mkfs_options: spec.mkfs_options.to_vec(),
        image_dir: spec.image_dir.to_path_buf(),
        output: output.clone(),
        buffer_kib_per_cpu: 16384,
    };
    eprintln!(
        "{tag}: capturing {} on a {} ext4 (mkfs {}, -o {}; needs root and loop devices)",
        spec.name,
        spec.size,
        spec.mkfs_options.join(" "),
        spec.mount_options
    );
    let report = capture(&config, Workload::Command(spec.argv.clone()), &mut |line| eprintln!("capture: {line}"))
        .with_context(|| format!("capturing {}", spec.name))?;
    if report.exit_code != Some(0) {
        let _ = std::fs::remove_file(&output);
        return Err(Error::Failed(format!(
            "the workload of {} failed (exit {:?}); no trace kept",
            spec.name, report.exit_code
        )));
    }
    if report.events_lost > 0 {
        eprintln!("{tag}: WARNING: {} lost {} trace events", spec.name, report.events_lost);
    }
    Ok(output)
}

/// A configuration from TOML text (may name a base preset) and `key=value` overrides.
pub(crate) fn config_from(toml: &str, assignments: &[String]) -> Result<Config> {
    let mut builder = ConfigBuilder::new();
    builder.merge_toml(toml, "the experiment's device")?;
    for assignment in assignments {
        builder.set(assignment)?;
    }
    Ok(builder.build()?.0)
}

/// The `nandlab` executable that runs `fsload` workloads under a capture:
/// this process when it is `nandlab` (the CLI), else `NANDLAB_BIN` when set,
/// else `nandlab` on `PATH` (e.g. from Python).
pub fn nandlab_binary() -> Result<PathBuf> {
    let this = std::env::current_exe().context("locating the nandlab binary")?;
    if this.file_stem().is_some_and(|stem| stem == "nandlab") {
        return Ok(this);
    }
    if let Some(path) = std::env::var_os("NANDLAB_BIN") {
        return Ok(PathBuf::from(path));
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("nandlab"))
        .find(|candidate| candidate.is_file())
        .context(
            "the workloads run under capture are `nandlab fsload`: put the nandlab binary on PATH or set NANDLAB_BIN",
        )
}

/// `argv` of this binary running `fsload ARGS... --seed SEED`.
pub(crate) fn fsload(args: &[&str], seed: u64) -> Result<Vec<String>> {
    let exe = nandlab_binary()?;
    let mut argv = vec![exe.display().to_string(), "fsload".to_owned()];
    argv.extend(args.iter().map(|arg| (*arg).to_owned()));
    argv.extend(["--seed".to_owned(), seed.to_string()]);
    Ok(argv)
}

/// Captures per scenario unless `--repeats` says otherwise.
const REPEATS_DEFAULT: usize = 3;

pub(crate) fn repeats(args: &ExperimentArgs) -> usize {
    args.repeats.unwrap_or(REPEATS_DEFAULT).max(1)
}

/// The median of repeated measurements and their range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// `None` for no values.
    pub(crate) fn of(mut values: Vec<f64>) -> Option<Spread> {
        values.retain(|value| value.is_finite());
        values.sort_by(f64::total_cmp);
        let middle = values.len() / 2;
        let median = match values.len() {
            0 => return None,
            n if n % 2 == 1 => values[middle],
            _ => (values[middle - 1] + values[middle]) / 2.0,
        };
        Some(Spread { median, min: values[0], max: values[values.len() - 1] })
    }

    /// `median [min–max]`, with `decimals`; just the value when all agree.
    pub(crate) fn show(self, decimals: usize) -> String {
        if self.min == self.max {
            format!("{:.decimals$}", self.median)
        } else {
            format!("{:.decimals$} [{:.decimals$}–{:.decimals$}]", self.median, self.min, self.max)
        }
    }
}
