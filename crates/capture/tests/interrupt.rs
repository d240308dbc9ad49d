//! Ctrl-C during a capture: SIGINT must end the workload and leave no loop
//! device, mount, tracefs instance or image behind. A test binary of its own,
//! because the signal reaches every capture in the process.

#![allow(clippy::unwrap_used)]

use nandlab_capture::{capture, CaptureConfig, CaptureError, Workload};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[test]
fn sigint_ends_the_workload_and_cleans_up() {
    if !nix::unistd::geteuid().is_root() || !Path::new("/dev/loop-control").exists() {
        eprintln!("SKIPPED: needs root and /dev/loop-control");
        return;
    }
    let image_dir = PathBuf::from(format!("/dev/shm/nandlab-test-{}-interrupt", std::process::id()));
    std::fs::create_dir_all(&image_dir).unwrap();
    let config = CaptureConfig {
        file_system: "ext4".into(),
        size_bytes: 64 << 20,
        mount_options: String::new(),
        mkfs_options: Vec::new(),
        image_dir: image_dir.clone(),
        output: image_dir.join("never-written.nlt"),
        buffer_kib_per_cpu: 1024,
    };
    let (sender, receiver) = std::sync::mpsc::channel::<()>();
    let interrupter = std::thread::spawn(move || {
        // Interrupt once the workload has started (its first status line).
        receiver.recv_timeout(Duration::from_secs(30)).unwrap();
        std::thread::sleep(Duration::from_millis(500));
        nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT).unwrap();
    });
    let started = Instant::now();
    let workload = Workload::Command(vec!["sh".into(), "-c".into(), "echo data > f; sleep 60 & sleep 60".into()]);
    let result = capture(&config, workload, &mut |line| {
        if line.starts_with("recording") {
            let _ = sender.send(());
        }
    });
    interrupter.join().unwrap();
    assert!(matches!(result, Err(CaptureError::Interrupted)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(30), "the sleeping workload was ended, not waited for");
    let left: Vec<_> = std::fs::read_dir(&image_dir).unwrap().flatten().map(|entry| entry.path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains(&image_dir.display().to_string()), "still mounted");
    std::fs::remove_dir(&image_dir).unwrap();
}
