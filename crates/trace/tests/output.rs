//! Output files onto every kind of target (issue 28): a device node stays a
//! node, a FIFO's reader gets the bytes, a symbolic link stays a link and its
//! target gets the bytes, a replaced file keeps its mode, and an abandoned
//! output leaves the old file and no temporary file behind. The device-node
//! test needs root (`mknod`) and says so when skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use nandlab_trace::{write_output, OutputFile};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("scratch folder")
}

fn names(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `folder/name` holding "old", with permission bits `mode`.
fn file_with_mode(folder: &Path, name: &str, mode: u32) -> std::path::PathBuf {
    let path = folder.join(name);
    std::fs::write(&path, "old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_character_device_node_stays_a_node() {
    let dir = scratch();
    let node = dir.path().join("null");
    // The major and minor numbers of /dev/null (1, 3), in a scratch folder.
    let made = Command::new("mknod").arg(&node).args(["c", "1", "3"]).status().expect("mknod runs");
    if !made.success() {
        eprintln!("skipped: mknod needs root");
        return;
    }
    write_output(&node, b"{\"json\": true}\n").expect("written into the device");
    let metadata = std::fs::symlink_metadata(&node).unwrap();
    assert!(metadata.file_type().is_char_device(), "{metadata:?}");
    assert_eq!(metadata.rdev(), std::fs::metadata("/dev/null").unwrap().rdev());
    assert_eq!(names(dir.path()), ["null"], "no temporary file");
}

#[test]
fn a_fifo_reader_gets_the_bytes_and_the_fifo_stays() {
    let dir = scratch();
    let fifo = dir.path().join("pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs").success());
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::fs::File::open(reader_path).unwrap().read_to_string(&mut text).unwrap();
        text
    });
    write_output(&fifo, b"{\"json\": true}\n").expect("written into the FIFO");
    assert_eq!(reader.join().unwrap(), "{\"json\": true}\n");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(names(dir.path()), ["pipe"]);
}

#[test]
fn a_symlink_stays_a_link_and_its_target_gets_the_bytes_atomically() {
    let dir = scratch();
    let target = file_with_mode(dir.path(), "real.json", 0o640);
    let inode_before = std::fs::metadata(&target).unwrap().ino();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    write_output(&link, b"new").unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("real.json"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    assert_ne!(std::fs::metadata(&target).unwrap().ino(), inode_before, "replaced by rename, not rewritten");
    assert_eq!(mode(&target), 0o640);
    assert_eq!(names(dir.path()), ["link.json", "real.json"]);
}

#[test]
fn a_replaced_0600_file_stays_0600() {
    let dir = scratch();
    let path = file_with_mode(dir.path(), "secret.json", 0o600);
    write_output(&path, b"new").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn a_new_file_gets_0666_less_the_umask() {
    let dir = scratch();
    let path = dir.path().join("new.json");
    write_output(&path, b"new").unwrap();
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let umask = status.lines().find_map(|line| line.strip_prefix("Umask:")).unwrap().trim().to_owned();
    assert_eq!(mode(&path), 0o666 & !u32::from_str_radix(&umask, 8).unwrap());
}

#[test]
fn an_abandoned_output_leaves_the_old_file_and_nothing_else() {
    let dir = scratch();
    let path = dir.path().join("keep.txt");
    std::fs::write(&path, "precious").unwrap();
    let mut abandoned = OutputFile::create(&path).unwrap();
    abandoned.write_all(b"half").unwrap();
    abandoned.flush().unwrap();
    assert_eq!(names(dir.path()), ["keep.txt"], "the temporary file has no name while written");
    drop(abandoned);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
    assert_eq!(names(dir.path()), ["keep.txt"]);
}

#[test]
fn a_folder_is_refused_and_left_alone() {
    let dir = scratch();
    let error = write_output(dir.path(), b"x").expect_err("a folder is not an output");
    assert_eq!(error.kind(), std::io::ErrorKind::IsADirectory);
    assert!(std::fs::metadata(dir.path()).unwrap().is_dir());
}

#[test]
fn a_proc_fd_link_to_a_regular_file_is_written_in_place() {
    let dir = scratch();
    let path = dir.path().join("stdout.txt");
    std::fs::write(&path, "kept\n").unwrap();
    let file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    let inode = std::fs::metadata(&path).unwrap().ino();
    let fd_link = format!("/proc/self/fd/{}", std::os::unix::io::AsRawFd::as_raw_fd(&file));
    write_output(Path::new(&fd_link), b"added\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "kept\nadded\n");
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), inode, "not replaced");
}
