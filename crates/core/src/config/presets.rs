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

/// The first comment line of a preset: what it models.
pub fn preset_summary(name: &str) -> Option<&'static str> {
    preset_text(name)?.lines().next().map(|line| line.trim_start_matches('#').trim())
}
