//! What the emulated SSD stores: the bytes of its logical space, kept apart from the simulated
//! flash (which models where pages live and what that costs, not what they hold). Never-written and
//! discarded bytes read as zeros.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::EmulateError;

/// The bytes of a device of a fixed size.
///
/// Contract: callers keep every range inside the size given at creation; `zero` makes a range
/// read as zeros; `sync` returns once everything written before it is durable (a RAM store has
/// nothing durable and returns at once).
pub trait Contents: Send {
    fn read(&self, offset: u64, buffer: &mut [u8]) -> io::Result<()>;
    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    fn zero(&mut self, offset: u64, len: u64) -> io::Result<()>;
    fn sync(&mut self) -> io::Result<()>;
}

/// Bytes per piece of a [`RamContents`]: pieces never written hold no memory.
const PIECE_BYTES: u64 = 64 << 10;

/// Contents in memory, in pieces allocated when first written; lost when the process ends.
#[derive(Debug, Default)]
pub struct RamContents {
    pieces: HashMap<u64, Box<[u8]>>,
}

impl RamContents {
    /// Calls `each(piece, offset in piece, range of the request)` for every piece `offset..+len` touches.
    fn split(offset: u64, len: u64, mut each: impl FnMut(u64, usize, std::ops::Range<usize>)) {
        let mut done = 0u64;
        while done < len {
            let at = offset + done;
            let inside = at % PIECE_BYTES;
            let take = (PIECE_BYTES - inside).min(len - done);
            // Both are below PIECE_BYTES or the request's own length: the casts do not truncate.
            each(at / PIECE_BYTES, inside as usize, done as usize..(done + take) as usize);
            done += take;
        }
    }
}

impl Contents for RamContents {
    fn read(&self, offset: u64, buffer: &mut [u8]) -> io::Result<()> {
        Self::split(offset, buffer.len() as u64, |piece, inside, range| {
            let target = &mut buffer[range.clone()];
            match self.pieces.get(&piece) {
                Some(bytes) => target.copy_from_slice(&bytes[inside..inside + range.len()]),
                None => target.fill(0),
            }
        });
        Ok(())
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        Self::split(offset, data.len() as u64, |piece, inside, range| {
            let bytes = self.pieces.entry(piece).or_insert_with(|| vec![0; PIECE_BYTES as usize].into_boxed_slice());
            bytes[inside..inside + range.len()].copy_from_slice(&data[range]);
        });
        Ok(())
    }

    fn zero(&mut self, offset: u64, len: u64) -> io::Result<()> {
        Self::split(offset, len, |piece, inside, range| {
            if range.len() as u64 == PIECE_BYTES {
                self.pieces.remove(&piece);
            } else if let Some(bytes) = self.pieces.get_mut(&piece) {
                bytes[inside..inside + range.len()].fill(0);
            }
        });
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Contents in a sparse file of the device's size (created mode 0600): discards punch holes, so
/// the file holds only what was written.
#[derive(Debug)]
pub struct FileContents {
    file: File,
    path: PathBuf,
}

impl FileContents {
    /// Opens `path`, creating it (mode 0600) when missing; an existing file must have `size_bytes`.
    pub fn open(path: &Path, size_bytes: u64) -> Result<FileContents, EmulateError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(EmulateError::file(path, "open the data file"))?;
        let length = file.metadata().map_err(EmulateError::file(path, "stat the data file"))?.len();
        match length {
            0 => file.set_len(size_bytes).map_err(EmulateError::file(path, "size the data file"))?,
            length if length == size_bytes => {}
            length => {
                return Err(EmulateError::Invalid(format!(
                    "data file {} is {length} bytes, but the configured device holds {size_bytes}: \
                     give the configuration it was made with, or another file",
                    path.display()
                )))
            }
        }
        Ok(FileContents { file, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Contents for FileContents {
    fn read(&self, offset: u64, buffer: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buffer, offset)
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.file.write_all_at(data, offset)
    }

    fn zero(&mut self, offset: u64, len: u64) -> io::Result<()> {
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return Err(io::Error::from_raw_os_error(nix::libc::EINVAL));
        };
        let mode = nix::fcntl::FallocateFlags::FALLOC_FL_PUNCH_HOLE | nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE;
        nix::fcntl::fallocate(&self.file, mode, offset, len).map_err(io::Error::from)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise(contents: &mut dyn Contents) {
        let data: Vec<u8> = (0..200_000u32).map(|index| (index % 251) as u8 + 1).collect();
        contents.write(10_000, &data).expect("write");
        let mut back = vec![0; data.len()];
        contents.read(10_000, &mut back).expect("read");
        assert_eq!(back, data);
        contents.zero(20_000, 100_000).expect("zero");
        contents.read(10_000, &mut back).expect("read");
        assert!(back[10_000..110_000].iter().all(|&byte| byte == 0), "discarded bytes read as zeros");
        assert_eq!(back[..10_000], data[..10_000]);
        assert_eq!(back[110_000..], data[110_000..]);
        let mut never = vec![1; 4096];
        contents.read(1 << 20, &mut never).expect("read");
        assert!(never.iter().all(|&byte| byte == 0), "never-written bytes read as zeros");
        contents.sync().expect("sync");
    }

    #[test]
    fn ram_and_file_contents_keep_data_and_read_zeros_where_nothing_is() {
        exercise(&mut RamContents::default());
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("data");
        exercise(&mut FileContents::open(&path, 4 << 20).expect("create"));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777, 0o600);
        let error = FileContents::open(&path, 8 << 20).expect_err("size mismatch");
        assert!(error.to_string().contains("4194304 bytes"), "{error}");
    }
}
