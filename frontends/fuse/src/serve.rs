//! Mounting the DHRD file system: the `serve` arguments, stale-mount recovery after a crash,
//! unmounting only when the disk is unused, or detaching it when a stop is forced.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fuser::{BackgroundSession, Config, MountOption, SessionACL};
use nandlab_dhrd::{parse_byte_size, DeviceConfig, Durability};
use nandlab_nbd::BlockDevice;

use crate::error::FuseError;
use crate::fs::{DiskFs, DISK_FILE_NAME};
use crate::nbd_args::NbdArgs;

/// Default FUSE request threads: a queue depth of 16 is served in parallel (with 4, the old
/// default, durable writes at queue depth 16 reached a quarter of the backing store's rate). More
/// is not free on the paper's embedded targets: measured on a 32 MiB disk, 16 threads leave the
/// daemon at 39 MB resident like 4 do, while 64 took 255 MB and slowed initialization from
/// 24-76 ms to 107-264 ms.
pub const DEFAULT_THREADS: u16 = 16;

/// `nandlab dhrd serve` arguments (shared by the CLI and the `nandlab-dhrd-fuse` binary).
#[derive(clap::Args, Clone, Debug)]
pub struct ServeArgs {
    /// Durable backing store: a regular file (created mode 0600 if missing, its whole size reserved
    /// unless --sparse) or a block device.
    #[arg(long, value_name = "FILE")]
    pub backing: PathBuf,
    /// Device size, e.g. 4GiB (binary) or 4GB (decimal). Defaults to the backing store's size.
    #[arg(long, value_parser = parse_byte_size)]
    pub size: Option<u64>,
    /// Existing directory to mount on; the device appears as DIR/disk and statistics as DIR/stats.
    #[arg(long, value_name = "DIR", required_unless_present = "nbd")]
    pub mount: Option<PathBuf>,
    #[command(flatten)]
    pub nbd: NbdArgs,
    /// Fast-initialization chunk size (power of two, 4KiB..1GiB).
    #[arg(long, default_value = "1MiB", value_parser = parse_byte_size)]
    pub chunk: u64,
    /// When a write is acknowledged: direct (O_DIRECT|O_DSYNC), dsync (O_DSYNC) or write-back
    /// (durable only after fsync/flush).
    #[arg(long, default_value = "direct")]
    pub durability: Durability,
    /// Limit the background copier to this many bytes per second (e.g. 200MiB).
    #[arg(long, value_parser = parse_byte_size)]
    pub copy_rate: Option<u64>,
    /// Do not reserve the backing file's space: start even when the file system cannot hold the
    /// whole size (writes then fail with ENOSPC once it is full) and let discards punch holes.
    #[arg(long)]
    pub sparse: bool,
    /// FUSE request threads, each serving one request at a time; also the kernel's limit on
    /// asynchronous requests in flight (max_background), so queue depths up to this many are
    /// served in parallel (durable writes wait on the backing store, so their parallelism is
    /// bounded by it). Idle threads cost only their stacks.
    #[arg(long, default_value_t = DEFAULT_THREADS, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: u16,
    /// Let users other than the daemon's own reach the mount. Access to DIR/disk is then decided
    /// by its mode and owner (those of the backing store; chmod/chown DIR/disk to grant it): a user
    /// who may write DIR/disk can rewrite every byte of the disk, a reader can read all of it.
    #[arg(long)]
    pub allow_other: bool,
    /// Print initialization progress to stderr at most this often, in milliseconds (0: never).
    #[arg(long, default_value_t = 1000)]
    pub progress_ms: u64,
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
    pub threads: u16,
    pub allow_other: bool,
}

/// A mounted DHRD; unmounts when dropped.
pub struct MountedDisk {
    session: Option<BackgroundSession>,
    pub(crate) mountpoint: PathBuf,
    /// Raised once the daemon has been asked to stop; DIR/stats shows it.
    stop_requested: Arc<AtomicBool>,
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
        self.session.as_ref().is_some_and(|session| !session.guard.is_finished())
    }

    /// Shows in DIR/stats that the daemon has been asked to stop, so `nandlab dhrd stop` does not
    /// turn a repeated request into a forced one.
    pub(crate) fn note_stop_requested(&self) {
        self.stop_requested.store(true, Ordering::Release);
    }

    /// Unmounts and waits for the request threads to finish.
    pub fn unmount(mut self) -> Result<(), FuseError> {
        self.unmount_inner()
    }

    /// Unmounts unless the disk is in use, then joins the request threads. On refusal returns
    /// why, naming what holds the disk.
    pub(crate) fn try_unmount(&mut self) -> Result<(), String> {
        match unmount_syscall(&self.mountpoint, nix::mount::MntFlags::empty()) {
            Ok(()) => {
                self.join();
                Ok(())
            }
            Err(err) => {
                let holders = crate::holders::disk_holders(&self.disk_path());
                if holders.is_empty() {
                    Err(format!("unmounting {} failed ({err})", self.mountpoint.display()))
                } else {
                    Err(format!("{} is in use by {}", self.disk_path().display(), holders.join(", ")))
                }
            }
        }
    }

    /// Lazily detaches the mount so no stale mount point is left; users of the disk see errors.
    pub(crate) fn detach(&mut self) -> Result<(), FuseError> {
        unmount_syscall(&self.mountpoint, nix::mount::MntFlags::MNT_DETACH).map_err(|source| FuseError::Mount {
            path: self.mountpoint.clone(),
            action: "detach (umount -l)",
            source,
        })
    }

    /// Lets go of a detached session without joining its request threads (a loop device may keep
    /// them busy); the process exit ends them.
    pub(crate) fn abandon(mut self) {
        drop(self.session.take());
    }

    /// Waits for the request threads once the kernel has ended the session.
    pub(crate) fn join(&mut self) {
        if let Some(session) = self.session.take() {
            if let Err(err) = session.join() {
                eprintln!("dhrd: FUSE session ended with an error: {err}");
            }
        }
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
pub fn mount(device: Arc<dyn BlockDevice>, mountpoint: &Path, options: MountOptions) -> Result<MountedDisk, FuseError> {
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
    config.acl = if options.allow_other { SessionACL::All } else { SessionACL::Owner };
    config.n_threads = Some(usize::from(options.threads.max(1)));
    config.clone_fd = true;
    let stop_requested = Arc::new(AtomicBool::new(false));
    let disk_fs = DiskFs::new(device, options.threads, Arc::clone(&stop_requested));
    let session = fuser::spawn_mount(disk_fs, mountpoint, &config).map_err(|source| FuseError::Mount {
        path: mountpoint.to_path_buf(),
        action: "FUSE mount",
        source,
    })?;
    Ok(MountedDisk { session: Some(session), mountpoint: mountpoint.to_path_buf(), stop_requested })
}

/// umount2(2) as root; `fusermount3 -u` (`-uz` for a detach) otherwise.
fn unmount_syscall(mountpoint: &Path, flags: nix::mount::MntFlags) -> io::Result<()> {
    if nix::unistd::geteuid().is_root() {
        return nix::mount::umount2(mountpoint, flags).map_err(io::Error::from);
    }
    let lazy = flags.contains(nix::mount::MntFlags::MNT_DETACH);
    let output =
        std::process::Command::new("fusermount3").arg(if lazy { "-uz" } else { "-u" }).arg(mountpoint).output()?;
    if output.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(String::from_utf8_lossy(&output.stderr).trim().to_owned()))
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

/// A daemon killed with SIGKILL leaves its mount behind, answering ENOTCONN; detach it. The
/// daemons call it before opening their device too, so a start refused there (an emulated
/// device whose killed session left no clean state) does not leave the dead mount behind.
pub fn clear_stale_mount(mountpoint: &Path) -> Result<(), FuseError> {
    let not_connected =
        |result: io::Result<_>| matches!(result, Err(err) if err.raw_os_error() == Some(libc::ENOTCONN));
    // stat may be answered from attributes the kernel cached before the daemon died; opening the
    // directory always asks the daemon.
    let stale = not_connected(std::fs::metadata(mountpoint).map(drop))
        || (is_mount_point(mountpoint) && not_connected(std::fs::read_dir(mountpoint).map(drop)));
    if !stale {
        return Ok(());
    }
    eprintln!("nandlab: {} is a stale FUSE mount (daemon died); detaching it", mountpoint.display());
    if nix::mount::umount2(mountpoint, nix::mount::MntFlags::MNT_DETACH).is_ok() {
        return Ok(());
    }
    let status = std::process::Command::new("fusermount3").arg("-uz").arg(mountpoint).status().map_err(|source| {
        FuseError::Mount { path: mountpoint.to_path_buf(), action: "run fusermount3 -uz on the stale mount", source }
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
