//! Issue 29 item 4: a virtual machine on the emulated SSD (a module of `emulate.rs`, whose
//! emulator, scratch folder and report comparison it uses). A Linux guest (Debian's kernel, an
//! initramfs built here from busybox-static and the kernel's own NVMe and ext4 modules) boots in
//! `qemu-system-x86_64` (TCG) with the `nandlab emulate` NBD export as its NVMe disk, makes an ext2
//! file system, writes, syncs, trims and powers off. The emulator's report must show the guest's
//! writes, discards and flushes, and a replay of the recorded session must give identical counts.
//! Outside CI a machine without QEMU or a kernel prints `SKIPPED: reason`; in CI (`CI=true`) it
//! fails. QEMU and the daemon are killed by PID when the test fails.

use super::{counts, json, nandlab, which, Emulator, Folder};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the guest may take from QEMU's start to its last marker (a TCG boot took about 25 s here).
const GUEST_DEADLINE: Duration = Duration::from_secs(240);
/// What the guest prints when every step succeeded, and before a failed step's command.
const DONE_MARKER: &str = "NANDLAB-GUEST-DONE";
const FAIL_MARKER: &str = "NANDLAB-GUEST-FAIL";
/// Modules the guest loads (with their dependencies, from `modules.dep`), as Debian builds NVMe
/// and ext4 as modules; `crc32c_generic` is ext4's soft dependency for checksums.
const GUEST_MODULES: [&str; 3] = ["crc32c_generic", "nvme", "ext4"];

/// The guest's `/init`: every step echoes a marker, and a failed step says which and powers off.
const GUEST_INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
step() { echo "NANDLAB-GUEST-STEP $*"; "$@" || { echo "NANDLAB-GUEST-FAIL $*"; poweroff -f; }; }
for module in $(cat /modules/order); do step insmod /modules/$module; done
tries=0
while [ ! -b /dev/nvme0n1 ] && [ $tries -lt 300 ]; do sleep 0.1; tries=$((tries + 1)); done
step test -b /dev/nvme0n1
step mke2fs -b 4096 /dev/nvme0n1
step mount -t ext4 /dev/nvme0n1 /mnt
step dd if=/dev/urandom of=/mnt/kept bs=1M count=4
step dd if=/dev/urandom of=/mnt/scratch bs=1M count=4
step sync
step rm /mnt/scratch
step sync
step fstrim -v /mnt
step umount /mnt
echo NANDLAB-GUEST-DONE
poweroff -f
"#;

/// A child process killed by its PID when dropped (a failing test leaves nothing running).
struct Running(Option<Child>);

impl Running {
    fn id(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    /// Waits up to `limit` for the process to exit on its own.
    fn wait_for_exit(&mut self, limit: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < limit {
            if self.0.as_mut().unwrap().try_wait().expect("wait").is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A Debian kernel this test can read, and its modules directory.
struct Kernel {
    image: PathBuf,
    modules: PathBuf,
}

/// The newest readable `/boot/vmlinuz-VERSION` whose `/lib/modules/VERSION/modules.dep` exists.
fn debian_kernel() -> Option<Kernel> {
    let mut kernels: Vec<Kernel> = std::fs::read_dir("/boot")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let version = name.strip_prefix("vmlinuz-")?;
            let modules = Path::new("/lib/modules").join(version);
            let readable = std::fs::File::open(entry.path()).is_ok();
            (readable && modules.join("modules.dep").is_file()).then(|| Kernel { image: entry.path(), modules })
        })
        .collect();
    kernels.sort_by(|a, b| a.image.cmp(&b.image));
    kernels.pop()
}

/// Why the guest cannot boot here, if it cannot.
fn unavailable() -> Option<String> {
    if !which("qemu-system-x86_64") {
        return Some("qemu-system-x86_64 is not installed (qemu-system-x86, see .ci/apt-packages)".into());
    }
    if debian_kernel().is_none() {
        return Some("no readable /boot/vmlinuz-* with modules (linux-image-amd64, see .ci/apt-packages)".into());
    }
    if !Path::new(BUSYBOX).is_file() {
        return Some(format!("{BUSYBOX} is missing (busybox-static, see .ci/apt-packages)"));
    }
    None
}

/// busybox-static's binary: statically linked, so the initramfs needs no libraries.
const BUSYBOX: &str = "/bin/busybox";

/// `modules` with every dependency before the module that needs it, as paths relative to the
/// modules directory (from `modules.dep`: `path: dependency dependency ...`, dependencies of
/// dependencies listed too).
fn module_load_order(modules_dir: &Path, modules: &[&str]) -> Vec<String> {
    let dep = std::fs::read_to_string(modules_dir.join("modules.dep")).expect("read modules.dep");
    let mut order: Vec<String> = Vec::new();
    for module in modules {
        let file = format!("/{module}.ko");
        let line = dep
            .lines()
            .find(|line| line.split(':').next().is_some_and(|path| path.ends_with(&file)))
            .unwrap_or_else(|| panic!("{module} is not in {}", modules_dir.join("modules.dep").display()));
        let (path, dependencies) = line.split_once(':').unwrap();
        // modules.dep lists the nearest dependency first: load from the far end.
        for needed in dependencies.split_whitespace().rev().chain([path]) {
            if !order.iter().any(|known| known == needed) {
                order.push(needed.to_owned());
            }
        }
    }
    order
}

/// An initramfs in the kernel's `newc` cpio format (uncompressed): directories, files, trailer.
#[derive(Default)]
struct Initramfs {
    bytes: Vec<u8>,
    inode: u32,
}

impl Initramfs {
    const DIRECTORY: u32 = 0o040_755;
    const EXECUTABLE: u32 = 0o100_755;
    const FILE: u32 = 0o100_644;

    /// One newc record: the 110-byte header, the name, the data, each padded to 4 bytes.
    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) {
        self.inode += 1;
        let name_size = name.len() + 1;
        let fields = [self.inode, mode, 0, 0, 1, 0, u32::try_from(data.len()).unwrap(), 0, 0, 0, 0];
        let mut header = String::from("070701");
        for field in fields {
            header.push_str(&format!("{field:08x}"));
        }
        header.push_str(&format!("{:08x}{:08x}", u32::try_from(name_size).unwrap(), 0));
        self.bytes.extend_from_slice(header.as_bytes());
        self.bytes.extend_from_slice(name.as_bytes());
        self.bytes.push(0);
        self.pad();
        self.bytes.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        self.bytes.resize(self.bytes.len().next_multiple_of(4), 0);
    }

    fn finish(mut self) -> Vec<u8> {
        self.inode = 0;
        self.entry("TRAILER!!!", 0, &[]);
        self.bytes
    }
}

/// The guest's initramfs: busybox, `/init`, and the modules with `/modules/order` to load them by.
fn build_initramfs(kernel: &Kernel) -> Vec<u8> {
    let mut cpio = Initramfs::default();
    for directory in ["bin", "dev", "proc", "sys", "mnt", "modules"] {
        cpio.entry(directory, Initramfs::DIRECTORY, &[]);
    }
    cpio.entry("bin/busybox", Initramfs::EXECUTABLE, &std::fs::read(BUSYBOX).expect("read busybox"));
    cpio.entry("init", Initramfs::EXECUTABLE, GUEST_INIT.as_bytes());
    let mut order = String::new();
    for path in module_load_order(&kernel.modules, &GUEST_MODULES) {
        let file_name = Path::new(&path).file_name().unwrap().to_str().unwrap().to_owned();
        assert!(file_name.ends_with(".ko"), "{path}: compressed modules need an unpacker in the guest");
        let module = std::fs::read(kernel.modules.join(&path)).unwrap_or_else(|err| panic!("{path}: {err}"));
        cpio.entry(&format!("modules/{file_name}"), Initramfs::FILE, &module);
        order.push_str(&file_name);
        order.push('\n');
    }
    cpio.entry("modules/order", Initramfs::FILE, order.as_bytes());
    cpio.finish()
}

/// The guest's serial console up to its last marker, or a panic with what it printed so far.
fn boot_guest(kernel: &Kernel, initramfs: &Path, socket: &Path) -> (String, Duration) {
    let drive = format!(
        "file=nbd+unix:///small?socket={},if=none,id=d0,format=raw,discard=unmap,cache=writeback",
        socket.display()
    );
    let started = Instant::now();
    let mut qemu = Running(Some(
        Command::new("qemu-system-x86_64")
            .args(["-accel", "tcg", "-m", "256", "-smp", "1", "-nographic", "-no-reboot"])
            .arg("-kernel")
            .arg(&kernel.image)
            .arg("-initrd")
            .arg(initramfs)
            .args(["-append", "console=ttyS0 quiet panic=-1 rdinit=/init"])
            .args(["-drive", &drive, "-device", "nvme,drive=d0,serial=nandlab"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn qemu-system-x86_64"),
    ));
    let console = qemu.0.as_mut().unwrap().stdout.take().unwrap();
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(console).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut output = String::new();
    loop {
        let left = GUEST_DEADLINE.saturating_sub(started.elapsed());
        match received.recv_timeout(left) {
            Ok(line) => {
                output.push_str(&line);
                output.push('\n');
                if line.starts_with(FAIL_MARKER) {
                    panic!("a guest step failed:\n{output}");
                }
                if line.starts_with(DONE_MARKER) {
                    break;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("the guest (qemu PID {}) did not finish in {GUEST_DEADLINE:?}:\n{output}", qemu.id())
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!("qemu exited before the guest finished:\n{output}"),
        }
    }
    assert!(qemu.wait_for_exit(Duration::from_secs(30)), "the guest did not power off:\n{output}");
    (output, started.elapsed())
}

#[test]
fn a_linux_guest_boots_on_the_nbd_export_and_its_session_replays_to_identical_counts() {
    if let Some(reason) = unavailable() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI must boot the guest: {reason}");
        eprintln!("SKIPPED: {reason}");
        return;
    }
    let kernel = debian_kernel().unwrap();
    let folder = Folder::new("vm");
    let initramfs = folder.path("initramfs.cpio");
    std::fs::write(&initramfs, build_initramfs(&kernel)).unwrap();
    let (socket, record, report) = (folder.path("nbd.sock"), folder.path("rec.nlt"), folder.path("report.json"));
    let address = format!("unix:{}", socket.display());
    let emulator = Emulator::start(
        &[
            "--preset",
            "small",
            "--nbd",
            &address,
            "--pace",
            "none",
            "--record",
            record.to_str().unwrap(),
            "--json",
            report.to_str().unwrap(),
        ],
        None,
    );
    let (console, took) = boot_guest(&kernel, &initramfs, &socket);
    eprintln!("guest booted, wrote, trimmed and powered off in {:.1} s", took.as_secs_f64());
    assert!(console.contains("NANDLAB-GUEST-STEP fstrim"), "{console}");
    emulator.stop();

    let emulated = json(&report);
    let host = &emulated["host"];
    eprintln!(
        "emulator host counts: {} writes ({} sectors), {} discards ({} sectors), {} flushes, {} reads",
        host["writes"],
        host["write_sectors"],
        host["discards"],
        host["discard_sectors"],
        host["flushes"],
        host["reads"]
    );
    let count = |key: &str| host[key].as_u64().unwrap_or_else(|| panic!("host.{key} missing: {host}"));
    // Two 4 MiB files: at least 8 MiB of the guest's writes reached the device.
    assert!(count("write_sectors") >= 2 * 4 * 2048, "the guest's writes: {host}");
    assert!(count("discards") > 0 && count("discard_sectors") >= 4 * 2048, "fstrim's discards: {host}");
    assert!(count("flushes") > 0, "sync's flushes: {host}");

    let replayed = folder.path("replayed.json");
    nandlab(&[
        "replay",
        record.to_str().unwrap(),
        "--preset",
        "small",
        "--quiet",
        "--json",
        replayed.to_str().unwrap(),
    ]);
    assert_eq!(counts(&json(&replayed)), counts(&emulated), "the recorded session replays to identical counts");
}
