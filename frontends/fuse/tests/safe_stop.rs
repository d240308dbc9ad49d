//! Issue check (safe stop): SIGTERM and `nandlab dhrd stop` while a loop device with a mounted ext4
//! uses DIR/disk keep the daemon serving (the file system keeps working) and report the holder;
//! once the loop device is released the daemon flushes, closes and exits 0, leaving no mount behind
//! and a backing image that fsck finds clean with the files intact. A second signal forces the
//! stop: still no stale mount, and the data written before it is in the backing store. An NBD
//! client holds the disk the same way: the daemon serves it until it disconnects.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nandlab_fuse::{stop, FuseError, StopArgs};
use nix::sys::signal::Signal;
use support::daemon::Daemon;
use support::{loop_unavailable, run, skipped, Cleanup};

const SIZE: &str = "64MiB";

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// True when `path` is a live mount point; panics on a stale one (ENOTCONN).
fn is_mount_point(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let inner = std::fs::metadata(path).unwrap_or_else(|err| panic!("stat {}: {err}", path.display()));
    let outer = std::fs::metadata(path.join("..")).expect("stat parent");
    inner.dev() != outer.dev()
}

fn wait_for_exit(daemon: &mut Daemon, limit: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = daemon.child.try_wait().expect("try_wait") {
            return status;
        }
        assert!(started.elapsed() < limit, "daemon did not exit within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stop_args(mount: &Path, wait_s: u64) -> StopArgs {
    StopArgs { mount: mount.to_path_buf(), force: false, wait_s }
}

/// The daemon binary on DIR/mnt (write-back: the mode whose final fdatasync a failed stop used to
/// skip) with a loop device attached to DIR/mnt/disk, detached on drop.
struct LoopOverDaemon {
    backing: PathBuf,
    mnt: PathBuf,
    daemon: Daemon,
    cleanup: Cleanup,
    loop_dev: String,
}

impl LoopOverDaemon {
    fn start(dir: &Path) -> LoopOverDaemon {
        let backing = dir.join("backing.img");
        let mnt = dir.join("mnt");
        std::fs::create_dir(&mnt).expect("mkdir");
        let flags = ["--size", SIZE, "--durability", "write-back"].map(String::from);
        let daemon = Daemon::start(&backing, &mnt, &flags);
        let mut cleanup = Cleanup::default();
        let loop_dev = run("losetup", &["--find", "--show", path_str(&mnt.join("disk"))]);
        cleanup.attached(&loop_dev);
        LoopOverDaemon { backing, mnt, daemon, cleanup, loop_dev }
    }
}

#[test]
fn stop_while_a_loop_device_holds_the_disk_waits_then_shuts_down_cleanly() {
    if skipped(loop_unavailable()) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let ext4 = dir.path().join("ext4");
    std::fs::create_dir(&ext4).expect("mkdir");
    let LoopOverDaemon { backing, mnt, mut daemon, mut cleanup, loop_dev } = LoopOverDaemon::start(dir.path());
    run("mkfs.ext4", &["-q", "-F", &loop_dev]);
    run("mount", &[&loop_dev, path_str(&ext4)]);
    cleanup.mounted(&ext4);
    let payload: Vec<u8> = (0..2_000_000u32).map(|i| (i * 7 + i / 4096) as u8).collect();
    std::fs::write(ext4.join("before.bin"), &payload).expect("write before stop");

    daemon.signal(Signal::SIGTERM);
    std::thread::sleep(Duration::from_millis(800));
    assert!(daemon.child.try_wait().expect("try_wait").is_none(), "daemon quit while in use");
    std::fs::write(ext4.join("after.bin"), &payload).expect("write after the stop request");
    run("sync", &[]);
    assert_eq!(std::fs::read(ext4.join("before.bin")).expect("read"), payload);

    // `nandlab dhrd stop` (twice: a repeated request must not force the stop) reports what holds
    // the disk and gives up after its wait.
    for _ in 0..2 {
        match stop(&stop_args(&mnt, 1)) {
            Err(FuseError::StillServing { holders, .. }) => {
                assert!(holders.contains(&loop_dev), "holder not named: {holders}");
            }
            other => panic!("stop while in use should keep waiting, got {other:?}"),
        }
    }
    assert_eq!(std::fs::read(ext4.join("after.bin")).expect("read"), payload);

    cleanup.undo_all(); // umount ext4, losetup -d: the disk is released
    stop(&stop_args(&mnt, 20)).expect("stop once released");
    let status = wait_for_exit(&mut daemon, Duration::from_secs(5));
    assert!(status.success(), "daemon exit status {status}");
    assert!(!is_mount_point(&mnt), "mount left behind");

    // The backing image alone holds a clean file system with both files.
    run("e2fsck", &["-f", "-n", path_str(&backing)]);
    run("mount", &["-o", "ro,loop", path_str(&backing), path_str(&ext4)]);
    cleanup.mounted(&ext4);
    assert_eq!(std::fs::read(ext4.join("before.bin")).expect("read"), payload);
    assert_eq!(std::fs::read(ext4.join("after.bin")).expect("read"), payload);
}

#[test]
fn a_second_signal_forces_the_stop_without_a_stale_mount() {
    if skipped(loop_unavailable()) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let LoopOverDaemon { backing, mnt, mut daemon, cleanup, loop_dev } = LoopOverDaemon::start(dir.path());
    let pattern = b"written through the loop device before a forced stop".repeat(80);
    std::fs::write(dir.path().join("pattern"), &pattern).expect("write pattern");
    let pattern_path = dir.path().join("pattern");
    let input = format!("if={}", path_str(&pattern_path));
    run("dd", &[&input, &format!("of={loop_dev}"), "bs=4096", "conv=fsync,notrunc", "status=none"]);

    let mut force = stop_args(&mnt, 20);
    force.force = true;
    stop(&force).expect("forced stop");
    let status = wait_for_exit(&mut daemon, Duration::from_secs(5));
    assert!(status.success(), "daemon exit status {status}");
    assert!(!is_mount_point(&mnt), "mount left behind");
    let image = std::fs::read(&backing).expect("read backing");
    assert_eq!(&image[..pattern.len()], &pattern[..]);
    drop(cleanup); // the loop device still points at the detached disk: detach it
}

#[test]
fn a_connected_nbd_client_holds_the_disk_until_it_disconnects() {
    let Some(qemu_io) = support::which("qemu-io") else {
        skipped(Some("qemu-io is not installed (apt install qemu-utils)".into()));
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let backing = dir.path().join("backing.img");
    let socket = dir.path().join("dhrd.sock");
    let args = ["--size", SIZE, "--nbd"].map(String::from);
    let mut args = args.to_vec();
    args.push(format!("unix:{}", path_str(&socket)));
    let mut daemon = Daemon::start_with(&backing, &args, &dir.path().join("unused"));
    let uri = format!("nbd+unix:///dhrd?socket={}", path_str(&socket));
    let mut client = std::process::Command::new(qemu_io)
        .args(["-f", "raw", &uri])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn qemu-io");
    let mut commands = client.stdin.take().expect("qemu-io stdin");
    std::io::Write::write_all(&mut commands, b"write -P 0x5a 0 65536\nflush\n").expect("send commands");
    std::thread::sleep(Duration::from_millis(500)); // connected and written

    daemon.signal(Signal::SIGTERM);
    std::thread::sleep(Duration::from_millis(800));
    assert!(daemon.child.try_wait().expect("try_wait").is_none(), "daemon quit under an NBD client");
    drop(commands); // qemu-io reads EOF, disconnects and exits
    let _ = client.wait();
    let status = wait_for_exit(&mut daemon, Duration::from_secs(5));
    assert!(status.success(), "daemon exit status {status}");
    assert!(!socket.exists(), "the Unix socket was left behind");
    let image = std::fs::read(&backing).expect("read backing");
    assert!(image[..65536].iter().all(|&b| b == 0x5a), "the client's write is not in the backing store");
}
