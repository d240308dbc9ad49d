//! Embedded presets: complete device set-ups from the papers, selectable by
//! name. Each is a TOML document that a user's file or `--set` can override.

/// (name, TOML text) of every embedded preset.
pub const PRESETS: &[(&str, &str)] = &[
    ("femu-32g", include_str!("presets/femu-32g.toml")),
    ("telomere-1tb", include_str!("presets/telomere-1tb.toml")),
    ("cosmos", include_str!("presets/cosmos.toml")),
    ("small", include_str!("presets/small.toml")),
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
}
