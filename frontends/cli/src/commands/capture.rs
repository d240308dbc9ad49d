//! `nandlab capture`: a block trace of a real Linux file system. Argument
//! parsing only; the machinery is in `nandlab-capture` (docs/capture.md).

use anyhow::Context;
use nandlab_capture::{capture, CaptureConfig, Workload};
use nandlab_dhrd::parse_byte_size;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct CaptureArgs {
    /// File system to make (mkfs.<FS> must exist); ext3/ext4 get their journal located.
    #[arg(long = "fs", default_value = "ext4")]
    file_system: String,
    /// Size of the sparse image: K, M, G, T (or KiB … TiB) are powers of 1024, KB, MB, GB, TB powers of 1000.
    #[arg(long, default_value = "4GiB", value_parser = parse_byte_size)]
    size: u64,
    /// Mount options (`mount -o`), e.g. `discard`.
    #[arg(long, default_value = "")]
    mount_opts: String,
    /// Extra mkfs arguments, space-separated.
    #[arg(long, default_value = "")]
    mkfs_opts: String,
    /// The native trace to write.
    #[arg(long, default_value = "capture.nlt")]
    out: PathBuf,
    /// Directory for the sparse image; tmpfs keeps capture fast.
    #[arg(long, default_value = "/dev/shm")]
    image_dir: PathBuf,
    /// tracefs ring buffer per CPU, KiB.
    #[arg(long, default_value_t = 16384)]
    buffer_kib: u32,
    /// The workload, run in the mounted file system (cwd and $NANDLAB_MNT), e.g. `nandlab fsload uav-single`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

pub fn run(args: CaptureArgs) -> anyhow::Result<()> {
    check_output(&args.out)?;
    let config = CaptureConfig {
        file_system: args.file_system.clone(),
        size_bytes: args.size,
        mount_options: args.mount_opts.clone(),
        mkfs_options: args.mkfs_opts.split_whitespace().map(str::to_owned).collect(),
        image_dir: args.image_dir.clone(),
        output: args.out.clone(),
        buffer_kib_per_cpu: args.buffer_kib,
    };
    let report = capture(&config, Workload::Command(args.command.clone()), &mut |line| eprintln!("capture: {line}"))
        .context("capture failed")?;
    eprintln!(
        "capture: {} requests in {:.1} s of workload written to {}{}",
        report.records,
        report.workload_seconds,
        args.out.display(),
        report
            .header
            .journal
            .first()
            .map(|range| format!(" (journal at sectors {}..{})", range.start.0, range.end().0))
            .unwrap_or_default()
    );
    if report.events_lost > 0 {
        eprintln!("capture: WARNING: the kernel dropped {} events; raise --buffer-kib", report.events_lost);
    }
    match report.exit_code {
        Some(0) => Ok(()),
        Some(code) => anyhow::bail!(
            "the workload exited with status {code}; the trace of what it did was written to {}",
            args.out.display()
        ),
        None => anyhow::bail!(
            "the workload was killed by a signal; the trace of what it did was written to {}",
            args.out.display()
        ),
    }
}

/// Fails before the workload runs if the trace could not be written.
fn check_output(path: &Path) -> anyhow::Result<()> {
    let metadata = std::fs::metadata(path).ok();
    if metadata.as_ref().is_some_and(std::fs::Metadata::is_dir) {
        anyhow::bail!("--out {}: is a directory", path.display());
    }
    if metadata.is_some_and(|metadata| !metadata.is_file()) {
        // A device or FIFO, written in place: opening a FIFO now would end its reader's read.
        return Ok(());
    }
    let probe = nandlab_trace::OutputFile::create(path)
        .with_context(|| format!("--out {}: cannot write there", path.display()))?;
    drop(probe);
    Ok(())
}
