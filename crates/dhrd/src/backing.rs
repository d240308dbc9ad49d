//! The backing store on a regular file or block device (the paper's "SSD", section 3.1):
//! positioned reads and writes, zeroing and syncs, with the descriptor flags that implement each
//! `Durability` mode; space reserved at open unless sparse. Holds an exclusive `flock` so two
//! daemons never mirror one store.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{fallocate, FallocateFlags, Flock, FlockArg};

use crate::aligned::{is_direct_aligned, AlignedBuf};
use crate::config::{validate_size, DeviceConfig, Durability};
use crate::error::{DhrdError, Result};
use crate::store::BackingStore;

/// Zero-filling a range that cannot be punched is done in pieces of this size.
const ZERO_FILL_PIECE_BYTES: usize = 1 << 20;

pub(crate) struct FileStore {
    path: PathBuf,
    size_bytes: u64,
    /// Holds the flock; `O_DSYNC` unless the mode is `WriteBack`. Serves every unaligned request.
    buffered: Flock<File>,
    /// `O_DIRECT | O_DSYNC`, present when the mode is `Direct` and the file system supports it.
    direct: Option<File>,
    durability: Durability,
    /// Space was reserved at open: zeroing keeps the blocks allocated instead of punching holes.
    reserved: bool,
}

thread_local! {
    /// Per-thread bounce buffer for O_DIRECT writes whose caller buffer is not page aligned.
    static BOUNCE: RefCell<AlignedBuf> = RefCell::new(AlignedBuf::zeroed(0));
}

impl FileStore {
    pub(crate) fn open(config: &DeviceConfig) -> Result<FileStore> {
        let path = config.backing_path.clone();
        let io_err = |action| {
            let path = path.clone();
            move |source| DhrdError::Backing { path, action, source }
        };
        let created = !path.exists();
        if created && config.size_bytes.is_none() {
            return Err(DhrdError::Config {
                key: "size_bytes",
                value: "unset".into(),
                reason: "the backing store does not exist yet, so the device size must be given",
            });
        }
        let sync_flag = if config.durability == Durability::WriteBack { 0 } else { libc::O_DSYNC };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            // The image holds everything users of the disk write: owner only until chmod says otherwise.
            .mode(0o600)
            .custom_flags(sync_flag)
            .open(&path)
            .map_err(io_err("open"))?;
        let buffered = Flock::lock(file, FlockArg::LockExclusiveNonblock)
            .map_err(|_| DhrdError::BackingInUse { path: path.clone() })?;
        let reserve = !config.sparse;
        let size_bytes = match prepare_size(&path, &buffered, config.size_bytes, reserve) {
            Ok(size) => size,
            Err(err) => {
                if created {
                    // Leave nothing half-made behind: the next attempt must not find a short file.
                    let _ = std::fs::remove_file(&path);
                }
                return Err(err);
            }
        };
        let direct = match config.durability {
            Durability::Direct => open_direct(&path).map_err(io_err("open with O_DIRECT"))?,
            Durability::Dsync | Durability::WriteBack => None,
        };
        Ok(FileStore { path, size_bytes, buffered, direct, durability: config.durability, reserved: reserve })
    }

    fn error(&self, action: &'static str) -> impl FnOnce(io::Error) -> DhrdError + '_ {
        move |source| DhrdError::Backing { path: self.path.clone(), action, source }
    }

    fn write_zeros(&self, offset: u64, len: u64) -> Result<()> {
        let zeros = vec![0u8; ZERO_FILL_PIECE_BYTES];
        let mut done = 0u64;
        while done < len {
            let piece = usize::try_from(len - done).map_or(zeros.len(), |n| n.min(zeros.len()));
            self.buffered.write_all_at(&zeros[..piece], offset + done).map_err(self.error("write zeros"))?;
            done += piece as u64;
        }
        Ok(())
    }
}

impl BackingStore for FileStore {
    fn path(&self) -> &Path {
        &self.path
    }

    fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    fn bypasses_page_cache(&self) -> bool {
        self.direct.is_some()
    }

    /// Reads into an arbitrary buffer (read case 2 of section 3.3.2 and mirror verification).
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.buffered.read_exact_at(buf, offset).map_err(self.error("read"))
    }

    /// Reads into a page-aligned buffer, bypassing the page cache when possible (the copier).
    fn read_aligned(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        match &self.direct {
            Some(direct) if is_direct_aligned(offset, buf.len()) => {
                direct.read_exact_at(buf, offset).map_err(self.error("O_DIRECT read"))
            }
            _ => self.read(offset, buf),
        }
    }

    /// Writes `data`; on return it is durable unless the mode is `WriteBack`.
    fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        match &self.direct {
            Some(direct) if is_direct_aligned(offset, data.len()) => BOUNCE.with(|bounce| {
                let mut bounce = bounce.borrow_mut();
                if bounce.as_slice().len() < data.len() {
                    *bounce = AlignedBuf::zeroed(data.len());
                }
                let staged = &mut bounce.as_mut_slice()[..data.len()];
                staged.copy_from_slice(data);
                direct.write_all_at(staged, offset).map_err(self.error("O_DIRECT write"))
            }),
            _ => self.buffered.write_all_at(data, offset).map_err(self.error("write")),
        }
    }

    /// Makes `offset..offset+len` read as zeros (DISCARD / WRITE ZEROES): punches a hole in a sparse
    /// store, zeroes the range in place (keeping the reservation) otherwise, and writes zeros where
    /// the store can do neither; durable on return unless the mode is `WriteBack`.
    fn zero(&self, offset: u64, len: u64) -> Result<()> {
        let flags = if self.reserved {
            FallocateFlags::FALLOC_FL_ZERO_RANGE | FallocateFlags::FALLOC_FL_KEEP_SIZE
        } else {
            FallocateFlags::FALLOC_FL_PUNCH_HOLE | FallocateFlags::FALLOC_FL_KEEP_SIZE
        };
        let zeroed = fallocate(&*self.buffered, flags, to_off_t(offset), to_off_t(len));
        match zeroed {
            Ok(()) => {
                // fallocate is metadata: O_DSYNC does not cover it, so sync explicitly.
                if self.durability.acknowledges_durably() {
                    self.sync()?;
                }
                Ok(())
            }
            Err(nix::errno::Errno::EOPNOTSUPP) => self.write_zeros(offset, len),
            Err(errno) => Err(self.error("fallocate(zero range / punch hole)")(io::Error::from(errno))),
        }
    }

    /// fdatasync: everything acknowledged so far is on durable media afterwards, in every mode.
    fn sync(&self) -> Result<()> {
        self.buffered.sync_data().map_err(self.error("fdatasync"))
    }
}

fn to_off_t(value: u64) -> libc::off_t {
    // Offsets are bounded by the device size, which came from a 64-bit file size.
    libc::off_t::try_from(value).unwrap_or(libc::off_t::MAX)
}

/// Returns the device size, growing a new regular file to the requested size; with `reserve`, the
/// whole size of a regular file is allocated now, so a full file system fails the start, not a
/// write later.
fn prepare_size(path: &Path, file: &File, requested: Option<u64>, reserve: bool) -> Result<u64> {
    let io_err = |action| move |source| DhrdError::Backing { path: path.to_path_buf(), action, source };
    let metadata = file.metadata().map_err(io_err("stat"))?;
    let actual = if metadata.file_type().is_block_device() {
        let mut handle = file;
        handle.seek(SeekFrom::End(0)).map_err(io_err("seek to end"))?
    } else {
        metadata.len()
    };
    let regular = !metadata.file_type().is_block_device();
    let size = match requested {
        None => actual,
        Some(size) if size == actual => size,
        Some(size) if actual == 0 && regular => {
            validate_size(size)?;
            if reserve {
                reserve_space(path, file, size)?;
            }
            file.set_len(size).map_err(io_err("set length"))?;
            file.sync_all().map_err(io_err("fsync after set length"))?;
            return Ok(size);
        }
        Some(size) => {
            return Err(DhrdError::SizeMismatch {
                path: path.to_path_buf(),
                actual_bytes: actual,
                expected_bytes: size,
            })
        }
    };
    validate_size(size)?;
    if reserve && regular {
        // An existing image may have holes (made sparse, or by discards): fill them.
        reserve_space(path, file, size)?;
        file.sync_all().map_err(io_err("fsync after reserving space"))?;
    }
    Ok(size)
}

/// Allocates `0..size` of `file` (holes only; data is untouched). Where the file system cannot
/// preallocate, checks that its free space could hold the size.
fn reserve_space(path: &Path, file: &File, size: u64) -> Result<()> {
    let no_space =
        |available_bytes| DhrdError::NoSpace { path: path.to_path_buf(), needed_bytes: size, available_bytes };
    let available = || {
        nix::sys::statvfs::fstatvfs(file)
            .map(|stats| stats.blocks_available().saturating_mul(stats.fragment_size()))
            .unwrap_or(0)
    };
    match fallocate(file, FallocateFlags::empty(), 0, to_off_t(size)) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::ENOSPC | nix::errno::Errno::EFBIG) => Err(no_space(available())),
        Err(nix::errno::Errno::EOPNOTSUPP) => {
            let allocated = file.metadata().map(|m| std::os::unix::fs::MetadataExt::blocks(&m) * 512).unwrap_or(0);
            let still_needed = size.saturating_sub(allocated);
            let free = available();
            if free < still_needed {
                Err(no_space(free))
            } else {
                Ok(())
            }
        }
        Err(errno) => Err(DhrdError::Backing {
            path: path.to_path_buf(),
            action: "fallocate (reserve space)",
            source: io::Error::from(errno),
        }),
    }
}

/// Opens the O_DIRECT descriptor; `None` on file systems that refuse O_DIRECT (e.g. older tmpfs).
fn open_direct(path: &Path) -> io::Result<Option<File>> {
    let opened = OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT | libc::O_DSYNC).open(path);
    match opened {
        Ok(file) => Ok(Some(file)),
        Err(err) if err.raw_os_error() == Some(libc::EINVAL) => Ok(None),
        Err(err) => Err(err),
    }
}
