//! `nandlab capture` (being built; owned by its issue's work).

#[derive(clap::Args)]
pub struct CaptureArgs {}

pub fn run(_args: CaptureArgs) -> anyhow::Result<()> {
    anyhow::bail!("`nandlab capture` is not available yet")
}
