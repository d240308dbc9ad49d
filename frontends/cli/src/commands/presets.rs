//! `nandlab presets`: lists the embedded presets, or prints one.

use nandlab_core::config::{preset_config, preset_description, preset_names, PRESETS};
use nandlab_core::ftl::analytic::ReserveEffect;
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
        let description = format!("{} {}", preset_description(name).unwrap_or_default(), reserve_note(name)?);
        for (index, line) in wrap(&description, DESCRIPTION_COLUMNS).iter().enumerate() {
            let label = if index == 0 { name } else { "" };
            writeln!(out, "{label:<14} {line}")?;
        }
    }
    Ok(())
}

/// How the page FTL's reserve moves the preset's WAF away from the
/// textbook greedy figure (docs/validation.md, "Reserve accounting").
fn reserve_note(name: &str) -> anyhow::Result<String> {
    let (config, geometry) = preset_config(name)?;
    let effect = ReserveEffect::of(&geometry, config.ftl.gc_threshold_blocks);
    if effect.effective_over_provisioning <= 0.0 {
        return Ok(format!(
            "Reserve: the FTL holds back {} blocks per parallel unit (ftl.gc_threshold_blocks free blocks plus \
             the open host and GC blocks), more than the {:.1} spare ones: a workload that fills the device \
             does not run on the page FTL at this over-provisioning.",
            effect.reserve_blocks_per_unit, effect.spare_blocks_per_unit
        ));
    }
    Ok(format!(
        "Reserve: the FTL holds back {} of the {:.1} spare blocks per parallel unit (ftl.gc_threshold_blocks \
         free blocks plus the open host and GC blocks, half-written on average), so the spare factor is \
         ρ_eff = {:.3}, not ρ = {:.3}: uniform random writes under greedy GC settle near WAF {:.2}, {:+.0} % \
         against the textbook {:.2} at ρ.",
        effect.reserve_blocks_per_unit,
        effect.spare_blocks_per_unit,
        effect.effective_over_provisioning,
        effect.over_provisioning,
        effect.effective_greedy_waf,
        100.0 * (effect.effective_greedy_waf / effect.greedy_waf - 1.0),
        effect.greedy_waf
    ))
}

/// Width of the description column: with the 15-column name, under 100 in all.
const DESCRIPTION_COLUMNS: usize = 84;
