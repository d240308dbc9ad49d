//! The real daemon binary (`nandlab-dhrd-fuse`) as a child process: killed by its PID and its mount
//! detached when the guard drops, so a failing test leaves neither behind.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub struct Daemon {
    pub child: Child,
    pub mountpoint: PathBuf,
    /// After a deliberate SIGKILL the stale mount is left for the next daemon to clear.
    pub leave_stale_mount: bool,
}

impl Daemon {
    /// Starts the daemon on `backing` and `mountpoint` with `extra` flags and waits for its
    /// `dhrd: serving` line.
    pub fn start(backing: &Path, mountpoint: &Path, extra: &[String]) -> Daemon {
        let mut args = vec!["--mount".to_owned(), mountpoint.to_str().expect("utf-8 path").to_owned()];
        args.extend_from_slice(extra);
        Daemon::start_with(backing, &args, mountpoint)
    }

    /// Starts the daemon with exactly `args` besides the backing store (e.g. NBD only);
    /// `mountpoint` is detached on drop if the daemon mounted it.
    pub fn start_with(backing: &Path, args: &[String], mountpoint: &Path) -> Daemon {
        let mut child = Command::new(env!("CARGO_BIN_EXE_nandlab-dhrd-fuse"))
            .args(["--backing", backing.to_str().expect("utf-8 path")])
            .args(["--progress-ms", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn nandlab-dhrd-fuse");
        let stdout = child.stdout.take().expect("daemon stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("read ready line");
        let daemon = Daemon { child, mountpoint: mountpoint.to_path_buf(), leave_stale_mount: false };
        assert!(line.starts_with("dhrd: serving"), "daemon did not come up: {line:?}");
        daemon
    }

    pub fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid fits i32"))
    }

    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(self.pid(), signal).expect("signal the daemon");
    }

    pub fn disk(&self) -> File {
        OpenOptions::new().read(true).write(true).open(self.mountpoint.join("disk")).expect("open DIR/disk")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if self.leave_stale_mount {
            return;
        }
        let _ = nix::mount::umount2(&self.mountpoint, nix::mount::MntFlags::MNT_DETACH);
    }
}
