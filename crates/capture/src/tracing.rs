//! Recording `block:block_rq_issue` events of one device through tracefs,
//! in a private instance (`instances/nandlab-PID-N`) so other tracing users
//! are undisturbed. A thread drains the instance's `trace_pipe` while the
//! workload runs (so the ring buffer cannot overflow however long the run),
//! parses the event text with nandlab-trace's tracefs reader and streams
//! the records into a native trace file.

use crate::error::CaptureError;
use nandlab_trace::{Format, NativeWriter, ReadOptions, TraceHeader, TraceWrite};
use std::fs::OpenOptions;
use std::io::{BufReader, BufWriter, ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub(crate) const EVENT: &str = "block/block_rq_issue";
const TRACEFS_MOUNT_POINT: &str = "/sys/kernel/tracing";
const PIPE_POLL: Duration = Duration::from_millis(20);

/// Where tracefs is mounted; mounts it at /sys/kernel/tracing if it is not.
pub(crate) fn tracefs_root() -> Result<PathBuf, CaptureError> {
    let mounts =
        std::fs::read_to_string("/proc/mounts").map_err(|error| CaptureError::io("reading", "/proc/mounts", error))?;
    if let Some(point) = mounts.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (_, point, kind) = (fields.next(), fields.next()?, fields.next()?);
        (kind == "tracefs").then(|| PathBuf::from(point))
    }) {
        return Ok(point);
    }
    let supported = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !supported.lines().any(|line| line.split_whitespace().last() == Some("tracefs")) {
        return Err(CaptureError::Kernel {
            what: "trace block requests",
            detail: "tracefs is not in /proc/filesystems (kernel built without CONFIG_FTRACE?)".into(),
        });
    }
    nix::mount::mount(Some("nodev"), TRACEFS_MOUNT_POINT, Some("tracefs"), nix::mount::MsFlags::empty(), None::<&str>)
        .map_err(|errno| CaptureError::Kernel {
            what: "mount tracefs",
            detail: format!("mount -t tracefs nodev {TRACEFS_MOUNT_POINT}: {errno}"),
        })?;
    Ok(PathBuf::from(TRACEFS_MOUNT_POINT))
}

/// The kernel's internal `dev_t` encoding (`MKDEV`: major << 20 | minor),
/// which event filters compare against, from a device node.
pub(crate) fn kernel_dev_t(device: &Path) -> Result<u64, CaptureError> {
    let metadata = std::fs::metadata(device).map_err(|error| CaptureError::io("inspecting", device, error))?;
    let rdev = std::os::unix::fs::MetadataExt::rdev(&metadata);
    let (major, minor) = (nix::sys::stat::major(rdev), nix::sys::stat::minor(rdev));
    Ok((major << 20) | minor)
}

/// A tracefs instance; dropping it stops tracing and removes it.
pub(crate) struct TraceInstance {
    directory: PathBuf,
}

impl TraceInstance {
    pub(crate) fn create(
        root: &Path,
        tag: &str,
        dev_t: u64,
        buffer_kib_per_cpu: u32,
    ) -> Result<TraceInstance, CaptureError> {
        let directory = root.join("instances").join(format!("nandlab-{tag}"));
        std::fs::create_dir(&directory).map_err(|error| CaptureError::Kernel {
            what: "create a tracefs instance",
            detail: format!("mkdir {}: {error}", directory.display()),
        })?;
        let instance = TraceInstance { directory };
        instance.set("buffer_size_kb", &buffer_kib_per_cpu.to_string())?;
        // Timestamps from one clock across CPUs, so the merged stream is in
        // order. Kernels without `mono` keep their default (`local`).
        let _ = instance.set("trace_clock", "mono");
        instance.set(&format!("events/{EVENT}/filter"), &format!("dev == {dev_t}"))?;
        instance.set(&format!("events/{EVENT}/enable"), "1")?;
        Ok(instance)
    }

    fn set(&self, file: &str, value: &str) -> Result<(), CaptureError> {
        let path = self.directory.join(file);
        std::fs::write(&path, value).map_err(|error| CaptureError::Kernel {
            what: "configure tracing",
            detail: format!("writing `{value}` to {}: {error}", path.display()),
        })
    }

    pub(crate) fn set_tracing(&self, on: bool) -> Result<(), CaptureError> {
        self.set("tracing_on", if on { "1" } else { "0" })
    }

    /// Events the ring buffer lost (overrun) or refused, over all CPUs.
    pub(crate) fn events_lost(&self) -> u64 {
        let per_cpu = std::fs::read_dir(self.directory.join("per_cpu")).into_iter().flatten().flatten();
        per_cpu
            .filter_map(|cpu| std::fs::read_to_string(cpu.path().join("stats")).ok())
            .flat_map(|stats| {
                stats
                    .lines()
                    .filter_map(|line| {
                        let (key, value) = line.split_once(':')?;
                        matches!(key.trim(), "overrun" | "dropped events")
                            .then(|| value.trim().parse::<u64>().ok())
                            .flatten()
                    })
                    .collect::<Vec<_>>()
            })
            .sum()
    }

    pub(crate) fn start_recorder(&self, spool: &Path) -> Result<Recorder, CaptureError> {
        let pipe_path = self.directory.join("trace_pipe");
        let pipe = OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(&pipe_path)
            .map_err(|error| CaptureError::io("opening", &pipe_path, error))?;
        let spool_file = std::fs::File::create(spool).map_err(|error| CaptureError::io("creating", spool, error))?;
        let stop = Arc::new(AtomicBool::new(false));
        let records = Arc::new(AtomicU64::new(0));
        let source = DrainingPipe { pipe, stop: Arc::clone(&stop) };
        let (spool, counter) = (spool.to_path_buf(), Arc::clone(&records));
        let thread = std::thread::Builder::new()
            .name("nandlab-trace".into())
            .spawn(move || record_events(source, pipe_path, spool_file, spool, &counter))
            .map_err(|error| CaptureError::io("starting the recorder thread for", &self.directory, error))?;
        Ok(Recorder { stop, records, thread: Some(thread) })
    }
}

impl Drop for TraceInstance {
    fn drop(&mut self) {
        let _ = self.set_tracing(false);
        let _ = self.set(&format!("events/{EVENT}/enable"), "0");
        // The kernel refuses rmdir while the instance's files are open; the
        // recorder has stopped by now, but retry briefly to be safe.
        for attempt in 0..10 {
            match std::fs::remove_dir(&self.directory) {
                Ok(()) => return,
                Err(error) if attempt == 9 => eprintln!(
                    "capture cleanup: could not remove tracefs instance {}: {error}",
                    self.directory.display()
                ),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }
}

/// `trace_pipe` opened non-blocking: an empty pipe is "wait and retry"
/// while recording and end-of-file once `stop` is set, so the recorder
/// drains everything and then ends by itself.
struct DrainingPipe {
    pipe: std::fs::File,
    stop: Arc<AtomicBool>,
}

impl Read for DrainingPipe {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.pipe.read(buffer) {
                Ok(0) | Err(_) if self.stop.load(Ordering::Acquire) => return Ok(0),
                Ok(0) => std::thread::sleep(PIPE_POLL),
                Ok(read) => return Ok(read),
                Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                    std::thread::sleep(PIPE_POLL)
                }
                Err(error) => return Err(error),
            }
        }
    }
}

fn record_events(
    source: DrainingPipe,
    pipe_path: PathBuf,
    spool_file: std::fs::File,
    spool: PathBuf,
    counter: &AtomicU64,
) -> Result<u64, CaptureError> {
    let header = TraceHeader { source_format: Some(Format::Tracefs.name().into()), ..TraceHeader::default() };
    let mut writer = Box::new(NativeWriter::new(BufWriter::new(spool_file), spool, &header)?);
    let events = nandlab_trace::read_from(
        BufReader::with_capacity(1 << 20, source),
        &pipe_path,
        Format::Tracefs,
        &ReadOptions::default(),
    )?;
    for record in events {
        writer.write(&record?)?;
        counter.fetch_add(1, Ordering::Relaxed);
    }
    Ok(writer.finish()?.written)
}

/// The running recorder thread.
pub(crate) struct Recorder {
    stop: Arc<AtomicBool>,
    records: Arc<AtomicU64>,
    thread: Option<JoinHandle<Result<u64, CaptureError>>>,
}

impl Recorder {
    pub(crate) fn records_so_far(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Drains what is left in the pipe and returns the record count. Call
    /// after tracing was switched off.
    pub(crate) fn finish(mut self) -> Result<u64, CaptureError> {
        self.stop.store(true, Ordering::Release);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => Err(CaptureError::Kernel { what: "record events", detail: "the recorder thread panicked".into() }),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
