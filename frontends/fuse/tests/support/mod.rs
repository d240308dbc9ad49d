//! Shared test helpers: capability checks that print `SKIPPED: <reason>`, and cleanup guards that
//! detach loop devices and unmount file systems even when a test fails.

#![allow(dead_code)] // each test binary uses a different subset

pub mod daemon;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Prints `SKIPPED: <reason>` and returns true when a capability is missing.
pub fn skipped(missing: Option<String>) -> bool {
    match missing {
        Some(reason) => {
            eprintln!("SKIPPED: {reason}");
            true
        }
        None => false,
    }
}

/// The test's random generator; the seed is printed so a failure can be replayed.
pub fn seeded_rng(seed: u64) -> rand_xoshiro::Xoshiro256PlusPlus {
    use rand::SeedableRng;
    eprintln!("seed {seed:#x}");
    rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// Returns why FUSE tests cannot run here, if they cannot.
pub fn fuse_unavailable() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing".into());
    }
    if !nix::unistd::geteuid().is_root() && which("fusermount3").is_none() {
        return Some("not root and fusermount3 is not installed (apt install fuse3)".into());
    }
    None
}

/// Returns why loop-device tests cannot run here, if they cannot.
pub fn loop_unavailable() -> Option<String> {
    if let Some(reason) = fuse_unavailable() {
        return Some(reason);
    }
    if !nix::unistd::geteuid().is_root() {
        return Some("loop devices and mount(8) need root".into());
    }
    for tool in ["losetup", "mkfs.ext4", "mount", "umount", "e2fsck"] {
        if which(tool).is_none() {
            return Some(format!("{tool} is not installed"));
        }
    }
    None
}

pub fn which(tool: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&paths)
        .chain(["/sbin", "/usr/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(tool))
        .find(|candidate| candidate.is_file())
}

/// Runs a command, panicking with its output if it fails; returns stdout.
pub fn run(program: &str, args: &[&str]) -> String {
    let tool = which(program).unwrap_or_else(|| PathBuf::from(program));
    let output = Command::new(&tool).args(args).output().unwrap_or_else(|err| panic!("spawn {program}: {err}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Undoes mounts and loop devices in reverse order of creation when dropped.
#[derive(Default)]
pub struct Cleanup {
    actions: Vec<Undo>,
}

enum Undo {
    Unmount(PathBuf),
    DetachLoop(String),
}

impl Cleanup {
    pub fn mounted(&mut self, mountpoint: &Path) {
        self.actions.push(Undo::Unmount(mountpoint.to_path_buf()));
    }

    pub fn attached(&mut self, loop_device: &str) {
        self.actions.push(Undo::DetachLoop(loop_device.to_owned()));
    }

    /// Runs the undo actions now (in order), so a test can continue after them.
    pub fn undo_all(&mut self) {
        while let Some(action) = self.actions.pop() {
            let ok = match &action {
                Undo::Unmount(path) => Command::new("umount").arg(path).status(),
                Undo::DetachLoop(dev) => Command::new("losetup").args(["-d", dev]).status(),
            }
            .is_ok_and(|status| status.success());
            if !ok {
                if let Undo::Unmount(path) = &action {
                    let _ = Command::new("umount").arg("-l").arg(path).status();
                }
                eprintln!("cleanup: {} failed", describe(&action));
            }
        }
    }
}

fn describe(action: &Undo) -> String {
    match action {
        Undo::Unmount(path) => format!("umount {}", path.display()),
        Undo::DetachLoop(dev) => format!("losetup -d {dev}"),
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.undo_all();
    }
}
