//! `nandlab dhrd stop DIR`: asks the daemon serving DIR to stop (SIGTERM to the pid it publishes in
//! DIR/stats) and waits until it has flushed, closed and exited, reporting what holds the disk
//! meanwhile. The daemon's own rules apply: in use, it keeps serving until released, or stops at
//! once with `--force` (a second signal).

use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::error::FuseError;
use crate::fs::{DISK_FILE_NAME, STATS_FILE_NAME};
use crate::holders::disk_holders;

/// The daemon polls for signals this often; a forced stop spaces its two signals wider than this
/// so they are not merged into one.
const SIGNAL_SPACING: Duration = Duration::from_millis(300);
const REPORT_INTERVAL: Duration = Duration::from_secs(2);

/// `nandlab dhrd stop` arguments.
#[derive(clap::Args, Clone, Debug)]
pub struct StopArgs {
    /// The directory the daemon serves (its --mount).
    #[arg(value_name = "DIR")]
    pub mount: PathBuf,
    /// Stop even while the disk is in use (a loop device or an open file): its user gets I/O errors.
    #[arg(long)]
    pub force: bool,
    /// Give up waiting after this many seconds (the stop stays requested).
    #[arg(long, default_value_t = 60)]
    pub wait_s: u64,
}

/// Stops the daemon serving `args.mount`; returns once it has exited.
pub fn stop(args: &StopArgs) -> Result<(), FuseError> {
    let daemon = read_daemon(&args.mount)?;
    let pid = daemon.pid;
    // A stop already pending is not repeated: a second signal would force it.
    if !daemon.stop_requested {
        signal(pid, Signal::SIGTERM)?;
    }
    if args.force {
        if !daemon.stop_requested {
            thread::sleep(SIGNAL_SPACING);
        }
        if is_running(pid) {
            signal(pid, Signal::SIGTERM)?;
        }
    }
    let started = Instant::now();
    let mut last_report = Instant::now();
    let disk = args.mount.join(DISK_FILE_NAME);
    while is_running(pid) {
        if started.elapsed() >= Duration::from_secs(args.wait_s) {
            return Err(FuseError::StillServing { pid: pid.as_raw(), holders: holders_text(&disk) });
        }
        if last_report.elapsed() >= REPORT_INTERVAL {
            eprintln!("dhrd stop: daemon {pid} still serving: {}", holders_text(&disk));
            last_report = Instant::now();
        }
        thread::sleep(Duration::from_millis(50));
    }
    eprintln!("dhrd stop: daemon {pid} flushed the device and exited");
    Ok(())
}

fn holders_text(disk: &Path) -> String {
    let holders = disk_holders(disk);
    if holders.is_empty() {
        format!("nothing visible holds {} (is it shutting down?)", disk.display())
    } else {
        format!("{} is in use by {}", disk.display(), holders.join(", "))
    }
}

/// What DIR/stats says about the daemon serving it.
struct DaemonState {
    pid: Pid,
    stop_requested: bool,
}

/// Reads `daemon_pid N` and `daemon_stop_requested 0|1` from DIR/stats.
fn read_daemon(mount: &Path) -> Result<DaemonState, FuseError> {
    let stats_path = mount.join(STATS_FILE_NAME);
    let not_served = |reason: String| FuseError::NotServed { path: mount.to_path_buf(), reason };
    let stats = std::fs::read_to_string(&stats_path).map_err(|err| match err.raw_os_error() {
        Some(libc::ENOTCONN) => not_served("it is a stale mount (the daemon died); `umount -l` it".into()),
        _ => not_served(format!("cannot read {}: {err}", stats_path.display())),
    })?;
    let value = |key: &str| {
        stats
            .lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix(' '))
            .and_then(|value| value.trim().parse::<i32>().ok())
    };
    let missing = |key| not_served(format!("{} has no {key} line", stats_path.display()));
    Ok(DaemonState {
        pid: Pid::from_raw(value("daemon_pid").ok_or_else(|| missing("daemon_pid"))?),
        stop_requested: value("daemon_stop_requested").ok_or_else(|| missing("daemon_stop_requested"))? != 0,
    })
}

fn signal(pid: Pid, signal: Signal) -> Result<(), FuseError> {
    kill(pid, signal).map_err(|errno| FuseError::Signal { pid: pid.as_raw(), source: std::io::Error::from(errno) })
}

/// True while the process exists and is not a zombie awaiting its parent.
fn is_running(pid: Pid) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name, which may itself contain spaces.
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}
