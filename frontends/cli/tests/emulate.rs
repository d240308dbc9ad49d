//! Issue 16 checks through the `nandlab` binary: ext4 on a loop device over an emulated SSD
//! (`small` preset) with GC, a recorded trace that replays to identical counts and a restart that
//! resumes the device with its files intact; an NBD round trip with qemu-img, nbdcopy and fio; a
//! paced 4 KiB read that takes at least the flash's read time. Root tests print `SKIPPED: reason`
//! where the machine cannot run them, and undo their mounts, loop devices and daemons (killed by
//! PID) even when they fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Issue 29: a Linux guest in QEMU on the NBD export, checked with this file's emulator and counts.
#[path = "emulate/vm.rs"]
mod vm;

/// A running `nandlab emulate`, and what a failing test must undo: a file system mounted on a loop
/// device over its disk. Dropping it unmounts, detaches, and kills the daemon by its PID.
struct Emulator {
    child: Option<Child>,
    mountpoint: Option<PathBuf>,
    loop_device: Option<String>,
    ext4: Option<PathBuf>,
}

impl Emulator {
    /// Starts `nandlab emulate ARGS` and waits for its `emulate: serving` line.
    fn start(args: &[&str], mountpoint: Option<&Path>) -> Emulator {
        let mut child = Command::new(env!("CARGO_BIN_EXE_nandlab"))
            .arg("emulate")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn nandlab emulate");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).expect("ready line");
        let emulator = Emulator {
            child: Some(child),
            mountpoint: mountpoint.map(Path::to_path_buf),
            loop_device: None,
            ext4: None,
        };
        assert!(line.starts_with("emulate: serving"), "emulate did not come up: {line:?}");
        emulator
    }

    /// Attaches a loop device to DIR/disk, optionally makes ext4 on it, and mounts it on `ext4`.
    fn mount_ext4(&mut self, ext4: &Path, mkfs: bool) {
        let disk = self.mountpoint.as_ref().unwrap().join("disk");
        let device = run("losetup", &["--find", "--show", disk.to_str().unwrap()]);
        self.loop_device = Some(device.clone());
        if mkfs {
            // No discard: every LBA ext4 writes stays valid on the (fresh) device, so the writes below need GC.
            run("mkfs.ext4", &["-q", "-F", "-E", "nodiscard", &device]);
        }
        run("mount", &[&device, ext4.to_str().unwrap()]);
        self.ext4 = Some(ext4.to_path_buf());
    }

    fn unmount_ext4(&mut self) {
        if let Some(ext4) = self.ext4.take() {
            let _ = Command::new("umount").arg(&ext4).status();
        }
        if let Some(device) = self.loop_device.take() {
            let _ = Command::new("losetup").args(["-d", &device]).status();
        }
    }

    /// SIGINT, then the daemon's report on stdout once it exits.
    fn stop(mut self) -> String {
        self.unmount_ext4();
        let mut child = self.child.take().unwrap();
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("signal");
        let mut report = String::new();
        child.stdout.take().unwrap().read_to_string(&mut report).expect("report");
        assert!(child.wait().expect("exit").success(), "emulate failed: {report}");
        report
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.unmount_ext4();
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(mountpoint) = &self.mountpoint {
            let _ = nix::mount::umount2(mountpoint, nix::mount::MntFlags::MNT_DETACH);
        }
    }
}

fn which(tool: &str) -> bool {
    let paths = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&paths).chain(["/sbin".into(), "/usr/sbin".into()]).any(|dir| dir.join(tool).is_file())
}

/// Why the root tests cannot run here, if they cannot.
fn root_unavailable(tools: &[&str]) -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("loop devices and mounts need root".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing".into());
    }
    tools.iter().find(|tool| !which(tool)).map(|tool| format!("{tool} is not installed (see .ci/apt-packages)"))
}

fn skipped(reason: Option<String>) -> bool {
    reason.inspect(|reason| eprintln!("SKIPPED: {reason}")).is_some()
}

fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program).args(args).output().unwrap_or_else(|err| panic!("spawn {program}: {err}"));
    assert!(output.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

fn nandlab(args: &[&str]) -> String {
    run(env!("CARGO_BIN_EXE_nandlab"), args)
}

/// Seeded file contents (xorshift), so a failure can be replayed.
fn contents(seed: u64, bytes: usize) -> Vec<u8> {
    let mut state = seed | 1;
    (0..bytes)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

fn write_synced(path: &Path, data: &[u8]) {
    use std::io::Write;
    let mut file = std::fs::File::create(path).expect("create");
    file.write_all(data).expect("write");
    file.sync_all().expect("fsync");
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read json")).expect("json")
}

/// The counts a replay and an emulation must agree on.
fn counts(report: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "host": report["host"],
        "discard": report["discard"],
        "measured": report["measured"],
        "erase_counts": report["erase_counts"],
        "precondition": report["precondition"],
    })
}

struct Folder(PathBuf);

impl Folder {
    fn new(name: &str) -> Folder {
        let path = std::env::temp_dir().join(format!("nandlab-emulate-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(path.join("mnt")).unwrap();
        std::fs::create_dir_all(path.join("ext4")).unwrap();
        Folder(path)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn ext4_on_an_emulated_ssd_makes_gc_work_replays_to_identical_counts_and_survives_a_restart() {
    if skipped(root_unavailable(&["losetup", "mkfs.ext4", "mount", "umount"])) {
        return;
    }
    let folder = Folder::new("ext4");
    let (mnt, data, record, report_json) =
        (folder.arg("mnt"), folder.arg("data"), folder.arg("rec.nlt"), folder.arg("report.json"));
    let base = ["--preset", "small", "--mount", &mnt, "--pace", "none", "--data", &data];
    let mut session = Emulator::start(
        &[&base[..], &["--record", &record, "--json", &report_json]].concat(),
        Some(&folder.path("mnt")),
    );
    let ext4 = folder.path("ext4");
    session.mount_ext4(&ext4, true);
    let kept: Vec<Vec<u8>> = (0..6).map(|index| contents(index + 1, 2 << 20)).collect();
    for round in 0..4u64 {
        for index in 0..8 {
            write_synced(&ext4.join(format!("scratch{index}")), &contents(100 + round * 8 + index, 3 << 20));
        }
        for index in 0..8 {
            std::fs::remove_file(ext4.join(format!("scratch{index}"))).expect("delete");
        }
        run("sync", &[]);
        let (index, data) = (round as usize, &kept[round as usize]);
        write_synced(&ext4.join(format!("kept{index}")), data);
    }
    for (index, data) in kept.iter().enumerate().take(4) {
        assert_eq!(&std::fs::read(ext4.join(format!("kept{index}"))).expect("read back"), data);
    }
    let status = nandlab(&["emulate", "status", &mnt]);
    assert!(status.contains("host writes"), "{status}");
    let summary = session.stop();
    assert!(summary.contains("GC page copies"), "the stop prints replay's report: {summary}");
    for file in ["data", "data.state", "data.state.nlt", "rec.nlt"] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(folder.path(file)).expect("written").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file} holds the user's data or access pattern: mode {mode:o}");
    }
    let emulated = json(&folder.path("report.json"));
    let measured = &emulated["measured"];
    assert!(measured["gc_page_copies"].as_u64().unwrap() > 0, "ext4's rewrites make GC copy pages: {measured}");
    assert!(measured["erases"].as_u64().unwrap() > 0, "{measured}");

    let replayed = folder.path("replayed.json");
    // No --set: the recording's header says the device started fresh, and the replay does too.
    nandlab(&["replay", &record, "--preset", "small", "--quiet", "--json", replayed.to_str().unwrap()]);
    assert_eq!(counts(&json(&replayed)), counts(&emulated), "the recorded trace replays to identical counts");

    let mut resumed = Emulator::start(&base, Some(&folder.path("mnt")));
    resumed.mount_ext4(&ext4, false);
    for (index, data) in kept.iter().enumerate().take(4) {
        assert_eq!(&std::fs::read(ext4.join(format!("kept{index}"))).expect("read after restart"), data);
    }
    let summary = resumed.stop();
    assert!(summary.contains("emulated SSD"), "{summary}");
}

#[test]
fn an_nbd_export_round_trips_with_qemu_img_nbdcopy_and_fio() {
    if skipped(
        ["qemu-img", "nbdcopy", "fio"].iter().find(|tool| !which(tool)).map(|tool| format!("{tool} is not installed")),
    ) {
        return;
    }
    let folder = Folder::new("nbd");
    let socket = folder.path("nbd.sock");
    let address = format!("unix:{}", socket.display());
    let session = Emulator::start(&["--preset", "small", "--nbd", &address, "--pace", "none"], None);
    assert!(which("qemu-io"), "qemu-io comes with qemu-img (qemu-utils)");
    // The export is named after the device (its preset); the default export "" is the same.
    let uri = format!("nbd+unix:///small?socket={}", socket.display());
    let image = folder.path("image.raw");
    let mut bytes = contents(7, 8 << 20);
    bytes.resize(32 << 20, 0);
    std::fs::write(&image, &bytes).unwrap();
    let size = run("qemu-img", &["info", "--output=json", &uri]);
    assert!(size.contains("\"virtual-size\""), "{size}");
    run("nbdcopy", &[image.to_str().unwrap(), &uri]);
    let back = folder.path("back.raw");
    run("nbdcopy", &[&uri, back.to_str().unwrap()]);
    let device_bytes = std::fs::read(&back).unwrap();
    assert_eq!(device_bytes[..8 << 20], bytes[..8 << 20], "what nbdcopy wrote reads back");
    run("qemu-img", &["compare", "-f", "raw", "-F", "raw", back.to_str().unwrap(), &uri]);
    run(
        "fio",
        &[
            "--name=nbd",
            "--ioengine=nbd",
            &format!("--uri={uri}"),
            "--rw=randrw",
            "--bs=4k",
            "--size=16m",
            "--io_size=8m",
            "--verify=crc32c",
            "--do_verify=1",
            "--output-format=terse",
        ],
    );
    // A TRIM over the largest READ/WRITE (32 MiB), as a guest's fstrim sends, is served and the
    // connection goes on.
    let trimmed = run(
        "qemu-io",
        &["-f", "raw", "-c", "discard 0 40M", "-c", "read -P 0 0 1M", "-c", "write -P 0x3c 0 64k", &uri],
    );
    assert!(!trimmed.contains("failed") && !trimmed.contains("error"), "{trimmed}");
    let summary = session.stop();
    assert!(summary.contains("host pages written"), "{summary}");
}

#[test]
fn a_tcp_export_needs_the_users_consent() {
    let output = Command::new(env!("CARGO_BIN_EXE_nandlab"))
        .args(["emulate", "--preset", "small", "--nbd", "127.0.0.1:0", "--pace", "none"])
        .output()
        .expect("run nandlab");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "a TCP export started without consent");
    assert!(stderr.contains("--nbd-allow-local-users"), "{stderr}");
}

/// Median of `samples` paced 4 KiB O_DIRECT reads of DIR/disk, each on an idle device.
fn median_read_ns(disk: &Path, samples: usize) -> u64 {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_DIRECT).open(disk).expect("open disk");
    let mut buffer = AlignedPage::default();
    let mut times: Vec<u64> = (0..samples)
        .map(|index| {
            std::thread::sleep(Duration::from_millis(2));
            let started = Instant::now();
            file.read_exact_at(&mut buffer.0, (index as u64 % 64) * 4096).expect("read");
            u64::try_from(started.elapsed().as_nanos()).unwrap()
        })
        .collect();
    times.sort_unstable();
    times[samples / 2]
}

#[repr(align(4096))]
struct AlignedPage([u8; 4096]);

impl Default for AlignedPage {
    fn default() -> Self {
        AlignedPage([0; 4096])
    }
}

#[test]
fn a_paced_4k_read_at_queue_depth_one_takes_at_least_the_flash_read_time() {
    if skipped(root_unavailable(&[])) {
        return;
    }
    let folder = Folder::new("pace");
    let mnt = folder.arg("mnt");
    let mut medians = Vec::new();
    for pace in ["real", "none"] {
        let session = Emulator::start(
            &["--preset", "small", "--set", "precondition.enabled=false", "--mount", &mnt, "--pace", pace],
            Some(&folder.path("mnt")),
        );
        let disk = folder.path("mnt").join("disk");
        fill_start(&disk, &contents(3, 64 * 4096));
        let median = median_read_ns(&disk, 200);
        let stats: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(folder.path("mnt").join("stats")).unwrap()).unwrap();
        session.stop();
        medians.push((pace, median, stats));
    }
    let (_, paced_ns, stats) = &medians[0];
    let (_, unpaced_ns, _) = &medians[1];
    let config = &stats["report"]["config"];
    let page_bytes = config["device"]["page_size"].as_u64().unwrap();
    let transfer_ns = (page_bytes * 1_000_000_000).div_ceil(config["timing"]["channel_bytes_per_s"].as_u64().unwrap());
    let flash_ns = config["timing"]["read_ns"].as_u64().unwrap() + transfer_ns;
    eprintln!(
        "4 KiB QD1 read: paced median {} us, flash read + transfer {} us, unpaced (FUSE path alone) median {} us",
        paced_ns / 1000,
        flash_ns / 1000,
        unpaced_ns / 1000
    );
    assert!(*paced_ns >= flash_ns, "the application waits for the flash: {paced_ns} ns < {flash_ns} ns");
}

/// Writes `data` at the start of `disk` and makes it durable.
fn fill_start(disk: &Path, data: &[u8]) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new().write(true).open(disk).expect("open disk");
    file.write_all_at(data, 0).expect("write the pages the reads will find");
    file.sync_all().expect("fsync");
}

/// A `small` device on `FOLDER/mnt` at `pace`, its session recorded in `rec.nlt`, its report
/// written to `report.json`.
fn recorded_session(folder: &Folder, pace: &str) -> Emulator {
    let (mnt, record, report_json) = (folder.arg("mnt"), folder.arg("rec.nlt"), folder.arg("report.json"));
    Emulator::start(
        &["--preset", "small", "--mount", &mnt, "--pace", pace, "--record", &record, "--json", &report_json],
        Some(&folder.path("mnt")),
    )
}

#[test]
fn a_paced_session_replays_with_timing_to_identical_counts_and_latencies() {
    if skipped(root_unavailable(&[])) {
        return;
    }
    let folder = Folder::new("timed");
    let record = folder.arg("rec.nlt");
    let session = recorded_session(&folder, "real");
    let disk = folder.path("mnt").join("disk");
    for round in 0..8u64 {
        fill_start(&disk, &contents(round + 40, 1 << 20));
    }
    median_read_ns(&disk, 20);
    session.stop();
    let emulated = json(&folder.path("report.json"));
    let replayed = folder.path("replayed.json");
    nandlab(&[
        "replay",
        &record,
        "--preset",
        "small",
        "--timing",
        "on",
        "--quiet",
        "--json",
        replayed.to_str().unwrap(),
    ]);
    let replayed = json(&replayed);
    assert_eq!(counts(&replayed), counts(&emulated));
    assert_eq!(replayed["timed"]["latency"], emulated["timed"]["latency"], "the same simulated latencies");
    same_document_as_replay(&emulated, &replayed);
    // What the clients waited holds the model's latency and the host path around it.
    let (served, model) = (&emulated["served_latency"]["read"], &emulated["timed"]["latency"]["read"]);
    assert_eq!(served["count"], model["count"], "every read served is a read of the model: {served} {model}");
    assert!(served["p50_us"].as_f64().unwrap() >= model["p50_us"].as_f64().unwrap(), "{served} {model}");
}

/// Issue 29: the emulator's JSON is `replay`'s document (`schema_version`, a `waf_series`, every
/// field but the replay's own speed) with what its clients waited (`served_latency`), and its flush
/// counts agree: the latency table's flushes are the flush commands and the writes' PREFLUSH/FUA
/// flushes together.
fn same_document_as_replay(emulated: &serde_json::Value, replayed: &serde_json::Value) {
    let keys = |document: &serde_json::Value| {
        let mut keys: Vec<String> = document.as_object().unwrap().keys().cloned().collect();
        keys.retain(|key| key != "replay_speed" && key != "served_latency");
        keys
    };
    assert!(emulated["served_latency"]["all"]["count"].as_u64().is_some(), "the served latencies");
    assert_eq!(keys(emulated), keys(replayed), "the emulator's document has replay's fields");
    assert_eq!(emulated["schema_version"], replayed["schema_version"]);
    assert!(!emulated["waf_series"].as_array().unwrap().is_empty(), "a WAF series over the session");
    let host = &emulated["host"];
    let flushes = host["flushes"].as_u64().unwrap() + host["flushes_in_writes"].as_u64().unwrap();
    assert!(flushes > 0, "the session flushed: {host}");
    assert_eq!(emulated["timed"]["latency"]["flush"]["count"].as_u64(), Some(flushes), "{host}");
}

/// Is `path` a mount point now (`/proc/self/mountinfo`, field 5)?
fn mounted(path: &Path) -> bool {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let path = path.display().to_string();
    mountinfo.lines().any(|line| line.split(' ').nth(4) == Some(path.as_str()))
}

/// Issue 28: a SIGKILLed session left its dead FUSE mount and a 0644 temporary history file; the
/// restart, refused because the state is not clean, kept the mount.
#[test]
fn a_killed_session_leaves_no_temporary_file_and_its_refused_restart_no_mount() {
    if skipped(root_unavailable(&[])) {
        return;
    }
    let folder = Folder::new("killed");
    let (mnt, data) = (folder.arg("mnt"), folder.arg("data"));
    let args = ["--preset", "small", "--mount", &mnt, "--pace", "none", "--data", &data];
    let mut session = Emulator::start(&args, Some(&folder.path("mnt")));
    let mut child = session.child.take().unwrap();
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    assert!(mounted(&folder.path("mnt")), "the killed session's mount is there to be cleared");
    for entry in std::fs::read_dir(&folder.0).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.contains("tmp"), "temporary file {name} left behind");
        if name != "mnt" && name != "ext4" {
            let metadata = std::fs::metadata(folder.path(&name)).unwrap();
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(metadata.permissions().mode() & 0o777, 0o600, "{name}");
        }
    }
    let restart = Command::new(env!("CARGO_BIN_EXE_nandlab")).arg("emulate").args(args).output().expect("restart");
    let stderr = String::from_utf8_lossy(&restart.stderr);
    assert_eq!(restart.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("did not stop cleanly"), "{stderr}");
    assert!(!mounted(&folder.path("mnt")), "the refused restart left the mount behind: {stderr}");
}

/// Issue 29: any failed start (a mistyped `--mount`, a busy NBD port) marked the state unclean and
/// the next correct start refused it, the device's wear and counts gone. Now the first is refused
/// before the device opens, the second gives the state back; the correct start resumes the device.
#[test]
fn failed_starts_leave_the_saved_device_to_the_next_start() {
    if skipped(root_unavailable(&[])) {
        return;
    }
    let folder = Folder::new("failed-start");
    let (mnt, data) = (folder.arg("mnt"), folder.arg("data"));
    let (first_json, resumed_json) = (folder.arg("first.json"), folder.arg("resumed.json"));
    let base = ["--preset", "small", "--pace", "none", "--data", &data];
    let session =
        Emulator::start(&[&base[..], &["--mount", &mnt, "--json", &first_json]].concat(), Some(&folder.path("mnt")));
    let disk = folder.path("mnt").join("disk");
    for round in 0..4u64 {
        fill_start(&disk, &contents(round + 60, 4 << 20));
    }
    session.stop();
    let saved = std::fs::read(folder.path("data.state")).expect("saved state");

    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("a port to hold");
    let port = format!("127.0.0.1:{}", busy.local_addr().unwrap().port());
    let failures = [vec!["--mount", "/nonexistent/nandlab-mnt"], vec!["--nbd", &port, "--nbd-allow-local-users"]];
    for failure in failures {
        let output =
            Command::new(env!("CARGO_BIN_EXE_nandlab")).arg("emulate").args(base).args(&failure).output().expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{failure:?} started: {stderr}");
        assert_eq!(std::fs::read(folder.path("data.state")).unwrap(), saved, "{failure:?} touched the state: {stderr}");
    }
    drop(busy);

    let resumed =
        Emulator::start(&[&base[..], &["--mount", &mnt, "--json", &resumed_json]].concat(), Some(&folder.path("mnt")));
    resumed.stop();
    assert_eq!(counts(&json(&folder.path("resumed.json"))), counts(&json(&folder.path("first.json"))));
}

/// Issue 26: `nandlab emulate mark DIR` starts a new measured phase, so what came before it (here
/// 8 MiB standing in for `mkfs`) is reported apart from what follows; together they are the
/// session, as a replay of its recording (which has no mark) counts it.
#[test]
fn a_mark_reports_the_phase_before_it_apart_from_the_phase_after() {
    if skipped(root_unavailable(&[])) {
        return;
    }
    let folder = Folder::new("mark");
    let (mnt, record) = (folder.arg("mnt"), folder.arg("rec.nlt"));
    let session = recorded_session(&folder, "none");
    let disk = folder.path("mnt").join("disk");
    fill_start(&disk, &contents(70, 8 << 20));
    let marked = nandlab(&["emulate", "mark", &mnt]);
    assert!(marked.contains("mark 1 after") && marked.contains("host pages written"), "{marked}");
    fill_start(&disk, &contents(71, 4 << 20));
    let status = nandlab(&["emulate", "status", &mnt, "--json"]);
    assert!(status.contains("before_marks"), "{status}");
    let summary = session.stop();
    assert!(summary.contains("before mark 1") && summary.contains("counts since mark 1"), "{summary}");

    let emulated = json(&folder.path("report.json"));
    let before = &emulated["before_marks"][0]["measured"];
    let after = &emulated["measured"];
    let pages = |phase: &serde_json::Value, key: &str| phase[key].as_u64().unwrap();
    // The 8 MiB (2,048 pages) before the mark, the 4 MiB after it (the kernel may write a few more).
    assert!((2048..2048 + 64).contains(&pages(before, "host_pages_written")), "{before}");
    assert!((1024..1024 + 64).contains(&pages(after, "host_pages_written")), "{after}");
    let replayed = folder.path("replayed.json");
    nandlab(&["replay", &record, "--preset", "small", "--quiet", "--json", replayed.to_str().unwrap()]);
    let whole = &json(&replayed)["measured"];
    for key in ["host_pages_written", "flash_pages_programmed", "gc_page_copies", "erases"] {
        assert_eq!(pages(before, key) + pages(after, key), pages(whole, key), "{key}: the phases make the session");
    }

    let stderr = Command::new(env!("CARGO_BIN_EXE_nandlab")).args(["emulate", "mark", &mnt]).output().unwrap();
    assert!(!stderr.status.success(), "a mark with no daemon fails");
}
