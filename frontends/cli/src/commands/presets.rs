//! `nandlab presets`: lists the embedded presets, or prints one.

use nandlab_core::config::{preset_description, preset_names, PRESETS};
use nandlab_report::wrap;
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct PresetsArgs {
    /// Print this preset's TOML (a starting point for your own file).
    pub name: Option<String>,
}

pub fn run(args: PresetsArgs) -> anyhow::Result<()> {
    if let Some(name) = args.name {
        let (_, text) = PRESETS.iter().find(|(preset, _)| *preset == name).ok_or_else(|| {
            let name = nandlab_quote::quote(&name);
            anyhow::anyhow!("unknown preset `{name}`; presets: {}", preset_names().join(", "))
        })?;
        write!(std::io::stdout(), "{text}")?;
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    for name in preset_names() {
        let description = preset_description(name).unwrap_or_default();
        for (index, line) in wrap(&description, DESCRIPTION_COLUMNS).iter().enumerate() {
            let label = if index == 0 { name } else { "" };
            writeln!(out, "{label:<14} {line}")?;
        }
    }
    Ok(())
}

/// Width of the description column: with the 15-column name, under 100 in all.
const DESCRIPTION_COLUMNS: usize = 84;
