//! The FUSE file system: a root directory holding `disk` (the DHRD, opened with FUSE direct I/O so
//! every read, aligned or not, reaches the RAM image without the page cache: the direct byte read
//! of section 3.4) and `stats` (a text snapshot of the device statistics, taken at open).
//!
//! Access control: the mount uses `default_permissions`, so the kernel checks every open, chmod and
//! chown against the attributes reported here. `disk` reports the backing store's own mode and
//! owner, and chmod/chown on `disk` change the backing store: whoever may use the DHRD may use its
//! durable copy and nobody else, and the setting survives a restart.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig,
    LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request,
    TimeOrNow, WriteFlags,
};
use nandlab_nbd::{BlockDevice, BlockError, DaemonInfo};

pub(crate) const DISK_INODE: INodeNo = INodeNo(2);
pub(crate) const STATS_INODE: INodeNo = INodeNo(3);
pub const DISK_FILE_NAME: &str = "disk";
pub const STATS_FILE_NAME: &str = "stats";

/// Nothing here changes behind the kernel's back, but the disk's mtime is not tracked: keep it short.
const ATTR_TTL: Duration = Duration::from_secs(1);
/// Largest write the kernel may send in one request (needs FUSE max_pages; older kernels cap lower).
const MAX_WRITE_BYTES: u32 = 1 << 20;

// fallocate(2) mode bits (linux/falloc.h).
const FALLOC_FL_KEEP_SIZE: i32 = 0x01;
const FALLOC_FL_PUNCH_HOLE: i32 = 0x02;
const FALLOC_FL_ZERO_RANGE: i32 = 0x10;

pub(crate) struct DiskFs {
    device: Arc<dyn BlockDevice>,
    stats_snapshots: Mutex<HashMap<u64, Arc<Vec<u8>>>>,
    next_handle: AtomicU64,
    mounted_at: SystemTime,
    /// The backing store, whose mode and owner `disk` reports and chmod/chown change (none: the
    /// daemon's user, 0600, unchangeable).
    backing_path: Option<PathBuf>,
    daemon_pid: u32,
    /// Raised by the daemon once it has been asked to stop; `stats` shows it.
    stop_requested: Arc<AtomicBool>,
    /// Request threads: the kernel may keep this many asynchronous requests in flight.
    threads: u16,
    uid: u32,
    gid: u32,
}

/// Permission bits and owner of one file.
struct Ownership {
    perm: u16,
    uid: u32,
    gid: u32,
}

impl DiskFs {
    pub(crate) fn new(device: Arc<dyn BlockDevice>, threads: u16, stop_requested: Arc<AtomicBool>) -> DiskFs {
        DiskFs {
            stats_snapshots: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            mounted_at: SystemTime::now(),
            backing_path: device.backing_path().map(std::path::Path::to_path_buf),
            device,
            daemon_pid: std::process::id(),
            stop_requested,
            threads,
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
        }
    }

    fn daemon_owned(&self, perm: u16) -> Ownership {
        Ownership { perm, uid: self.uid, gid: self.gid }
    }

    /// The backing store's permission bits and owner: what `disk` reports.
    fn disk_ownership(&self) -> Result<Ownership, Errno> {
        let Some(path) = &self.backing_path else {
            return Ok(self.daemon_owned(0o600));
        };
        let metadata = std::fs::metadata(path).map_err(|err| io_errno(&err))?;
        Ok(Ownership { perm: (metadata.mode() & 0o7777) as u16, uid: metadata.uid(), gid: metadata.gid() })
    }

    fn attr(&self, ino: INodeNo) -> Result<FileAttr, Errno> {
        let (kind, ownership, size, nlink) = match ino {
            INodeNo::ROOT => (FileType::Directory, self.daemon_owned(0o755), 0, 2),
            DISK_INODE => (FileType::RegularFile, self.disk_ownership()?, self.device.size_bytes(), 1),
            STATS_INODE => (FileType::RegularFile, self.daemon_owned(0o444), 0, 1),
            _ => return Err(Errno::ENOENT),
        };
        let Ownership { perm, uid, gid } = ownership;
        Ok(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: self.mounted_at,
            mtime: self.mounted_at,
            ctime: self.mounted_at,
            crtime: self.mounted_at,
            kind,
            perm,
            nlink,
            uid,
            gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    fn snapshots(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Vec<u8>>>> {
        self.stats_snapshots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn read_disk(&self, offset: u64, size: u32, reply: ReplyData) {
        let end = offset.saturating_add(u64::from(size)).min(self.device.size_bytes());
        let Some(len) = end.checked_sub(offset) else {
            reply.data(&[]);
            return;
        };
        let mut reply = Some(reply);
        // Reply straight from the RAM image: the only copy is the kernel's, into the reader's buffer.
        let served = self.device.read_with(offset, len as usize, &mut |bytes| {
            if let Some(reply) = reply.take() {
                reply.data(bytes);
            }
        });
        if let (Err(err), Some(reply)) = (served, reply) {
            reply.error(errno_of(&err));
        }
    }
}

/// Applies chmod and chown of `disk` to the backing store. The kernel has already checked that the
/// caller may (`default_permissions`); the daemon's own rights decide the rest (a daemon that is
/// not root cannot give the store away: EPERM).
fn change_ownership(
    path: &std::path::Path,
    mode: Option<u32>,
    uid: Option<u32>,
    gid: Option<u32>,
) -> Result<(), Errno> {
    if uid.is_some() || gid.is_some() {
        std::os::unix::fs::chown(path, uid, gid).map_err(|err| io_errno(&err))?;
    }
    if let Some(mode) = mode {
        let permissions = std::fs::Permissions::from_mode(mode & 0o7777);
        std::fs::set_permissions(path, permissions).map_err(|err| io_errno(&err))?;
    }
    Ok(())
}

fn io_errno(err: &std::io::Error) -> Errno {
    err.raw_os_error().map_or(Errno::EIO, Errno::from_i32)
}

fn errno_of(err: &BlockError) -> Errno {
    err.errno().map_or(Errno::ENOSPC, Errno::from_i32)
}

impl Filesystem for DiskFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // The kernel may refuse a large max_write; then it keeps its own limit, which is fine.
        let _ = config.set_max_write(MAX_WRITE_BYTES);
        // Asynchronous direct I/O lets AIO/io_uring readers keep several requests in flight;
        // an older kernel without it still works, one request per thread.
        let _ = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO);
        // The kernel's default of 12 asynchronous requests in flight would cap a queue depth of 16
        // below what the request threads can serve; match it to the threads instead.
        let _ = config.set_max_background(self.threads);
        let _ = config.set_congestion_threshold(self.threads.saturating_mul(3) / 4);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let ino = match (parent, name.to_str()) {
            (INodeNo::ROOT, Some(DISK_FILE_NAME)) => DISK_INODE,
            (INodeNo::ROOT, Some(STATS_FILE_NAME)) => STATS_INODE,
            _ => return reply.error(Errno::ENOENT),
        };
        match self.attr(ino) {
            Ok(attr) => reply.entry(&ATTR_TTL, &attr, Generation(0)),
            Err(errno) => reply.error(errno),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Ok(attr) => reply.attr(&ATTR_TTL, &attr),
            Err(errno) => reply.error(errno),
        }
    }

    /// chmod/chown of `disk` change the backing store (see the module comment); the root directory
    /// and `stats` refuse them (EPERM). The size is fixed; timestamps are not tracked.
    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let attr = match self.attr(ino) {
            Ok(attr) => attr,
            Err(errno) => return reply.error(errno),
        };
        if size.is_some_and(|size| size != attr.size) {
            return reply.error(Errno::EPERM);
        }
        let changes_ownership = mode.is_some() || uid.is_some() || gid.is_some();
        if !changes_ownership {
            return reply.attr(&ATTR_TTL, &attr);
        }
        if ino != DISK_INODE {
            return reply.error(Errno::EPERM);
        }
        let Some(path) = &self.backing_path else {
            return reply.error(Errno::EPERM);
        };
        match change_ownership(path, mode, uid, gid).and_then(|()| self.attr(ino)) {
            Ok(attr) => reply.attr(&ATTR_TTL, &attr),
            Err(errno) => reply.error(errno),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match ino {
            // Writes to different chunks proceed in parallel inside the device, so let the kernel
            // send concurrent direct writes instead of serialising them on the inode lock.
            DISK_INODE => {
                reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES)
            }
            STATS_INODE => {
                let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
                let stop_requested = self.stop_requested.load(Ordering::Acquire);
                let text = self.device.stats_text(DaemonInfo { pid: self.daemon_pid, stop_requested }).into_bytes();
                self.snapshots().insert(handle, Arc::new(text));
                reply.opened(FileHandle(handle), FopenFlags::FOPEN_DIRECT_IO);
            }
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match ino {
            DISK_INODE => self.read_disk(offset, size, reply),
            STATS_INODE => {
                let Some(text) = self.snapshots().get(&fh.0).cloned() else {
                    return reply.error(Errno::EBADF);
                };
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(text.len());
                let end = start.saturating_add(size as usize).min(text.len());
                reply.data(&text[start..end]);
            }
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if ino != DISK_INODE {
            return reply.error(Errno::EBADF);
        }
        // A block device accepts the part that fits and reports ENOSPC at the end.
        let room = self.device.size_bytes().saturating_sub(offset);
        let len = data.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if len == 0 && !data.is_empty() {
            return reply.error(Errno::ENOSPC);
        }
        // A file opened O_DSYNC (or O_SYNC) writes with FUA.
        let fua = flags.0 & libc::O_DSYNC != 0;
        match self.device.write_at(offset, &data[..len], fua) {
            Ok(()) => reply.written(len as u32),
            Err(err) => reply.error(errno_of(&err)),
        }
    }

    /// close(2): durable modes have nothing pending; write-back mode syncs so close-to-durable holds.
    fn flush(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _owner: LockOwner, reply: ReplyEmpty) {
        self.fsync(_req, ino, _fh, true, reply);
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if ino == STATS_INODE {
            self.snapshots().remove(&fh.0);
        }
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        if ino != DISK_INODE {
            return reply.ok();
        }
        match self.device.flush() {
            Ok(()) => reply.ok(),
            Err(err) => reply.error(errno_of(&err)),
        }
    }

    /// Punch-hole and zero-range are DISCARD / WRITE ZEROES for the loop driver; plain allocation
    /// inside the fixed size is a no-op.
    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if ino != DISK_INODE {
            return reply.error(Errno::EBADF);
        }
        let in_range = offset.checked_add(length).is_some_and(|end| end <= self.device.size_bytes());
        let zeroing = mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE) != 0;
        let known = mode & !(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE) == 0;
        let result = match (known, in_range, zeroing) {
            (false, _, _) => Err(Errno::EOPNOTSUPP),
            (true, false, _) => Err(Errno::ENOSPC),
            (true, true, false) => Ok(()),
            (true, true, true) => self.device.discard(offset, length, false).map_err(|err| errno_of(&err)),
        };
        match result {
            Ok(()) => reply.ok(),
            Err(errno) => reply.error(errno),
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (DISK_INODE, FileType::RegularFile, DISK_FILE_NAME),
            (STATS_INODE, FileType::RegularFile, STATS_FILE_NAME),
        ];
        for (index, (entry_ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*entry_ino, index as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}
