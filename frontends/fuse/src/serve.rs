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
    /// Durable backing store: a regular file (created mode 0600 if missing, its whole size reserved
    /// unless --sparse) or a block device.
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
    /// Do not reserve the backing file's space: start even when the file system cannot hold the
    /// whole size (writes then fail with ENOSPC once it is full) and let discards punch holes.
    #[arg(long)]
    pub sparse: bool,
    /// FUSE request threads.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Let users other than the daemon's own reach the mount. Access to DIR/disk is then decided
    /// by its mode and owner (those of the backing store; chmod/chown DIR/disk to grant it): a user
    /// who may write DIR/disk can rewrite every byte of the disk, a reader can read all of it.
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
        config.sparse = self.sparse;
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

    /// Unmounts unless the disk is in use, then joins the request threads. On refusal returns
    /// why, naming what holds the disk.
    fn try_unmount(&mut self) -> Result<(), String> {
        match unmount_syscall(&self.mountpoint, nix::mount::MntFlags::empty()) {
            Ok(()) => {
                self.join();
                Ok(())
            }
            Err(err) => {
                let holders = crate::holders::disk_holders(&self.disk_path());
                if holders.is_empty() {
                    Err(format!(
                        "unmounting {} failed ({err})",
                        self.mountpoint.display()
                    ))
                } else {
                    Err(format!(
                        "{} is in use by {}",
                        self.disk_path().display(),
                        holders.join(", ")
                    ))
                }
            }
        }
    }

    /// Lazily detaches the mount so no stale mount point is left; users of the disk see errors.
    fn detach(&mut self) -> Result<(), FuseError> {
        unmount_syscall(&self.mountpoint, nix::mount::MntFlags::MNT_DETACH).map_err(|source| {
            FuseError::Mount {
                path: self.mountpoint.clone(),
                action: "detach (umount -l)",
                source,
            }
        })
    }

    /// Lets go of a detached session without joining its request threads (a loop device may keep
    /// them busy); the process exit ends them.
    fn abandon(mut self) {
        drop(self.session.take());
    }

    /// Waits for the request threads once the kernel has ended the session.
    fn join(&mut self) {
        if let Some(session) = self.session.take() {
            if let Err(err) = session.join() {
                eprintln!("dhrd: FUSE session ended with an error: {err}");
            }
        }
    }

    fn unmount_inner(&mut self) -> Result<(), FuseError> {
        match self.session.take() {
            Some(session) => session
                .umount_and_join()
                .map_err(|source| FuseError::Mount {
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
pub fn mount(
    device: Arc<Device>,
    mountpoint: &Path,
    options: MountOptions,
) -> Result<MountedDisk, FuseError> {
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
        // The kernel checks each open/chmod/chown against the modes and owners DiskFs reports.
        MountOption::DefaultPermissions,
    ];
    config.acl = if options.allow_other {
        SessionACL::All
    } else {
        SessionACL::Owner
    };
    config.n_threads = Some(options.threads.max(1));
    config.clone_fd = true;
    let session =
        fuser::spawn_mount(DiskFs::new(device), mountpoint, &config).map_err(|source| {
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

/// umount2(2) as root; `fusermount3 -u` (`-uz` for a detach) otherwise.
fn unmount_syscall(mountpoint: &Path, flags: nix::mount::MntFlags) -> io::Result<()> {
    if nix::unistd::geteuid().is_root() {
        return nix::mount::umount2(mountpoint, flags).map_err(io::Error::from);
    }
    let lazy = flags.contains(nix::mount::MntFlags::MNT_DETACH);
    let output = std::process::Command::new("fusermount3")
        .arg(if lazy { "-uz" } else { "-u" })
        .arg(mountpoint)
        .output()?;
    if output.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        ))
    }
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
    let not_connected = |result: io::Result<_>| matches!(result, Err(err) if err.raw_os_error() == Some(libc::ENOTCONN));
    // stat may be answered from attributes the kernel cached before the daemon died; opening the
    // directory always asks the daemon.
    let stale = not_connected(std::fs::metadata(mountpoint).map(drop))
        || (is_mount_point(mountpoint) && not_connected(std::fs::read_dir(mountpoint).map(drop)));
    if !stale {
        return Ok(());
    }
    eprintln!(
        "dhrd: {} is a stale FUSE mount (daemon died); detaching it",
        mountpoint.display()
    );
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

/// Runs the daemon until a stop is asked for (SIGINT/SIGTERM, `nandlab dhrd stop`) or the mount is
/// unmounted externally, then shuts down cleanly. Prints one `dhrd: serving ...` line on stdout once
/// the disk is mounted.
///
/// A stop while DIR/disk is in use (a loop device, a mounted file system, an open file) does not
/// pull the disk from under its user: the daemon keeps serving, says what holds the disk, and stops
/// once it is released. A second signal forces the stop: the mount is detached (its user sees I/O
/// errors from then on). Either way the device is flushed and closed before the daemon exits.
pub fn serve(args: &ServeArgs) -> Result<(), FuseError> {
    let signalled = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&signalled)).map_err(FuseError::Signals)?;
    }
    let started = Instant::now();
    let device = Arc::new(Device::open(&args.device_config())?);
    let options = MountOptions {
        threads: args.threads,
        allow_other: args.allow_other,
    };
    let mut mounted = mount(Arc::clone(&device), &args.mount, options)?;
    println!(
        "dhrd: serving {} ({} bytes, chunk {} bytes, durability {}) after {} us",
        mounted.disk_path().display(),
        device.size_bytes(),
        device.chunk_bytes(),
        args.durability,
        started.elapsed().as_micros()
    );
    let _ = io::stdout().flush();

    let ending = serve_until_stopped(&mut mounted, &device, &signalled, args.progress_ms);
    let closed = match ending {
        Ending::Unmounted => {
            drop(mounted);
            match Arc::try_unwrap(device) {
                Ok(device) => device.close(),
                Err(device) => device.shut_down(),
            }
        }
        Ending::Forced => {
            let detached = mounted.detach();
            let flushed = device.shut_down();
            if let Err(err) = detached {
                eprintln!("dhrd: {err}");
            }
            mounted.abandon();
            flushed
        }
    };
    closed?;
    eprintln!("dhrd: device flushed and closed; every acknowledged write is durable");
    Ok(())
}

/// How the serving loop ended.
enum Ending {
    /// The mount is gone (stopped while unused, or unmounted externally); the session is joined.
    Unmounted,
    /// A second stop signal while the disk was in use.
    Forced,
}

/// Set once this process's daemon has been asked to stop; DIR/stats shows it so `nandlab dhrd stop`
/// does not turn a repeated request into a forced one.
pub(crate) static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

/// How often a pending stop retries the unmount.
const STOP_RETRY_INTERVAL: Duration = Duration::from_millis(250);

fn serve_until_stopped(
    mounted: &mut MountedDisk,
    device: &Device,
    signalled: &AtomicBool,
    progress_ms: u64,
) -> Ending {
    let mut progress = ProgressReporter::new(progress_ms);
    let mut stop_requests = 0u32;
    let mut last_attempt: Option<Instant> = None;
    let mut last_reason = String::new();
    loop {
        if !mounted.is_serving() {
            eprintln!(
                "dhrd: {} was unmounted externally",
                mounted.mountpoint.display()
            );
            mounted.join();
            return Ending::Unmounted;
        }
        if signalled.swap(false, Ordering::AcqRel) {
            stop_requests += 1;
            last_attempt = None;
            STOP_REQUESTED.store(true, Ordering::Release);
        }
        if stop_requests >= 2 {
            eprintln!(
                "dhrd: second stop request: detaching {} although it is in use",
                mounted.mountpoint.display()
            );
            return Ending::Forced;
        }
        if stop_requests == 1 && last_attempt.is_none_or(|at| at.elapsed() >= STOP_RETRY_INTERVAL) {
            last_attempt = Some(Instant::now());
            match mounted.try_unmount() {
                Ok(()) => return Ending::Unmounted,
                Err(reason) if reason != last_reason => {
                    eprintln!(
                        "dhrd: stop requested, but {reason}; still serving. It stops once the disk is \
                         released (umount the file system, losetup -d the loop device, close the file), \
                         or at once on a second signal (the user then sees I/O errors)"
                    );
                    last_reason = reason;
                }
                Err(_) => {}
            }
        }
        progress.report(device);
        thread::sleep(POLL_INTERVAL);
    }
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
