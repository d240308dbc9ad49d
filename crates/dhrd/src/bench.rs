//! Benchmark workloads run in-process against a `Device` (configuration (d) of docs/dhrd.md: the
//! direct byte read with no kernel in the path), the first-I/O-after-start measurement of fast
//! initialization, and the paper's video test (section 4.4) on plain files of any file system.
//! Timing lives here and in `nandlab dhrd bench`, never in tests.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::aligned::AlignedBuf;
use crate::config::DeviceConfig;
use crate::device::Device;
use crate::error::{DhrdError, Result};
use crate::stats::{latency_histogram, record_latency, summarize, LatencySummary};

/// What a benchmark thread does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    RandomRead,
    RandomWrite,
    /// Random reads and writes, `read_percent` of them reads (the paper's mix is 66:34).
    RandomMixed {
        read_percent: u8,
    },
    SequentialRead,
    SequentialWrite,
}

/// The block-level workloads of the paper's evaluation (Figures 6 and 8):
/// name, pattern and request size.
pub const PAPER_WORKLOADS: [(&str, Pattern, usize); 5] = [
    ("random read 4 KiB", Pattern::RandomRead, 4096),
    ("random write 4 KiB", Pattern::RandomWrite, 4096),
    ("mixed 66:34 4 KiB", Pattern::RandomMixed { read_percent: 66 }, 4096),
    ("sequential read 1 MiB", Pattern::SequentialRead, 1 << 20),
    ("sequential write 1 MiB", Pattern::SequentialWrite, 1 << 20),
];

#[derive(Clone, Copy, Debug)]
pub struct WorkloadSpec {
    pub pattern: Pattern,
    pub block_bytes: usize,
    pub duration: Duration,
    pub threads: usize,
    pub seed: u64,
}

#[derive(Clone, Debug)]
pub struct WorkloadResult {
    pub reads: u64,
    pub writes: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    pub read_latency: LatencySummary,
    pub write_latency: LatencySummary,
}

impl WorkloadResult {
    #[must_use]
    pub fn ops_per_s(&self) -> f64 {
        (self.reads + self.writes) as f64 / self.elapsed.as_secs_f64()
    }

    #[must_use]
    pub fn mib_per_s(&self) -> f64 {
        self.bytes as f64 / self.elapsed.as_secs_f64() / f64::from(1u32 << 20)
    }
}

/// What a benchmark drives: the DHRD, or a plain file as a baseline (the
/// paper's "SSD" and "RAMDisk" configurations, without a kernel block layer
/// in between).
pub trait BenchTarget: Sync {
    fn size_bytes(&self) -> u64;
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()>;
}

impl BenchTarget for Device {
    fn size_bytes(&self) -> u64 {
        Device::size_bytes(self)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        Device::read_at(self, offset, buf)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        Device::write_at(self, offset, data)
    }
}

/// A file read and written with `pread`/`pwrite`.
pub struct FileTarget {
    file: File,
    path: PathBuf,
    size_bytes: u64,
}

impl FileTarget {
    /// The durable baseline: `O_DIRECT` reads and `O_DIRECT | O_DSYNC`
    /// writes, as DHRD's own backing writes in `direct` mode (requests and
    /// buffers 4 KiB aligned, as the workloads are).
    pub fn durable_direct(path: &Path) -> Result<FileTarget> {
        FileTarget::open(path, libc::O_DIRECT | libc::O_DSYNC)
    }

    /// Plain `pread`/`pwrite` through the page cache (on tmpfs: the RAM disk).
    pub fn buffered(path: &Path) -> Result<FileTarget> {
        FileTarget::open(path, 0)
    }

    /// Opens an existing file read-write with `flags` added.
    fn open(path: &Path, flags: i32) -> Result<FileTarget> {
        let error = |action, source| DhrdError::Backing { path: path.to_path_buf(), action, source };
        let file =
            OpenOptions::new().read(true).write(true).custom_flags(flags).open(path).map_err(|e| error("open", e))?;
        let size_bytes = file.metadata().map_err(|e| error("stat", e))?.len();
        Ok(FileTarget { file, path: path.to_path_buf(), size_bytes })
    }

    fn error(&self, action: &'static str, source: std::io::Error) -> DhrdError {
        DhrdError::Backing { path: self.path.clone(), action, source }
    }
}

impl BenchTarget for FileTarget {
    fn size_bytes(&self) -> u64 {
        self.size_bytes
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.file.read_exact_at(buf, offset).map_err(|e| self.error("read", e))
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.file.write_all_at(data, offset).map_err(|e| self.error("write", e))
    }
}

/// splitmix64: a tiny seeded generator, enough to pick offsets without a dependency.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }
}

struct ThreadTally {
    reads: u64,
    writes: u64,
    read_ns: Histogram<u64>,
    write_ns: Histogram<u64>,
}

/// Runs `spec` against `device` with `spec.threads` threads, each issuing one request at a time.
pub fn run_workload(device: &dyn BenchTarget, spec: &WorkloadSpec) -> Result<WorkloadResult> {
    let blocks = device.size_bytes() / spec.block_bytes as u64;
    if blocks == 0 || spec.threads == 0 {
        return Err(DhrdError::Config {
            key: "bench",
            value: format!("block {} bytes, {} threads", spec.block_bytes, spec.threads),
            reason: "need at least one block in the device and one thread",
        });
    }
    let started = Instant::now();
    let tallies: Vec<Result<ThreadTally>> = thread::scope(|scope| {
        let workers: Vec<_> =
            (0..spec.threads).map(|index| scope.spawn(move || run_thread(device, spec, blocks, index))).collect();
        workers.into_iter().map(|worker| worker.join().unwrap_or_else(|_| panic!("bench thread panicked"))).collect()
    });
    let elapsed = started.elapsed();
    let mut total = ThreadTally { reads: 0, writes: 0, read_ns: latency_histogram(), write_ns: latency_histogram() };
    for tally in tallies {
        let tally = tally?;
        total.reads += tally.reads;
        total.writes += tally.writes;
        total.read_ns.add(&tally.read_ns).expect("same bounds");
        total.write_ns.add(&tally.write_ns).expect("same bounds");
    }
    Ok(WorkloadResult {
        reads: total.reads,
        writes: total.writes,
        bytes: (total.reads + total.writes) * spec.block_bytes as u64,
        elapsed,
        read_latency: summarize(&total.read_ns),
        write_latency: summarize(&total.write_ns),
    })
}

fn run_thread(device: &dyn BenchTarget, spec: &WorkloadSpec, blocks: u64, index: usize) -> Result<ThreadTally> {
    let mut rng = SplitMix(spec.seed ^ (index as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    // Page aligned, so an O_DIRECT file target takes it as it is.
    let mut aligned = AlignedBuf::zeroed(spec.block_bytes);
    let buf = aligned.as_mut_slice();
    for byte in buf.iter_mut() {
        *byte = rng.next() as u8;
    }
    let mut tally = ThreadTally { reads: 0, writes: 0, read_ns: latency_histogram(), write_ns: latency_histogram() };
    let per_thread = (blocks / spec.threads as u64).max(1);
    let mut sequential_block = (index as u64 * per_thread) % blocks;
    let deadline = Instant::now() + spec.duration;
    while Instant::now() < deadline {
        let (block, is_read) = match spec.pattern {
            Pattern::RandomRead => (rng.below(blocks), true),
            Pattern::RandomWrite => (rng.below(blocks), false),
            Pattern::RandomMixed { read_percent } => (rng.below(blocks), rng.below(100) < u64::from(read_percent)),
            Pattern::SequentialRead | Pattern::SequentialWrite => {
                sequential_block = (sequential_block + 1) % blocks;
                (sequential_block, spec.pattern == Pattern::SequentialRead)
            }
        };
        let offset = block * spec.block_bytes as u64;
        let op_started = Instant::now();
        if is_read {
            device.read_at(offset, buf)?;
            record_latency(&mut tally.read_ns, op_started.elapsed());
            tally.reads += 1;
        } else {
            device.write_at(offset, buf)?;
            record_latency(&mut tally.write_ns, op_started.elapsed());
            tally.writes += 1;
        }
    }
    Ok(tally)
}

/// Fast initialization seen from a client (section 3.3): how soon after `open` requests complete.
#[derive(Clone, Debug)]
pub struct FirstIo {
    pub open: Duration,
    pub first_read: Duration,
    pub first_write: Duration,
    pub initialization: Option<Duration>,
}

/// Opens the device and immediately issues a 4 KiB read and a 4 KiB write at the far end (chunks
/// the copier reaches last), then waits for initialization to finish. Times are since `open` began.
pub fn measure_first_io(config: &DeviceConfig, wait_for_init: Duration) -> Result<(Device, FirstIo)> {
    let started = Instant::now();
    let device = Device::open(config)?;
    let open = started.elapsed();
    let mut block = vec![0u8; 4096];
    let far = device.size_bytes() - 2 * 4096;
    device.read_at(far, &mut block)?;
    let first_read = started.elapsed();
    device.write_at(far + 4096, &block)?;
    let first_write = started.elapsed();
    device.wait_initialized(wait_for_init);
    let initialization = device.init_progress().finished_after;
    Ok((device, FirstIo { open, first_read, first_write, initialization }))
}

/// The paper's video test (section 4.4): read a file, modify part of it, write it as another file
/// (fsync before the clock stops).
#[derive(Clone, Debug)]
pub struct VideoRun {
    pub bytes: u64,
    pub read: Duration,
    pub write: Duration,
}

/// Reads `src` whole, inverts `modify_bytes` bytes in its middle, writes the result to `dst`.
pub fn video_test(src: &Path, dst: &Path, modify_bytes: u64) -> Result<VideoRun> {
    let io_err = |path: &Path, action| {
        let path = path.to_path_buf();
        move |source| DhrdError::Backing { path, action, source }
    };
    let started = Instant::now();
    let mut content = Vec::new();
    File::open(src).and_then(|mut file| file.read_to_end(&mut content)).map_err(io_err(src, "read video source"))?;
    let read = started.elapsed();
    let len = content.len();
    let modify = usize::try_from(modify_bytes).unwrap_or(usize::MAX).min(len);
    let start = (len - modify) / 2;
    for byte in &mut content[start..start + modify] {
        *byte = !*byte;
    }
    let write_started = Instant::now();
    let mut out = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(dst)
        .map_err(io_err(dst, "create video copy"))?;
    out.write_all(&content).and_then(|()| out.sync_all()).map_err(io_err(dst, "write video copy"))?;
    Ok(VideoRun { bytes: len as u64, read, write: write_started.elapsed() })
}

/// Writes `size` seeded pseudo-random (xorshift64) bytes to a new file at
/// `path` and syncs it: the image a benchmark starts from. `on_progress`
/// sees the bytes written every 256 MiB.
pub fn fill_file(path: &Path, size: u64, seed: u64, on_progress: &mut dyn FnMut(u64)) -> Result<()> {
    let failed = |action: &'static str| move |source| DhrdError::Backing { path: path.to_path_buf(), action, source };
    let mut file = File::create(path).map_err(failed("create"))?;
    let mut state = seed | 1;
    let mut block = vec![0u8; 1 << 20];
    let mut written = 0u64;
    while written < size {
        for word in block.chunks_exact_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            word.copy_from_slice(&state.to_le_bytes());
        }
        let take = usize::try_from(size - written).map_or(block.len(), |left| left.min(block.len()));
        file.write_all(&block[..take]).map_err(failed("fill"))?;
        written += take as u64;
        if written.is_multiple_of(256 << 20) {
            on_progress(written);
        }
    }
    file.sync_all().map_err(failed("fsync"))
}

/// A duration in milliseconds, for tables.
pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Nanoseconds in microseconds, for tables.
pub fn micros(ns: u64) -> f64 {
    nandlab_convert::f64_of(ns) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The baseline target reads and writes the file it names; a workload
    /// over it writes the blocks it reports (no timing asserted).
    #[test]
    fn a_file_target_runs_a_workload_and_reaches_the_file() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("baseline.img");
        std::fs::write(&path, vec![0u8; 1 << 20]).expect("zeroed file");
        let target = FileTarget::buffered(&path).expect("opens");
        assert_eq!(target.size_bytes(), 1 << 20);
        let spec = WorkloadSpec {
            pattern: Pattern::SequentialWrite,
            block_bytes: 4096,
            duration: Duration::from_millis(20),
            threads: 1,
            seed: 3,
        };
        let result = run_workload(&target, &spec).expect("runs");
        assert!(result.writes > 0 && result.reads == 0);
        assert_eq!(result.bytes, result.writes * 4096);
        let mut block = vec![0u8; 4096];
        target.read_at(4096, &mut block).expect("reads");
        assert!(block.iter().any(|&byte| byte != 0), "the first sequential write lands in block 1");
        let missing = FileTarget::buffered(&dir.path().join("missing.img"));
        assert!(matches!(missing, Err(DhrdError::Backing { action: "open", .. })));
    }
}
