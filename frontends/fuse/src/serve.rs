//! Mounting the DHRD file system and the `serve` daemon loop: stale-mount recovery after a crash,
//! initialization progress on stderr, clean shutdown (unmount, stop the copier, fdatasync) on
//! SIGINT/SIGTERM.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use fuser::{BackgroundSession, Config, MountOption, SessionACL};
use nandlab_dhrd::{parse_byte_size, Device, DeviceConfig, DhrdError, Durability};

use crate::error::FuseError;
use crate::fs::{DiskFs, DISK_FILE_NAME};

/// How often the daemon loop checks for signals and prints progress.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// `nandlab dhrd serve` arguments (shared by the CLI and the `nandlab-dhrd-fuse` binary).
#[derive(clap::Args, Clone, Debug)]
pub struct ServeArgs {
    /// Durable backing store: a regular file (created sparse if missing) or a block device.
    #[arg(long, value_name = "FILE")]
    pub backing: PathBuf,
    /// Device size, e.g. 4GiB (binary) or 4GB (decimal). Defaults to the backing store's size.
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    /// Existing directory to mount on; the device appears as DIR/disk and statistics as DIR/stats.
    #[arg(long, value_name = "DIR")]
    pub mount: PathBuf,
    /// Fast-initialization chunk size (power of two, 4KiB..1GiB).
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    pub chunk: u64,
    /// When a write is acknowledged: direct (O_DIRECT|O_DSYNC), dsync (O_DSYNC) or write-back
    /// (durable only after fsync/flush).
    #[arg(long, default_value = "direct")]
    pub durability: Durability,
    /// Limit the background copier to this many bytes per second (e.g. 200MiB).
    #[arg(long, value_parser = parse_size)]
    pub copy_rate: Option<u64>,
    /// FUSE request threads.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Let other users (not only the owner and root) access the mount.
    #[arg(long)]
    pub allow_other: bool,
    /// Print initialization progress to stderr at most this often, in milliseconds (0: never).
    #[arg(long, default_value_t = 1000)]
    pub progress_ms: u64,
}

fn parse_size(text: &str) -> Result<u64, DhrdError> {
    parse_byte_size(text)
}

impl ServeArgs {
    #[must_use]
    pub fn device_config(&self) -> DeviceConfig {
        let mut config = DeviceConfig::new(&self.backing, self.size);
        config.chunk_bytes = self.chunk;
        config.durability = self.durability;
        config.copy_rate_bytes_per_s = self.copy_rate;
        config
    }
}

/// Mount options besides the mount point.
#[derive(Clone, Copy, Debug)]
pub struct MountOptions {
    pub threads: usize,
    pub allow_other: bool,
}

/// A mounted DHRD; unmounts when dropped.
pub struct MountedDisk {
    session: Option<BackgroundSession>,
    mountpoint: PathBuf,
}

impl MountedDisk {
    /// Path of the disk file inside the mount.
    #[must_use]
    pub fn disk_path(&self) -> PathBuf {
        self.mountpoint.join(DISK_FILE_NAME)
    }

    /// False once the session has ended (e.g. someone ran `fusermount3 -u` on it).
    #[must_use]
    pub fn is_serving(&self) -> bool {
        self.session
            .as_ref()
            .is_some_and(|session| !session.guard.is_finished())
    }

    /// Unmounts and waits for the request threads to finish.
    pub fn unmount(mut self) -> Result<(), FuseError> {
        self.unmount_inner()
    }

    fn unmount_inner(&mut self) -> Result<(), FuseError> {
        match self.session.take() {
            Some(session) => session.umount_and_join().map_err(|source| FuseError::Mount {
                path: self.mountpoint.clone(),
                action: "unmount (is a loop device or file system still using DIR/disk?)",
                source,
            }),
            None => Ok(()),
        }
    }
}

impl Drop for MountedDisk {
    fn drop(&mut self) {
        if let Err(err) = self.unmount_inner() {
            eprintln!("dhrd: {err}");
        }
    }
}

/// Mounts `device` on `mountpoint`, first clearing a stale mount left by a killed daemon.
pub fn mount(device: Arc<Device>, mountpoint: &Path, options: MountOptions) -> Result<MountedDisk, FuseError> {
    clear_stale_mount(mountpoint)?;
    if !mountpoint.is_dir() {
        return Err(FuseError::MountPointMissing(mountpoint.to_path_buf()));
    }
    if is_mount_point(mountpoint) {
        return Err(FuseError::MountPointBusy(mountpoint.to_path_buf()));
    }
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("nandlab-dhrd".into()),
        MountOption::Subtype("dhrd".into()),
        MountOption::NoAtime,
    ];
    config.acl = if options.allow_other {
        SessionACL::All
    } else {
        SessionACL::Owner
    };
    config.n_threads = Some(options.threads.max(1));
    config.clone_fd = true;
    let session = fuser::spawn_mount(DiskFs::new(device), mountpoint, &config).map_err(|source| {
        FuseError::Mount {
            path: mountpoint.to_path_buf(),
            action: "FUSE mount",
            source,
        }
    })?;
    Ok(MountedDisk {
        session: Some(session),
        mountpoint: mountpoint.to_path_buf(),
    })
}

/// True when `path` is the root of a mounted file system (its device differs from its parent's).
/// Mounting over a live mount would hide it and confuse every later path lookup.
fn is_mount_point(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let parent = path.join("..");
    match (std::fs::metadata(path), std::fs::metadata(parent)) {
        (Ok(inner), Ok(outer)) => inner.dev() != outer.dev(),
        _ => false,
    }
}

/// A daemon killed with SIGKILL leaves its mount behind, answering ENOTCONN; detach it.
fn clear_stale_mount(mountpoint: &Path) -> Result<(), FuseError> {
    let stale = matches!(
        std::fs::metadata(mountpoint),
        Err(err) if err.raw_os_error() == Some(libc::ENOTCONN)
    );
    if !stale {
        return Ok(());
    }
    eprintln!("dhrd: {} is a stale FUSE mount (daemon died); detaching it", mountpoint.display());
    if nix::mount::umount2(mountpoint, nix::mount::MntFlags::MNT_DETACH).is_ok() {
        return Ok(());
    }
    let status = std::process::Command::new("fusermount3")
        .arg("-uz")
        .arg(mountpoint)
        .status()
        .map_err(|source| FuseError::Mount {
            path: mountpoint.to_path_buf(),
            action: "run fusermount3 -uz on the stale mount",
            source,
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(FuseError::Mount {
            path: mountpoint.to_path_buf(),
            action: "detach the stale mount",
            source: io::Error::other(format!("fusermount3 -uz exited with {status}")),
        })
    }
}

/// Runs the daemon until SIGINT/SIGTERM or an external unmount, then shuts down cleanly.
/// Prints one `dhrd: serving ...` line on stdout once the disk is mounted.
pub fn serve(args: &ServeArgs) -> Result<(), FuseError> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop)).map_err(FuseError::Signals)?;
    }
    let started = Instant::now();
    let device = Arc::new(Device::open(&args.device_config())?);
    let options = MountOptions {
        threads: args.threads,
        allow_other: args.allow_other,
    };
    let mounted = mount(Arc::clone(&device), &args.mount, options)?;
    println!(
        "dhrd: serving {} ({} bytes, chunk {} bytes, durability {}) after {} us",
        mounted.disk_path().display(),
        device.size_bytes(),
        device.chunk_bytes(),
        args.durability,
        started.elapsed().as_micros()
    );
    let _ = io::stdout().flush();

    let mut progress = ProgressReporter::new(args.progress_ms);
    while !stop.load(Ordering::Acquire) && mounted.is_serving() {
        progress.report(&device);
        thread::sleep(POLL_INTERVAL);
    }
    if mounted.is_serving() {
        eprintln!("dhrd: signal received, unmounting {}", args.mount.display());
    } else {
        eprintln!("dhrd: {} was unmounted externally", args.mount.display());
    }
    mounted.unmount()?;
    let device = Arc::try_unwrap(device).map_err(|_| FuseError::Mount {
        path: args.mount.clone(),
        action: "release the device after unmount",
        source: io::Error::other("FUSE threads still hold the device"),
    })?;
    device.close()?;
    eprintln!("dhrd: clean shutdown; every acknowledged write is durable");
    Ok(())
}

/// Prints initialization progress lines to stderr, rate-limited, and one line on completion.
struct ProgressReporter {
    interval: Option<Duration>,
    last_printed: Option<Instant>,
    finished_reported: bool,
}

impl ProgressReporter {
    fn new(interval_ms: u64) -> ProgressReporter {
        ProgressReporter {
            interval: (interval_ms > 0).then(|| Duration::from_millis(interval_ms)),
            last_printed: None,
            finished_reported: false,
        }
    }

    fn report(&mut self, device: &Device) {
        let Some(interval) = self.interval else {
            return;
        };
        if self.finished_reported {
            return;
        }
        let progress = device.init_progress();
        if let Some(error) = &progress.copier_error {
            eprintln!("dhrd: initialization stopped: {error}; uncopied chunks are served from the backing store");
            self.finished_reported = true;
        } else if let Some(elapsed) = progress.finished_after {
            eprintln!(
                "dhrd: initialization complete: {} chunks in {} ms",
                progress.chunks_total,
                elapsed.as_millis()
            );
            self.finished_reported = true;
        } else if self.last_printed.is_none_or(|at| at.elapsed() >= interval) {
            let permille = progress.permille();
            eprintln!(
                "dhrd: initializing {}.{}% ({}/{} chunks)",
                permille / 10,
                permille % 10,
                progress.chunks_initialized,
                progress.chunks_total
            );
            self.last_printed = Some(Instant::now());
        }
    }
}
