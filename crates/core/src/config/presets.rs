//! Embedded presets: complete device set-ups from the papers and from the
//! devices users own (eMMC, UFS, SATA and NVMe), selectable by name. Each is a
//! TOML document that a user's file or `--set` can override; its leading
//! comment says what it models and, after `Source:`, where every number comes
//! from and which ones are inferred, derived or assumed (docs/configuration.md,
//! "Device presets").

/// (name, TOML text) of every embedded preset.
pub const PRESETS: &[(&str, &str)] = &[
    ("femu-32g", include_str!("presets/femu-32g.toml")),
    ("telomere-1tb", include_str!("presets/telomere-1tb.toml")),
    ("cosmos", include_str!("presets/cosmos.toml")),
    ("small", include_str!("presets/small.toml")),
    ("emmc-mlc-64g", include_str!("presets/emmc-mlc-64g.toml")),
    ("emmc-tlc-64g", include_str!("presets/emmc-tlc-64g.toml")),
    ("ufs31-tlc-128g", include_str!("presets/ufs31-tlc-128g.toml")),
    ("sata-tlc-1tb", include_str!("presets/sata-tlc-1tb.toml")),
    ("nvme-tlc-1tb", include_str!("presets/nvme-tlc-1tb.toml")),
];

pub fn preset_text(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(preset, _)| *preset == name).map(|(_, text)| *text)
}

pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|(name, _)| *name).collect()
}

/// What a preset models: its leading comment block as one paragraph.
pub fn preset_description(name: &str) -> Option<String> {
    let lines: Vec<&str> = preset_text(name)?
        .lines()
        .map_while(|line| line.strip_prefix('#'))
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    Some(lines.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where a preset's numbers come from: its description from `Source:` on.
    fn preset_source(name: &str) -> Option<String> {
        let description = preset_description(name)?;
        let (_, source) = description.split_once("Source:")?;
        Some(source.trim().to_owned())
    }

    #[test]
    fn descriptions_are_whole_comment_blocks() {
        for name in preset_names() {
            let description = preset_description(name).expect("a preset");
            assert!(description.ends_with('.') || description.ends_with(')'), "{name}: {description}");
        }
        let cosmos = preset_description("cosmos").expect("cosmos");
        assert!(cosmos.starts_with("Telomere's OpenSSD Cosmos board") && cosmos.contains("over_provisioning=0.5"));
        assert_eq!(preset_description("nonesuch"), None);
    }

    #[test]
    fn every_preset_cites_its_source() {
        for name in preset_names() {
            let source = preset_source(name).unwrap_or_default();
            assert!(source.len() > 20, "{name}: no `Source:` in its leading comment");
        }
        assert_eq!(preset_source("nonesuch"), None);
        let ufs = preset_source("ufs31-tlc-128g").expect("ufs");
        assert!(ufs.starts_with("Micron MTFC128GAVATTC") && ufs.contains("Inferred:"), "{ufs}");
    }
}
