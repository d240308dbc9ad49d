//! Issue check (access control): with `--allow-other`, another user (`nobody`, via `setpriv`) is
//! refused DIR/disk while its mode says so, chmod/chown on DIR/disk take effect (on the backing
//! store too) or are refused with an error, and a new backing file is created 0600.

mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use nandlab_dhrd::{Device, DeviceConfig};
use nandlab_fuse::{mount, MountOptions, STATS_FILE_NAME};
use support::{fuse_unavailable, skipped, which};

const NOBODY: &str = "65534";

/// Runs `sh -c script` as uid/gid 65534 with no supplementary groups.
fn as_nobody(script: &str) -> Output {
    Command::new("setpriv")
        .args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups", "sh", "-c", script])
        .output()
        .expect("spawn setpriv")
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").mode() & 0o7777
}

#[test]
fn another_user_is_refused_until_chmod_or_chown_grants_access() {
    if skipped(fuse_unavailable()) {
        return;
    }
    if !nix::unistd::geteuid().is_root() || which("setpriv").is_none() {
        skipped(Some("needs root and setpriv to act as another user".into()));
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // nobody must be able to walk to the mount; the refusal must come from DIR/disk itself.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod tempdir");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).expect("mkdir");
    let backing = dir.path().join("backing.img");
    let device = Arc::new(Device::open(&DeviceConfig::new(&backing, Some(1 << 20))).expect("open"));
    assert_eq!(mode_of(&backing), 0o600, "a new backing file must be private to its owner");

    let options = MountOptions { threads: 2, allow_other: true };
    let fuse = mount(device.clone(), &mnt, options).expect("mount");
    let disk = fuse.disk_path();
    let disk_arg = disk.to_str().expect("utf-8 path");
    assert_eq!(mode_of(&disk), 0o600);
    let write_x = format!("printf X | dd of={disk_arg} conv=notrunc status=none");
    let read_one = format!("head -c 1 {disk_arg} >/dev/null");

    let refused = as_nobody(&write_x);
    assert!(!refused.status.success(), "nobody wrote a 0600 root-owned disk");
    assert!(stderr_of(&refused).contains("Permission denied"), "{}", stderr_of(&refused));
    assert!(!as_nobody(&read_one).status.success(), "nobody read a 0600 root-owned disk");
    let chmod = as_nobody(&format!("chmod 666 {disk_arg}"));
    assert!(!chmod.status.success(), "nobody changed the mode of root's disk");
    assert!(stderr_of(&chmod).contains("Operation not permitted"), "{}", stderr_of(&chmod));
    let stats = mnt.join(STATS_FILE_NAME);
    let stats_arg = stats.to_str().expect("utf-8 path");
    assert!(as_nobody(&format!("cat {stats_arg} >/dev/null")).status.success());
    let mut byte = [0u8; 1];
    device.read_at(0, &mut byte).expect("read");
    assert_eq!(byte, [0], "the refused write reached the device");

    // chmod takes effect, on the disk and on the backing store.
    std::fs::set_permissions(&disk, std::fs::Permissions::from_mode(0o604)).expect("chmod disk");
    assert_eq!(mode_of(&disk), 0o604);
    assert_eq!(mode_of(&backing), 0o604);
    assert!(as_nobody(&read_one).status.success(), "o+r did not let nobody read");
    assert!(!as_nobody(&write_x).status.success(), "o+r let nobody write");

    // chown hands the disk (and its durable copy) to nobody, who may then write it.
    std::os::unix::fs::chown(&disk, Some(65534), Some(65534)).expect("chown disk");
    assert_eq!(std::fs::metadata(&disk).expect("stat").uid(), 65534);
    assert_eq!(std::fs::metadata(&backing).expect("stat").uid(), 65534);
    let granted = as_nobody(&write_x);
    assert!(granted.status.success(), "owner nobody could not write: {}", stderr_of(&granted));
    device.read_at(0, &mut byte).expect("read");
    assert_eq!(byte, *b"X");
    // The root directory and stats have fixed attributes: chmod is refused, not ignored.
    let refused_stats_chmod = std::fs::set_permissions(&stats, std::fs::Permissions::from_mode(0o666));
    assert!(refused_stats_chmod.is_err(), "chmod of stats reported success");
    fuse.unmount().expect("unmount");
}
