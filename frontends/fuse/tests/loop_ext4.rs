//! Issue check: a loop device over DIR/disk with ext4 on it. mkfs (which discards: fallocate
//! punch-hole), mount, write and read files, unmount, restart the DHRD from its backing store,
//! mount again, files intact and fsck clean. In-process daemon; cleanup guards on failure.

mod support;

use std::sync::Arc;

use nandlab_dhrd::{Device, DeviceConfig};
use nandlab_fuse::{mount, MountOptions};
use rand::RngExt;
use support::{loop_unavailable, run, seeded_rng, skipped, Cleanup};

const OPTIONS: MountOptions = MountOptions { threads: 2, allow_other: false };

#[test]
fn ext4_on_a_loop_device_over_the_fuse_disk_survives_a_restart() {
    if skipped(loop_unavailable()) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let backing = dir.path().join("backing.img");
    let fuse_dir = dir.path().join("fuse");
    let ext4_dir = dir.path().join("ext4");
    std::fs::create_dir_all(&fuse_dir).expect("mkdir fuse");
    std::fs::create_dir_all(&ext4_dir).expect("mkdir ext4");
    let mut rng = seeded_rng(0x10_0e_47);
    let big: Vec<u8> = (0..3_000_000).map(|_| rng.random()).collect();
    let mut config = DeviceConfig::new(&backing, Some(128 << 20));
    config.chunk_bytes = 1 << 20;

    // Session 1: make the file system and write files.
    {
        let device = Arc::new(Device::open(&config).expect("open device"));
        let fuse = mount(device.clone(), &fuse_dir, OPTIONS).expect("mount fuse");
        let mut cleanup = Cleanup::default();
        let disk = fuse.disk_path();
        let loop_dev = run("losetup", &["--find", "--show", disk.to_str().expect("utf-8 path")]);
        cleanup.attached(&loop_dev);
        run("mkfs.ext4", &["-q", "-F", "-E", "discard", &loop_dev]);
        run("mount", &[&loop_dev, ext4_dir.to_str().expect("utf-8 path")]);
        cleanup.mounted(&ext4_dir);
        std::fs::write(ext4_dir.join("big.bin"), &big).expect("write big");
        std::fs::create_dir(ext4_dir.join("sub")).expect("mkdir sub");
        std::fs::write(ext4_dir.join("sub/hello.txt"), b"hello from DHRD\n").expect("write small");
        assert_eq!(std::fs::read(ext4_dir.join("big.bin")).expect("read big"), big);
        run("sync", &[]);
        cleanup.undo_all();
        let stats = device.stats();
        eprintln!("session 1: {} writes, {} discards, {} reads", stats.writes, stats.discards, stats.reads);
        assert!(stats.discards > 0, "mkfs -E discard should reach fallocate(PUNCH_HOLE)");
        fuse.unmount().expect("unmount fuse");
        Arc::try_unwrap(device).ok().expect("device released").close().expect("close");
    }

    // Session 2: a new device recovers from the backing store alone.
    let device = Arc::new(Device::open(&DeviceConfig::new(&backing, None)).expect("reopen device"));
    let fuse = mount(device.clone(), &fuse_dir, OPTIONS).expect("remount fuse");
    let mut cleanup = Cleanup::default();
    let disk = fuse.disk_path();
    let loop_dev = run("losetup", &["--find", "--show", disk.to_str().expect("utf-8 path")]);
    cleanup.attached(&loop_dev);
    run("e2fsck", &["-f", "-n", &loop_dev]);
    run("mount", &[&loop_dev, ext4_dir.to_str().expect("utf-8 path")]);
    cleanup.mounted(&ext4_dir);
    assert_eq!(std::fs::read(ext4_dir.join("big.bin")).expect("read big"), big);
    assert_eq!(std::fs::read(ext4_dir.join("sub/hello.txt")).expect("read small"), b"hello from DHRD\n");
    cleanup.undo_all();
    assert!(device.wait_initialized(std::time::Duration::from_secs(30)));
    assert_eq!(device.verify_mirror().expect("mirror"), 128);
    drop(fuse);
}
