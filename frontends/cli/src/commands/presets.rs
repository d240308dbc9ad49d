//! `nandlab presets`: lists the embedded presets, or prints one.

use nandlab_core::config::{preset_names, preset_summary, PRESETS};
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct PresetsArgs {
    /// Print this preset's TOML (a starting point for your own file).
    pub name: Option<String>,
}

pub fn run(args: PresetsArgs) -> anyhow::Result<()> {
    if let Some(name) = args.name {
        let (_, text) = PRESETS
            .iter()
            .find(|(preset, _)| *preset == name)
            .ok_or_else(|| anyhow::anyhow!("unknown preset `{name}`; presets: {}", preset_names().join(", ")))?;
        write!(std::io::stdout(), "{text}")?;
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    for name in preset_names() {
        writeln!(out, "{name:<14} {}", preset_summary(name).unwrap_or_default())?;
    }
    Ok(())
}
