//! Who holds DIR/disk open: loop devices backed by it (and where they are mounted) and processes
//! with it open. Used to say why a stop waits; best effort (another user's processes are visible
//! only to root).

use std::path::Path;

/// One description per holder, e.g. `loop device /dev/loop3 (mounted on /srv/data)` or
/// `process 4242 (fio)`. Empty when nothing visible holds the disk.
#[must_use]
pub fn disk_holders(disk: &Path) -> Vec<String> {
    let mut holders = loop_holders(disk);
    holders.extend(process_holders(disk));
    holders
}

fn loop_holders(disk: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut holders: Vec<String> = entries
        .flatten()
        .filter(|entry| {
            let backing = std::fs::read_to_string(entry.path().join("loop/backing_file")).unwrap_or_default();
            Path::new(backing.trim_end()) == disk
        })
        .map(|entry| {
            let device = format!("/dev/{}", entry.file_name().to_string_lossy());
            let mounted_on: Vec<&str> = mounts
                .lines()
                .filter_map(|line| {
                    let mut fields = line.split(' ');
                    (fields.next() == Some(device.as_str())).then(|| fields.next()).flatten()
                })
                .collect();
            if mounted_on.is_empty() {
                format!("loop device {device}")
            } else {
                format!("loop device {device} (mounted on {})", mounted_on.join(", "))
            }
        })
        .collect();
    holders.sort();
    holders
}

fn process_holders(disk: &Path) -> Vec<String> {
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own_pid = std::process::id().to_string();
    processes
        .flatten()
        .filter_map(|process| {
            let pid = process.file_name().to_string_lossy().into_owned();
            if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == own_pid {
                return None;
            }
            let fds = std::fs::read_dir(process.path().join("fd")).ok()?;
            let holds = fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == disk));
            holds.then(|| {
                let name = std::fs::read_to_string(process.path().join("comm")).unwrap_or_default();
                format!("process {pid} ({})", name.trim_end())
            })
        })
        .collect()
}
