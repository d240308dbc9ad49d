//! `nandlab dhrd` (being built; owned by its issue's work).

#[derive(clap::Args)]
pub struct DhrdArgs {}

pub fn run(_args: DhrdArgs) -> anyhow::Result<()> {
    anyhow::bail!("`nandlab dhrd` is not available yet")
}
