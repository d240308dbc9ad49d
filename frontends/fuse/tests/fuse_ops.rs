//! The FUSE file semantics a loop device and a reader need: unaligned direct reads and writes,
//! writes clipped at the end of the disk, fsync, punch-hole, the stats file, and refusing to mount
//! over a live mount.

mod support;

use std::fs::OpenOptions;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use nandlab_dhrd::{Device, DeviceConfig};
use nandlab_fuse::{mount, FuseError, MountOptions, STATS_FILE_NAME};
use nix::fcntl::{fallocate, FallocateFlags};
use support::{fuse_unavailable, skipped};

#[test]
fn disk_file_supports_unaligned_io_fsync_punch_hole_and_stats() {
    if skipped(fuse_unavailable()) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).expect("mkdir");
    let size = 8u64 << 20;
    let device = Arc::new(Device::open(&DeviceConfig::new(dir.path().join("b.img"), Some(size))).expect("open"));
    let options = MountOptions { threads: 2, allow_other: false };
    let fuse = mount(device.clone(), &mnt, options).expect("mount");
    let disk = OpenOptions::new().read(true).write(true).open(fuse.disk_path()).expect("open disk");
    assert_eq!(disk.metadata().expect("stat").len(), size);

    let text = b"unaligned bytes across a chunk boundary";
    let at = (1u64 << 20) - 13;
    disk.write_all_at(text, at).expect("write");
    let mut back = vec![0u8; text.len()];
    disk.read_exact_at(&mut back, at).expect("read");
    assert_eq!(back, text);
    let mut in_ram = vec![0u8; text.len()];
    device.read_at(at, &mut in_ram).expect("library read");
    assert_eq!(in_ram, text);
    disk.sync_all().expect("fsync");

    // Writes stop at the end of the disk.
    assert_eq!(disk.write_at(b"abcdef", size - 2).expect("clipped write"), 2);
    assert!(disk.write_at(b"x", size).is_err());

    fallocate(
        disk.as_fd(),
        FallocateFlags::FALLOC_FL_PUNCH_HOLE | FallocateFlags::FALLOC_FL_KEEP_SIZE,
        at as i64 + 5,
        10,
    )
    .expect("punch hole");
    disk.read_exact_at(&mut back, at).expect("read after punch");
    assert_eq!(&back[..5], &text[..5]);
    assert!(back[5..15].iter().all(|&b| b == 0));
    assert_eq!(&back[15..], &text[15..]);

    // The copier fills RAM in the background; on a loaded machine it may
    // still be running, so wait for it (bounded) before reading the stats.
    let stats_path = mnt.join(STATS_FILE_NAME);
    let waited_since = std::time::Instant::now();
    let mut stats = std::fs::read_to_string(&stats_path).expect("read stats");
    while !stats.contains("init_permille 1000") && waited_since.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        stats = std::fs::read_to_string(&stats_path).expect("read stats");
    }
    for key in ["reads ", "writes 2", "discards 1", "read_latency_p99_ns", "init_permille 1000"] {
        assert!(stats.contains(key), "stats lack {key:?}:\n{stats}");
    }
    // A second daemon must not stack its mount over a live one.
    let second = mount(device.clone(), &mnt, options);
    assert!(matches!(second, Err(FuseError::MountPointBusy(_))));

    drop(disk);
    fuse.unmount().expect("unmount");
    assert_eq!(device.verify_mirror().expect("mirror"), 8);
}
