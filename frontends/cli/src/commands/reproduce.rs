//! `nandlab reproduce` (being built; owned by its issue's work).

#[derive(clap::Args)]
pub struct ReproduceArgs {}

pub fn run(_args: ReproduceArgs) -> anyhow::Result<()> {
    anyhow::bail!("`nandlab reproduce` is not available yet")
}
