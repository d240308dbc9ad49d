//! `nandlab admit` (being built; owned by its issue's work).

#[derive(clap::Args)]
pub struct AdmitArgs {}

pub fn run(_args: AdmitArgs) -> anyhow::Result<()> {
    anyhow::bail!("`nandlab admit` is not available yet")
}
