//! File-system workloads to capture: real file operations (create, write,
//! append, read, delete, fsync) in a directory — normally the mount point
//! `nandlab capture` hands the command in `NANDLAB_MNT`.
//!
//! * [`uav`]: the UAV image-store scenarios of Delay-D §2.2/§4.1 (pre-fill,
//!   batch-erase, single-erase);
//! * [`postmark`]: Postmark (Debian's binary when installed, else an
//!   equivalent), the workload of the informed-cleaning slides 21-24;
//! * [`filebench`]: the fileserver, varmail and webserver personalities of
//!   Filebench, single-threaded equivalents.
//!
//! Every randomised choice comes from one seeded generator.

pub mod filebench;
pub mod postmark;
pub mod uav;

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

const CHUNK_BYTES: usize = 1 << 20;

/// Progress lines for a long workload.
pub type Progress<'a> = &'a mut dyn FnMut(&str);

/// File operations in one directory tree, with a seeded generator and a
/// reusable buffer of pseudo-random bytes (so nothing below can compress or
/// deduplicate the data).
pub struct FileOps {
    root: PathBuf,
    rng: Xoshiro256PlusPlus,
    data: Vec<u8>,
    /// fsync after each create/append, where the real application would.
    pub fsync: bool,
}

fn with_path(error: std::io::Error, action: &str, path: &Path) -> std::io::Error {
    std::io::Error::new(error.kind(), format!("{action} {}: {error}", path.display()))
}

impl FileOps {
    pub fn new(root: &Path, seed: u64, fsync: bool) -> FileOps {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let data = (0..CHUNK_BYTES).map(|_| rng.random::<u8>()).collect();
        FileOps { root: root.to_path_buf(), rng, data, fsync }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Uniform in `[low, high]`.
    pub fn uniform(&mut self, low: u64, high: u64) -> u64 {
        if high <= low {
            return low;
        }
        self.rng.random_range(low..=high)
    }

    pub fn mkdir(&self, name: &str) -> std::io::Result<()> {
        let path = self.path(name);
        std::fs::create_dir_all(&path).map_err(|error| with_path(error, "creating directory", &path))
    }

    fn write_bytes(&self, file: &mut File, path: &Path, mut bytes: u64) -> std::io::Result<()> {
        while bytes > 0 {
            let chunk = bytes.min(CHUNK_BYTES as u64) as usize;
            file.write_all(&self.data[..chunk]).map_err(|error| with_path(error, "writing", path))?;
            bytes -= chunk as u64;
        }
        if self.fsync {
            file.sync_all().map_err(|error| with_path(error, "fsync of", path))?;
        }
        Ok(())
    }

    /// Creates (or truncates) a file of `bytes` bytes.
    pub fn create(&self, name: &str, bytes: u64) -> std::io::Result<()> {
        let path = self.path(name);
        let mut file = File::create(&path).map_err(|error| with_path(error, "creating", &path))?;
        self.write_bytes(&mut file, &path, bytes)
    }

    pub fn append(&self, name: &str, bytes: u64) -> std::io::Result<()> {
        let path = self.path(name);
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|error| with_path(error, "opening for append", &path))?;
        self.write_bytes(&mut file, &path, bytes)
    }

    /// Reads a whole file in `block`-byte reads; returns the bytes read.
    pub fn read_whole(&mut self, name: &str, block: usize) -> std::io::Result<u64> {
        let path = self.path(name);
        let mut file = File::open(&path).map_err(|error| with_path(error, "opening", &path))?;
        let mut buffer = vec![0u8; block.clamp(1, CHUNK_BYTES)];
        let mut total = 0;
        loop {
            let read = file.read(&mut buffer).map_err(|error| with_path(error, "reading", &path))?;
            if read == 0 {
                return Ok(total);
            }
            total += read as u64;
        }
    }

    pub fn delete(&self, name: &str) -> std::io::Result<()> {
        let path = self.path(name);
        std::fs::remove_file(&path).map_err(|error| with_path(error, "deleting", &path))
    }

    pub fn stat(&self, name: &str) -> std::io::Result<u64> {
        let path = self.path(name);
        Ok(std::fs::metadata(&path).map_err(|error| with_path(error, "stat of", &path))?.len())
    }

    /// `(total, used)` bytes of the file system holding the root.
    pub fn usage(&self) -> std::io::Result<(u64, u64)> {
        let stats = nix::sys::statvfs::statvfs(&self.root)
            .map_err(|errno| with_path(std::io::Error::from(errno), "statvfs of", &self.root))?;
        let fragment = stats.fragment_size();
        let total = stats.blocks() * fragment;
        Ok((total, total - stats.blocks_free() * fragment))
    }

    /// `sync(2)`: write back everything, as a workload's phase boundary.
    pub fn sync_all(&self) {
        nix::unistd::sync();
    }
}

/// Stands in for the kernel's periodic write-back while a workload runs.
/// Linux writes dirty pages back after `dirty_expire_centisecs` (30 s); a
/// workload that creates and deletes small files without fsync (Postmark,
/// Filebench's fileserver and webserver) finishes long before on a modern
/// machine, and its data would never reach the device — a trace of nothing.
/// The pacer calls `syncfs` on the file system every `interval`, as a
/// write-back clock scaled to the workload's speed. Stops when dropped.
pub struct WritebackPacer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WritebackPacer {
    /// `None` for a zero interval (write-back left to the kernel).
    pub fn start(root: &Path, interval: std::time::Duration) -> std::io::Result<Option<WritebackPacer>> {
        if interval.is_zero() {
            return Ok(None);
        }
        let directory = File::open(root).map_err(|error| with_path(error, "opening", root))?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = std::sync::Arc::clone(&stop);
        let thread = std::thread::Builder::new().name("nandlab-wb".into()).spawn(move || {
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(interval);
                let _ = nix::unistd::syncfs(&directory);
            }
        })?;
        Ok(Some(WritebackPacer { stop, thread: Some(thread) }))
    }
}

impl Drop for WritebackPacer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reports progress every tenth of `total` steps.
pub(crate) fn report_every_tenth(progress: Progress<'_>, what: &str, done: u64, total: u64) {
    let step = (total / 10).max(1);
    if done.is_multiple_of(step) || done == total {
        progress(&format!("{what}: {done}/{total}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn scratch(name: &str) -> PathBuf {
        let directory = std::env::temp_dir().join(format!("nandlab-fsload-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        std::fs::create_dir_all(&directory).expect("temp dir is writable");
        directory
    }

    #[test]
    fn file_operations_do_what_they_say() {
        let root = scratch("ops");
        let mut ops = FileOps::new(&root, 7, false);
        ops.create("a", 3 * CHUNK_BYTES as u64 + 5).expect("create");
        ops.append("a", 10).expect("append");
        assert_eq!(ops.stat("a").expect("stat"), 3 * CHUNK_BYTES as u64 + 15);
        assert_eq!(ops.read_whole("a", 4096).expect("read"), 3 * CHUNK_BYTES as u64 + 15);
        ops.delete("a").expect("delete");
        assert!(ops.delete("a").unwrap_err().to_string().contains("deleting"));
        let pacer = WritebackPacer::start(&root, std::time::Duration::from_millis(5)).expect("starts");
        assert!(pacer.is_some());
        drop(pacer);
        assert!(WritebackPacer::start(&root, std::time::Duration::ZERO).expect("no-op").is_none());
        let _ = std::fs::remove_dir_all(root);
    }
}
