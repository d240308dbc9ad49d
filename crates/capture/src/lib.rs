//! nandlab-capture: block traces of a real Linux file system. [`capture`]
//! makes a sparse image (on tmpfs by default), attaches a loop device, runs
//! mkfs, mounts, records the device's `block_rq_issue` events through a
//! private tracefs instance, runs a workload in the mounted file system,
//! unmounts (so write-back and the final journal commit are in the trace),
//! cleans up and writes a native nandlab trace whose header records how it
//! was made and where the ext4 journal lies.
//!
//! [`fsload`] holds the workloads shipped for it: the UAV scenarios of
//! Delay-D, a Postmark driver and Filebench-like personalities.
//!
//! How it works and its limits: docs/capture.md.

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod error;
pub mod fsload;
mod guards;
mod journal;
pub(crate) mod system;
mod tracing;

pub use crate::error::CaptureError;

use crate::guards::{LoopDevice, Mount, WorkDir};
use crate::system::{require_tool, run_tool};
use nandlab_trace::{CaptureInfo, NativeReader, TraceHeader};
use std::io::BufReader;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Environment variable holding the mount point for the workload command.
pub const MOUNT_ENV: &str = "NANDLAB_MNT";
const POLL: Duration = Duration::from_millis(50);
const STATUS_EVERY: Duration = Duration::from_secs(5);
const CHILD_GRACE: Duration = Duration::from_secs(5);

#[derive(Clone, Debug)]
pub struct CaptureConfig {
    /// File-system type: `mkfs.<fs>` must exist (ext4 gets its journal located).
    pub file_system: String,
    pub size_bytes: u64,
    /// `mount -o` options, e.g. `discard`; empty for the defaults.
    pub mount_options: String,
    /// Extra mkfs arguments, after nandlab's defaults and before the device
    /// (see [`mkfs_options`]).
    pub mkfs_options: Vec<String>,
    /// Where the sparse image lives; tmpfs keeps capture fast.
    pub image_dir: PathBuf,
    /// The native trace to write.
    pub output: PathBuf,
    /// tracefs ring buffer per CPU.
    pub buffer_kib_per_cpu: u32,
}

/// A workload function, given the mount point.
pub type InProcessWorkload = Box<dyn FnOnce(&Path) -> std::io::Result<()> + Send>;

/// What runs in the mounted file system (cwd and `NANDLAB_MNT` = mount point).
pub enum Workload {
    /// An external command, e.g. `nandlab fsload uav-single`.
    Command(Vec<String>),
    /// A function run on a thread named `nandlab-fsload` (its name is the
    /// `comm` of the requests it issues).
    InProcess(InProcessWorkload),
}

impl Workload {
    fn describe(&self) -> Vec<String> {
        match self {
            Workload::Command(argv) => argv.clone(),
            Workload::InProcess(_) => vec!["(in-process workload)".into()],
        }
    }
}

#[derive(Clone, Debug)]
pub struct CaptureReport {
    pub records: u64,
    pub events_lost: u64,
    /// Exit code of the workload (`None`: killed by a signal). Nonzero means
    /// it failed; the trace of what it did was still written.
    pub exit_code: Option<i32>,
    pub workload_seconds: f64,
    pub header: TraceHeader,
}

/// SIGINT, SIGTERM and SIGHUP set a flag instead of killing the process, so
/// every guard gets to undo its step.
struct Interrupts {
    flag: Arc<AtomicBool>,
    ids: Vec<signal_hook::SigId>,
}

impl Interrupts {
    fn catch() -> Result<Interrupts, CaptureError> {
        let flag = Arc::new(AtomicBool::new(false));
        let mut ids = Vec::new();
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
            let id = signal_hook::flag::register(signal, Arc::clone(&flag))
                .map_err(|error| CaptureError::io("installing a signal handler for", "capture", error))?;
            ids.push(id);
        }
        Ok(Interrupts { flag, ids })
    }

    fn check(&self) -> Result<(), CaptureError> {
        if self.flag.load(Ordering::Relaxed) {
            return Err(CaptureError::Interrupted);
        }
        Ok(())
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// The tools a capture needs, checked before anything is changed.
struct Tools {
    losetup: PathBuf,
    mkfs: PathBuf,
    mount: PathBuf,
    umount: PathBuf,
}

fn preflight(config: &CaptureConfig) -> Result<Tools, CaptureError> {
    if !nix::unistd::geteuid().is_root() {
        return Err(CaptureError::NotRoot);
    }
    if config.size_bytes < 16 << 20 {
        return Err(CaptureError::Argument(format!(
            "image size {} B is below the 16 MiB a file system with a journal needs",
            config.size_bytes
        )));
    }
    let mkfs_package = match config.file_system.as_str() {
        "ext2" | "ext3" | "ext4" => Some("e2fsprogs"),
        "xfs" => Some("xfsprogs"),
        "btrfs" => Some("btrfs-progs"),
        "f2fs" => Some("f2fs-tools"),
        _ => None,
    };
    let tools = Tools {
        losetup: require_tool("losetup", Some("mount"))?,
        mkfs: require_tool(&format!("mkfs.{}", config.file_system), mkfs_package)?,
        mount: require_tool("mount", Some("mount"))?,
        umount: require_tool("umount", Some("mount"))?,
    };
    if !Path::new("/dev/loop-control").exists() {
        return Err(CaptureError::Kernel {
            what: "attach loop devices",
            detail: "/dev/loop-control is missing (load the `loop` module: modprobe loop)".into(),
        });
    }
    Ok(tools)
}

/// The ext2/3/4 block size used unless the mkfs options give one: mke2fs
/// picks 1 KiB blocks for images below 512 MiB (its "small" profile), a
/// layout no flash device under test would see.
pub const EXT_BLOCK_BYTES_DEFAULT: u32 = 4096;

/// The options mkfs gets: nandlab's defaults for the file system, then
/// `config.mkfs_options`. Recorded in the trace header.
pub fn mkfs_options(config: &CaptureConfig) -> Vec<String> {
    let ext = matches!(config.file_system.as_str(), "ext2" | "ext3" | "ext4");
    let defaults: &[&str] = match config.file_system.as_str() {
        // Initialise inode tables and journal now: ext4lazyinit would
        // otherwise write them in the background, inside the trace.
        "ext2" | "ext3" | "ext4" => &["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
        "xfs" | "btrfs" | "f2fs" => &["-f", "-q"],
        _ => &[],
    };
    let block_size_given = config.mkfs_options.iter().any(|option| option.starts_with("-b"));
    let block_size = (ext && !block_size_given)
        .then(|| ["-b".to_owned(), EXT_BLOCK_BYTES_DEFAULT.to_string()])
        .into_iter()
        .flatten();
    defaults.iter().map(|arg| (*arg).to_owned()).chain(block_size).chain(config.mkfs_options.iter().cloned()).collect()
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|release| release.trim().to_owned()).unwrap_or_default()
}

/// Runs the whole capture. `status` receives progress lines.
pub fn capture(
    config: &CaptureConfig,
    workload: Workload,
    status: &mut dyn FnMut(&str),
) -> Result<CaptureReport, CaptureError> {
    let tools = preflight(config)?;
    let interrupts = Interrupts::catch()?;
    let tracefs = tracing::tracefs_root()?;
    let started_unix_s =
        SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|elapsed| elapsed.as_secs()).unwrap_or(0);

    // Unique per capture, so concurrent captures (tests) never collide.
    static CAPTURES: AtomicU32 = AtomicU32::new(0);
    let tag = format!("{}-{}", std::process::id(), CAPTURES.fetch_add(1, Ordering::Relaxed));
    let work = WorkDir::create(&config.image_dir, &tag)?;
    let image = work.path.join("image");
    let image_file =
        std::fs::File::create(&image).map_err(|error| CaptureError::io("creating the image", &image, error))?;
    image_file.set_len(config.size_bytes).map_err(|error| CaptureError::io("sizing the image", &image, error))?;
    drop(image_file);
    let loop_device = LoopDevice::attach(tools.losetup.clone(), &image)?;
    status(&format!(
        "{} ({} MiB sparse image in {})",
        loop_device.device,
        config.size_bytes >> 20,
        config.image_dir.display()
    ));
    interrupts.check()?;

    let mkfs_options = mkfs_options(config);
    let mkfs_args: Vec<&str> = mkfs_options.iter().map(String::as_str).chain([loop_device.device.as_str()]).collect();
    run_tool("making the file system", &tools.mkfs, &mkfs_args)?;
    let mkfs_command: Vec<String> = std::iter::once(tools.mkfs.display().to_string())
        .chain(mkfs_args.iter().map(|arg| (*arg).to_owned()))
        .collect();
    let journal = journal::ext_journal(&config.file_system, &loop_device.device)?;
    let mut mount = Mount::create(
        &tools.mount,
        tools.umount.clone(),
        &config.file_system,
        &config.mount_options,
        &loop_device.device,
        &work.path.join("mnt"),
    )?;
    interrupts.check()?;

    let instance = tracing::TraceInstance::create(
        &tracefs,
        &tag,
        tracing::kernel_dev_t(Path::new(&loop_device.device))?,
        config.buffer_kib_per_cpu,
    )?;
    let spool = work.path.join("records.nlt");
    let recorder = instance.start_recorder(&spool)?;
    instance.set_tracing(true)?;
    status(&format!(
        "recording block_rq_issue of {} into tracefs instance; running {}",
        loop_device.device,
        workload.describe().join(" ")
    ));

    let workload_started = Instant::now();
    let describe = workload.describe();
    let exit_code = run_workload(workload, &mount.point, &interrupts, &mut |seconds| {
        status(&format!("{seconds:.0} s, {} requests so far", recorder.records_so_far()));
    })?;
    let workload_seconds = workload_started.elapsed().as_secs_f64();
    mount.unmount()?;
    instance.set_tracing(false)?;
    let records = recorder.finish()?;
    let events_lost = instance.events_lost();
    drop(instance);
    drop(mount);
    drop(loop_device);

    let (journal, block_size_bytes) =
        journal.map_or((Vec::new(), None), |(ranges, block_size)| (ranges, Some(block_size)));
    let header = TraceHeader {
        device_size_bytes: Some(config.size_bytes),
        source_format: Some("tracefs".into()),
        journal,
        capture: Some(CaptureInfo {
            file_system: config.file_system.clone(),
            mkfs_command,
            mkfs_options,
            mount_options: config.mount_options.clone(),
            block_size_bytes,
            command: describe,
            command_exit_code: exit_code,
            kernel: kernel_release(),
            events: vec![tracing::EVENT.replace('/', ":")],
            events_lost,
            started_unix_s,
            tool_version: env!("CARGO_PKG_VERSION").into(),
        }),
        ..TraceHeader::default()
    };
    write_final_trace(&spool, &config.output, &header, records)?;
    drop(work);
    Ok(CaptureReport { records, events_lost, exit_code, workload_seconds, header })
}

/// Copies the spooled records under the final header (known only now: the
/// exit code and lost-event count come at the end).
fn write_final_trace(spool: &Path, output: &Path, header: &TraceHeader, expected: u64) -> Result<(), CaptureError> {
    let file = std::fs::File::open(spool).map_err(|error| CaptureError::io("reopening", spool, error))?;
    let reader = NativeReader::new(BufReader::with_capacity(1 << 20, file), spool.to_path_buf())?;
    let mut writer = nandlab_trace::create(output, nandlab_trace::Format::Native, header)?;
    for record in reader {
        writer.write(&record?)?;
    }
    let written = writer.finish()?.written;
    debug_assert_eq!(written, expected);
    Ok(())
}

fn run_workload(
    workload: Workload,
    mount_point: &Path,
    interrupts: &Interrupts,
    tick: &mut dyn FnMut(f64),
) -> Result<Option<i32>, CaptureError> {
    match workload {
        Workload::Command(argv) => run_command(&argv, mount_point, interrupts, tick),
        Workload::InProcess(function) => {
            let point = mount_point.to_path_buf();
            let thread = std::thread::Builder::new()
                .name("nandlab-fsload".into())
                .spawn(move || function(&point))
                .map_err(|error| CaptureError::io("starting the workload thread in", mount_point, error))?;
            wait_for(|| thread.is_finished(), tick);
            match thread.join() {
                Ok(Ok(())) => Ok(Some(0)),
                Ok(Err(error)) => Err(CaptureError::io("running the in-process workload in", mount_point, error)),
                Err(_) => Ok(None),
            }
        }
    }
}

fn wait_for(mut done: impl FnMut() -> bool, tick: &mut dyn FnMut(f64)) {
    let started = Instant::now();
    let mut next_status = STATUS_EVERY;
    while !done() {
        std::thread::sleep(POLL);
        if started.elapsed() >= next_status {
            tick(started.elapsed().as_secs_f64());
            next_status += STATUS_EVERY;
        }
    }
}

fn run_command(
    argv: &[String],
    mount_point: &Path,
    interrupts: &Interrupts,
    tick: &mut dyn FnMut(f64),
) -> Result<Option<i32>, CaptureError> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| CaptureError::Argument("no workload command given (put it after `--`)".into()))?;
    // Its own process group, so an interrupt or a straggler can be ended
    // as a whole: any process left in the file system keeps it mounted.
    let mut child = Command::new(program)
        .args(args)
        .current_dir(mount_point)
        .env(MOUNT_ENV, mount_point)
        .process_group(0)
        .spawn()
        .map_err(|error| CaptureError::Tool {
            step: "starting the workload",
            command: argv.join(" "),
            status: "could not start".into(),
            stderr: error.to_string(),
        })?;
    let started = Instant::now();
    let mut next_status = STATUS_EVERY;
    loop {
        if let Some(exit) =
            child.try_wait().map_err(|error| CaptureError::io("waiting for the workload in", mount_point, error))?
        {
            stop_group(&mut child);
            return Ok(exit.code());
        }
        if interrupts.check().is_err() {
            stop_group(&mut child);
            return Err(CaptureError::Interrupted);
        }
        std::thread::sleep(POLL);
        if started.elapsed() >= next_status {
            tick(started.elapsed().as_secs_f64());
            next_status += STATUS_EVERY;
        }
    }
}

/// Ends the workload's process group: SIGTERM, a grace period, SIGKILL.
/// The mount cannot go while any of them still holds files in it.
fn stop_group(child: &mut Child) {
    let group = nix::unistd::Pid::from_raw(-i32::try_from(child.id()).unwrap_or(i32::MAX));
    let alive = |signal| nix::sys::signal::kill(group, signal).is_ok();
    if !alive(nix::sys::signal::Signal::SIGTERM) {
        let _ = child.try_wait();
        return;
    }
    let deadline = Instant::now() + CHILD_GRACE;
    while Instant::now() < deadline {
        let _ = child.try_wait();
        if !alive_group(group) {
            return;
        }
        std::thread::sleep(POLL);
    }
    let _ = alive(nix::sys::signal::Signal::SIGKILL);
    let _ = child.wait();
}

/// Signal 0 probes whether any process of the group is left.
fn alive_group(group: nix::unistd::Pid) -> bool {
    nix::sys::signal::kill(group, None).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(file_system: &str, extra: &[&str]) -> CaptureConfig {
        CaptureConfig {
            file_system: file_system.to_owned(),
            size_bytes: 1 << 30,
            mount_options: String::new(),
            mkfs_options: extra.iter().map(|option| (*option).to_owned()).collect(),
            image_dir: PathBuf::from("/dev/shm"),
            output: PathBuf::from("out.nlt"),
            buffer_kib_per_cpu: 1024,
        }
    }

    #[test]
    fn ext4_gets_4_kib_blocks_unless_the_options_choose() {
        let options = mkfs_options(&config("ext4", &[]));
        assert!(options.windows(2).any(|pair| pair == ["-b", "4096"]), "{options:?}");
        let chosen = mkfs_options(&config("ext4", &["-b", "1024"]));
        assert_eq!(chosen.iter().filter(|option| option.starts_with("-b")).count(), 1, "{chosen:?}");
        assert!(chosen.windows(2).any(|pair| pair == ["-b", "1024"]), "{chosen:?}");
        assert!(!mkfs_options(&config("xfs", &[])).iter().any(|option| option == "-b"));
    }
}
