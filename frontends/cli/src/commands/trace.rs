//! `nandlab trace` (being built; owned by its issue's work).

#[derive(clap::Args)]
pub struct TraceArgs {}

pub fn run(_args: TraceArgs) -> anyhow::Result<()> {
    anyhow::bail!("`nandlab trace` is not available yet")
}
