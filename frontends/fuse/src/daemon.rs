//! The `serve` daemon: opens the device, exposes it over FUSE and/or NBD, prints initialization
//! progress, and stops safely: a stop (SIGINT/SIGTERM, `nandlab dhrd stop`) while the disk is in
//! use (a loop device, a mounted file system, an open file, an NBD client) keeps serving and says
//! why, and completes once the disk is released; a second signal forces it. Either way the device
//! is flushed and closed before the process exits.

use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use nandlab_dhrd::Device;
use nandlab_nbd::{BlockDevice, Export, NbdAddress, NbdServer};

use crate::error::FuseError;
use crate::serve::{clear_stale_mount, mount, MountOptions, MountedDisk, ServeArgs};

/// How often the daemon loop checks for signals and prints progress.
/// The DHRD's NBD export name (`nbd+unix:///dhrd?socket=PATH`).
pub const DHRD_EXPORT_NAME: &str = "dhrd";
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// How often a pending stop retries.
const STOP_RETRY_INTERVAL: Duration = Duration::from_millis(250);

/// What serves a device to its users: a FUSE mount and/or an NBD export.
pub struct Frontends {
    fuse: Option<MountedDisk>,
    nbd: Option<NbdServer>,
}

/// How the serving loop ended.
pub enum Ending {
    /// Every front end is gone (stopped while unused, or the mount was unmounted externally).
    Released,
    /// A second stop request while the disk was in use.
    Forced,
}

impl Frontends {
    /// Serves `device` on `mount` (as `DIR/disk`) and/or over NBD at `nbd`; returns the front ends
    /// and a description of each.
    pub fn start(
        device: &Arc<dyn BlockDevice>,
        mount_on: Option<&Path>,
        options: MountOptions,
        nbd: Option<(&NbdAddress, Export)>,
    ) -> Result<(Frontends, Vec<String>), FuseError> {
        let mut frontends = Frontends { fuse: None, nbd: None };
        let mut served = Vec::new();
        if let Some(mountpoint) = mount_on {
            let mounted = mount(Arc::clone(device), mountpoint, options)?;
            served.push(mounted.disk_path().display().to_string());
            frontends.fuse = Some(mounted);
        }
        if let Some((address, export)) = nbd {
            let name = export.name.clone();
            let server = NbdServer::start(Arc::clone(device), address, export)?;
            served.push(format!("NBD export {name:?} on {}", server.address()));
            frontends.nbd = Some(server);
        }
        Ok((frontends, served))
    }

    /// Ends the front ends; after a forced stop, detaches the mount and disconnects NBD clients.
    pub fn end(mut self, ending: &Ending) {
        if let Ending::Forced = ending {
            if let Some(nbd) = self.nbd.take() {
                nbd.shut_down();
            }
            if let Some(mut fuse) = self.fuse.take() {
                if let Err(err) = fuse.detach() {
                    eprintln!("nandlab: {err}");
                }
                fuse.abandon();
            }
        }
    }
}

/// SIGINT and SIGTERM raise the returned flag instead of ending the process.
pub fn stop_signals() -> Result<Arc<AtomicBool>, FuseError> {
    let signalled = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&signalled)).map_err(FuseError::Signals)?;
    }
    Ok(signalled)
}

/// Runs the daemon until a stop completes or the mount is unmounted externally. Prints one
/// `dhrd: serving ...` line on stdout once the front ends are up.
pub fn serve(args: &ServeArgs) -> Result<(), FuseError> {
    let signalled = stop_signals()?;
    let started = Instant::now();
    args.mount.as_deref().map(clear_stale_mount).transpose()?;
    let device = Arc::new(Device::open(&args.device_config())?);
    let options = MountOptions { threads: args.threads, allow_other: args.allow_other };
    let shared: Arc<dyn BlockDevice> = device.clone();
    let nbd = args.nbd.export(DHRD_EXPORT_NAME, "nandlab DHRD (durable hybrid RAM disk)")?;
    let (mut frontends, served) = Frontends::start(&shared, args.mount.as_deref(), options, nbd)?;
    drop(shared);
    println!(
        "dhrd: serving {} ({} bytes, chunk {} bytes, durability {}) after {} us",
        served.join(" and "),
        device.size_bytes(),
        device.chunk_bytes(),
        args.durability,
        started.elapsed().as_micros()
    );
    let _ = io::stdout().flush();

    let mut progress = ProgressReporter::new(args.progress_ms);
    let ending = serve_until_stopped(&mut frontends, &signalled, &mut || progress.report(&device));
    frontends.end(&ending);
    let closed = match Arc::try_unwrap(device) {
        Ok(device) => device.close(),
        // Forced: request threads still hold the device; the process exit ends them.
        Err(device) => device.shut_down(),
    };
    closed?;
    eprintln!("dhrd: device flushed and closed; every acknowledged write is durable");
    Ok(())
}

/// Serves until a stop request (`signalled`) finds the disk unused, a second one forces the stop, or
/// the mount is unmounted externally; calls `tick` between checks.
pub fn serve_until_stopped(frontends: &mut Frontends, signalled: &AtomicBool, tick: &mut dyn FnMut()) -> Ending {
    let mut stop_requests = 0u32;
    let mut last_attempt: Option<Instant> = None;
    let mut last_reason = String::new();
    loop {
        if let Some(fuse) = frontends.fuse.as_mut().filter(|fuse| !fuse.is_serving()) {
            eprintln!("nandlab: {} was unmounted externally", fuse.mountpoint.display());
            fuse.join();
            return Ending::Released;
        }
        if signalled.swap(false, Ordering::AcqRel) {
            stop_requests += 1;
            last_attempt = None;
            if let Some(fuse) = &frontends.fuse {
                fuse.note_stop_requested();
            }
        }
        if stop_requests >= 2 {
            eprintln!("nandlab: second stop request: stopping although the disk is in use");
            return Ending::Forced;
        }
        if stop_requests == 1 && last_attempt.is_none_or(|at| at.elapsed() >= STOP_RETRY_INTERVAL) {
            last_attempt = Some(Instant::now());
            match try_release(frontends) {
                Ok(()) => return Ending::Released,
                Err(reason) if reason != last_reason => {
                    eprintln!(
                        "nandlab: stop requested, but {reason}; still serving. It stops once the disk is \
                         released (umount the file system, losetup -d the loop device, close the file, \
                         disconnect the NBD client), or at once on a second signal (the user then sees \
                         I/O errors)"
                    );
                    last_reason = reason;
                }
                Err(_) => {}
            }
        }
        tick();
        thread::sleep(POLL_INTERVAL);
    }
}

/// Ends every front end that nobody uses; returns why not when something still holds the disk.
fn try_release(frontends: &mut Frontends) -> Result<(), String> {
    if let Some(nbd) = &frontends.nbd {
        let clients = nbd.clients();
        if !clients.is_empty() {
            return Err(format!("the NBD export is in use by {}", clients.join(", ")));
        }
    }
    if let Some(fuse) = frontends.fuse.as_mut() {
        fuse.try_unmount()?;
    }
    frontends.fuse = None;
    if let Some(nbd) = frontends.nbd.take() {
        nbd.shut_down();
    }
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
            eprintln!("dhrd: initialization complete: {} chunks in {} ms", progress.chunks_total, elapsed.as_millis());
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
