//! The DHRD device (paper section 3): a RAM image split into chunks, mirrored to a durable backing
//! store. Reads are served from RAM (one copy into the caller's buffer: the direct byte read of
//! section 3.4, with no alignment constraint); writes go to the backing store and then RAM and are
//! acknowledged once durable; a background copier performs the fast initialization of section 3.3
//! while requests are served from the first moment.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::aligned::AlignedBuf;
use crate::backing::FileStore;
use crate::chunk::{Chunk, ChunkState, WriteRoute};
use crate::config::{DeviceConfig, Durability};
use crate::error::{DhrdError, Result};
use crate::stats::{bump, Counters, InitProgress, LatencyRecorder, StatsSnapshot};
use crate::store::BackingStore;

/// The copier reads a chunk in slices of at most this size so a rate limit paces it smoothly.
const COPY_SLICE_BYTES: usize = 1 << 20;

/// A durable hybrid RAM disk. Cheap to share: wrap it in an `Arc`; every method takes `&self`.
pub struct Device {
    shared: Arc<Shared>,
    copier: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    backing: Box<dyn BackingStore>,
    chunks: Box<[Chunk]>,
    chunk_bytes: u64,
    size_bytes: u64,
    durability: Durability,
    copy_rate_bytes_per_s: Option<u64>,
    opened_at: Instant,
    chunks_initialized: AtomicU64,
    init_finished_after: OnceLock<Duration>,
    copier_error: OnceLock<String>,
    stop_copier: AtomicBool,
    counters: Counters,
    read_latency: LatencyRecorder,
    write_latency: LatencyRecorder,
}

/// The part of one request that falls into one chunk.
struct Piece {
    chunk: usize,
    in_chunk: Range<usize>,
    in_request: Range<usize>,
    device_offset: u64,
}

#[derive(Clone, Copy)]
enum Mutation<'a> {
    Data(&'a [u8]),
    Zeros,
}

impl Device {
    /// Opens (or creates) the backing store and starts serving at once. RAM starts empty (nothing
    /// is allocated yet); the copier allocates and fills it chunk by chunk in the background.
    pub fn open(config: &DeviceConfig) -> Result<Device> {
        config.validate()?;
        let opened_at = Instant::now();
        let store = FileStore::open(config)?;
        Device::start(Box::new(store), config, opened_at)
    }

    /// Starts a device on any `BackingStore` (tests put a simulated disk here). From `config` only
    /// the chunk size, the durability (which must describe how `store` acknowledges writes) and the
    /// copy rate apply; the store brings its own size.
    pub fn open_on(store: Box<dyn BackingStore>, config: &DeviceConfig) -> Result<Device> {
        config.validate()?;
        crate::config::validate_size(store.size_bytes())?;
        Device::start(store, config, Instant::now())
    }

    fn start(backing: Box<dyn BackingStore>, config: &DeviceConfig, opened_at: Instant) -> Result<Device> {
        let size_bytes = backing.size_bytes();
        let chunk_count = size_bytes.div_ceil(config.chunk_bytes);
        let chunks: Box<[Chunk]> = (0..chunk_count)
            .map(|index| {
                let len = config.chunk_bytes.min(size_bytes - index * config.chunk_bytes);
                Chunk::new(to_usize(len))
            })
            .collect();
        let shared = Arc::new(Shared {
            backing,
            chunks,
            chunk_bytes: config.chunk_bytes,
            size_bytes,
            durability: config.durability,
            copy_rate_bytes_per_s: config.copy_rate_bytes_per_s,
            opened_at,
            chunks_initialized: AtomicU64::new(0),
            init_finished_after: OnceLock::new(),
            copier_error: OnceLock::new(),
            stop_copier: AtomicBool::new(false),
            counters: Counters::default(),
            read_latency: LatencyRecorder::new(),
            write_latency: LatencyRecorder::new(),
        });
        let copier_shared = Arc::clone(&shared);
        let copier = thread::Builder::new()
            .name("dhrd-copier".into())
            .spawn(move || copier_shared.run_copier())
            .map_err(|source| DhrdError::Backing {
                path: shared.backing.path().to_path_buf(),
                action: "spawn the initialization copier thread",
                source,
            })?;
        Ok(Device { shared, copier: Mutex::new(Some(copier)) })
    }

    #[must_use]
    pub fn size_bytes(&self) -> u64 {
        self.shared.size_bytes
    }

    #[must_use]
    pub fn durability(&self) -> Durability {
        self.shared.durability
    }

    /// The backing store this device mirrors.
    #[must_use]
    pub fn backing_path(&self) -> &std::path::Path {
        self.shared.backing.path()
    }

    #[must_use]
    pub fn chunk_bytes(&self) -> u64 {
        self.shared.chunk_bytes
    }

    /// Direct byte read (section 3.4): any offset, length and buffer address; one copy from the
    /// RAM image for initialized chunks, the backing store otherwise (read case 2).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let started = Instant::now();
        self.check_range(offset, buf.len() as u64)?;
        for piece in self.shared.pieces(offset, buf.len()) {
            self.shared.read_piece(&piece, &mut buf[piece.in_request.clone()])?;
        }
        self.shared.finish_read(buf.len(), started);
        Ok(())
    }

    /// Like `read_at`, but hands `consume` a slice of the RAM image itself when the range lies in
    /// one initialized chunk (zero copies in this process; the FUSE reply copies it to the kernel).
    /// Writers to that chunk wait until `consume` returns, so keep it short.
    pub fn read_in_place<R>(&self, offset: u64, len: usize, consume: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let started = Instant::now();
        self.check_range(offset, len as u64)?;
        let mut pieces = self.shared.pieces(offset, len);
        if let (Some(piece), None) = (pieces.next(), pieces.next()) {
            let chunk = &self.shared.chunks[piece.chunk];
            if chunk.is_initialized() {
                let ram = chunk.ram();
                let result = consume(&ram.as_slice()[piece.in_chunk]);
                drop(ram);
                self.shared.finish_read(len, started);
                return Ok(result);
            }
        }
        let mut buf = vec![0u8; len];
        self.read_at(offset, &mut buf)?;
        Ok(consume(&buf))
    }

    /// Writes `data` at `offset` (any alignment). Returns once the backing store has it durably
    /// (per the durability mode) and RAM has it; write cases 1-3 of section 3.3.1 apply per chunk.
    pub fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let started = Instant::now();
        self.check_range(offset, data.len() as u64)?;
        for piece in self.shared.pieces(offset, data.len()) {
            let part = &data[piece.in_request.clone()];
            self.shared.mutate_piece(&piece, Mutation::Data(part))?;
        }
        let counters = &self.shared.counters;
        bump(&counters.writes, 1);
        bump(&counters.written_bytes, data.len() as u64);
        self.shared.write_latency.record(started.elapsed());
        Ok(())
    }

    /// DISCARD / WRITE ZEROES: the range reads as zeros afterwards; the backing store punches a hole.
    pub fn discard(&self, offset: u64, len: u64) -> Result<()> {
        self.check_range(offset, len)?;
        let len = to_usize(len);
        for piece in self.shared.pieces(offset, len) {
            self.shared.mutate_piece(&piece, Mutation::Zeros)?;
        }
        let counters = &self.shared.counters;
        bump(&counters.discards, 1);
        bump(&counters.discarded_bytes, len as u64);
        Ok(())
    }

    /// fsync/FUA: afterwards every acknowledged write is durable, in every durability mode.
    pub fn flush(&self) -> Result<()> {
        bump(&self.shared.counters.flushes, 1);
        self.shared.backing.sync()
    }

    #[must_use]
    pub fn init_progress(&self) -> InitProgress {
        let shared = &self.shared;
        InitProgress {
            chunks_initialized: shared.chunks_initialized.load(Ordering::Acquire),
            chunks_total: shared.chunks.len() as u64,
            finished_after: shared.init_finished_after.get().copied(),
            copier_error: shared.copier_error.get().cloned(),
        }
    }

    /// Blocks until initialization completes, the copier fails, or `timeout` passes; returns
    /// whether initialization is complete.
    pub fn wait_initialized(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let progress = self.init_progress();
            if progress.is_complete() {
                return true;
            }
            if progress.copier_error.is_some() || Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// State of chunk `index`, or `None` past the last chunk.
    #[must_use]
    pub fn chunk_state(&self, index: u64) -> Option<ChunkState> {
        let index = usize::try_from(index).ok()?;
        self.shared.chunks.get(index).map(Chunk::state)
    }

    #[must_use]
    pub fn stats(&self) -> StatsSnapshot {
        let shared = &self.shared;
        let c = &shared.counters;
        StatsSnapshot {
            size_bytes: shared.size_bytes,
            chunk_bytes: shared.chunk_bytes,
            durability: shared.durability.to_string(),
            direct_io: shared.backing.bypasses_page_cache(),
            reads: Counters::load(&c.reads),
            writes: Counters::load(&c.writes),
            discards: Counters::load(&c.discards),
            flushes: Counters::load(&c.flushes),
            read_bytes: Counters::load(&c.read_bytes),
            written_bytes: Counters::load(&c.written_bytes),
            discarded_bytes: Counters::load(&c.discarded_bytes),
            reads_from_backing: Counters::load(&c.reads_from_backing),
            writes_waited_for_copy: Counters::load(&c.writes_waited_for_copy),
            writes_backing_only: Counters::load(&c.writes_backing_only),
            copier_waits: Counters::load(&c.copier_waits),
            init: self.init_progress(),
            read_latency: shared.read_latency.summary(),
            write_latency: shared.write_latency.summary(),
        }
    }

    /// Compares every initialized chunk of the RAM image with the backing store, byte for byte,
    /// holding each chunk's write lock while comparing. Returns how many chunks were compared.
    pub fn verify_mirror(&self) -> Result<u64> {
        let shared = &self.shared;
        let mut compared = 0;
        let mut backing_copy = Vec::new();
        for (index, chunk) in shared.chunks.iter().enumerate() {
            let _order = chunk.order_writes();
            if !chunk.is_initialized() {
                continue;
            }
            let ram = chunk.ram();
            let ram = ram.as_slice();
            let base = index as u64 * shared.chunk_bytes;
            backing_copy.resize(ram.len(), 0);
            shared.backing.read(base, &mut backing_copy)?;
            if let Some(at) = ram.iter().zip(&backing_copy).position(|(a, b)| a != b) {
                return Err(DhrdError::MirrorMismatch {
                    offset: base + at as u64,
                    ram: ram[at],
                    backing: backing_copy[at],
                });
            }
            compared += 1;
        }
        Ok(compared)
    }

    /// Stops the copier and makes every acknowledged write durable (clean shutdown).
    pub fn close(self) -> Result<()> {
        self.shut_down()
    }

    /// `close` for a device still shared (e.g. with front-end threads that cannot be joined when a
    /// stop is forced): stops the copier and syncs; requests still served afterwards keep working.
    pub fn shut_down(&self) -> Result<()> {
        self.stop_copier();
        self.shared.backing.sync()
    }

    fn stop_copier(&self) {
        self.shared.stop_copier.store(true, Ordering::Release);
        let copier = crate::chunk::lock(&self.copier).take();
        if let Some(copier) = copier {
            // A panicking copier has already left its chunks in a state served from the backing store.
            let _ = copier.join();
        }
    }

    fn check_range(&self, offset: u64, len: u64) -> Result<()> {
        let end = u128::from(offset) + u128::from(len);
        if end > u128::from(self.shared.size_bytes) {
            return Err(DhrdError::OutOfRange { offset, end, size_bytes: self.shared.size_bytes });
        }
        Ok(())
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        self.stop_copier();
    }
}

impl Shared {
    fn pieces(&self, offset: u64, len: usize) -> impl Iterator<Item = Piece> + '_ {
        let chunk_bytes = self.chunk_bytes;
        let mut done = 0usize;
        std::iter::from_fn(move || {
            if done == len {
                return None;
            }
            let device_offset = offset + done as u64;
            let chunk = device_offset / chunk_bytes;
            let start_in_chunk = to_usize(device_offset % chunk_bytes);
            let take = (to_usize(chunk_bytes) - start_in_chunk).min(len - done);
            let piece = Piece {
                chunk: to_usize(chunk),
                in_chunk: start_in_chunk..start_in_chunk + take,
                in_request: done..done + take,
                device_offset,
            };
            done += take;
            Some(piece)
        })
    }

    fn read_piece(&self, piece: &Piece, dst: &mut [u8]) -> Result<()> {
        let chunk = &self.chunks[piece.chunk];
        if chunk.is_initialized() {
            // Read case 1: RAM only.
            dst.copy_from_slice(&chunk.ram().as_slice()[piece.in_chunk.clone()]);
            return Ok(());
        }
        // Read case 2: uninitialized or initializing chunk, the backing store has the data.
        bump(&self.counters.reads_from_backing, 1);
        self.backing.read(piece.device_offset, dst)
    }

    fn finish_read(&self, len: usize, started: Instant) {
        bump(&self.counters.reads, 1);
        bump(&self.counters.read_bytes, len as u64);
        self.read_latency.record(started.elapsed());
    }

    fn mutate_piece(&self, piece: &Piece, mutation: Mutation<'_>) -> Result<()> {
        let chunk = &self.chunks[piece.chunk];
        let _order = chunk.order_writes();
        match chunk.begin_write() {
            WriteRoute::Mirror { waited_for_copy } => {
                if waited_for_copy {
                    bump(&self.counters.writes_waited_for_copy, 1); // write case 1
                }
                // Backing store first: RAM never shows data that is not yet durable.
                self.apply_to_backing(piece, mutation)?;
                let mut ram = chunk.ram_mut();
                let target = &mut ram.as_mut_slice()[piece.in_chunk.clone()];
                match mutation {
                    Mutation::Data(data) => target.copy_from_slice(data),
                    Mutation::Zeros => target.fill(0),
                }
                Ok(())
            }
            WriteRoute::BackingOnly => {
                bump(&self.counters.writes_backing_only, 1); // write case 3
                let applied = self.apply_to_backing(piece, mutation);
                chunk.end_backing_write();
                applied
            }
        }
    }

    fn apply_to_backing(&self, piece: &Piece, mutation: Mutation<'_>) -> Result<()> {
        match mutation {
            Mutation::Data(data) => self.backing.write(piece.device_offset, data),
            Mutation::Zeros => self.backing.zero(piece.device_offset, piece.in_chunk.len() as u64),
        }
    }

    /// Fast initialization (section 3.3): copy chunks in order, each under the chunk protocol.
    fn run_copier(&self) {
        let mut pacer = Pacer::new(self.copy_rate_bytes_per_s);
        for (index, chunk) in self.chunks.iter().enumerate() {
            if self.stop_copier.load(Ordering::Acquire) {
                return;
            }
            if chunk.begin_copy() {
                bump(&self.counters.copier_waits, 1);
            }
            let copied = self.copy_chunk(index, chunk, &mut pacer);
            chunk.finish_copy(matches!(copied, Ok(true)));
            match copied {
                Ok(true) => {
                    self.chunks_initialized.fetch_add(1, Ordering::AcqRel);
                }
                Ok(false) => return,
                Err(err) => {
                    let _ = self.copier_error.set(err.to_string());
                    return;
                }
            }
        }
        let _ = self.init_finished_after.set(self.opened_at.elapsed());
    }

    /// Returns `Ok(false)` when asked to stop midway.
    fn copy_chunk(&self, index: usize, chunk: &Chunk, pacer: &mut Pacer) -> Result<bool> {
        let base = index as u64 * self.chunk_bytes;
        let mut ram = chunk.ram_mut();
        *ram = AlignedBuf::zeroed(chunk.len());
        let mut slice_offset = 0u64;
        for slice in ram.as_mut_slice().chunks_mut(COPY_SLICE_BYTES) {
            if self.stop_copier.load(Ordering::Acquire) {
                return Ok(false);
            }
            self.backing.read_aligned(base + slice_offset, slice)?;
            slice_offset += slice.len() as u64;
            pacer.pace(slice.len() as u64);
        }
        Ok(true)
    }
}

/// Sleeps so that the copier's average rate stays under a limit.
struct Pacer {
    rate_bytes_per_s: Option<u64>,
    started: Instant,
    bytes: u64,
}

impl Pacer {
    fn new(rate_bytes_per_s: Option<u64>) -> Pacer {
        Pacer { rate_bytes_per_s, started: Instant::now(), bytes: 0 }
    }

    fn pace(&mut self, bytes: u64) {
        let Some(rate) = self.rate_bytes_per_s else {
            return;
        };
        self.bytes += bytes;
        let due_ns = u128::from(self.bytes) * 1_000_000_000 / u128::from(rate);
        let due = Duration::from_nanos(u64::try_from(due_ns).unwrap_or(u64::MAX));
        if let Some(ahead) = due.checked_sub(self.started.elapsed()) {
            thread::sleep(ahead);
        }
    }
}

fn to_usize(value: u64) -> usize {
    // Chunk sizes and in-memory lengths fit in usize on the 64-bit targets DHRD supports.
    usize::try_from(value).unwrap_or(usize::MAX)
}
