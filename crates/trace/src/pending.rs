//! Output files that appear under their name only when complete: written
//! under a temporary name in the same folder, renamed over the target at the
//! end, removed if the writing fails. A failed conversion or run never leaves
//! a truncated file, nor destroys the file it would have replaced.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A temporary path that is renamed to its target by [`PendingPath::commit`]
/// and removed when dropped uncommitted.
#[derive(Debug)]
pub struct PendingPath {
    temp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl PendingPath {
    /// Creates the temporary file (mode 0644 less umask, never an existing one).
    pub fn create(target: &Path) -> std::io::Result<(PendingPath, File)> {
        let name = target
            .file_name()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"))?;
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".{}.tmp", std::process::id()));
        let temp = target.with_file_name(temp_name);
        let file = File::options().write(true).create_new(true).open(&temp)?;
        Ok((PendingPath { temp, target: target.to_path_buf(), committed: false }, file))
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames the temporary file to the target.
    pub fn commit(mut self) -> std::io::Result<()> {
        std::fs::rename(&self.temp, &self.target)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for PendingPath {
    fn drop(&mut self) {
        if !self.committed {
            // Best effort: the temporary file is ours and incomplete.
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// A buffered output file under a temporary name; [`PendingFile::commit`]
/// flushes it and puts it in place.
#[derive(Debug)]
pub struct PendingFile {
    output: BufWriter<File>,
    path: PendingPath,
}

impl PendingFile {
    pub fn create(target: &Path) -> std::io::Result<PendingFile> {
        let (path, file) = PendingPath::create(target)?;
        Ok(PendingFile { output: BufWriter::with_capacity(1 << 20, file), path })
    }

    pub fn commit(mut self) -> std::io::Result<()> {
        self.output.flush()?;
        self.path.commit()
    }
}

impl Write for PendingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.output.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.output.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_replaces_its_target_only_when_committed() {
        let folder = std::env::temp_dir().join(format!("nandlab-pending-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let target = folder.join("keep.txt");
        std::fs::write(&target, "precious").unwrap();
        let mut abandoned = PendingFile::create(&target).unwrap();
        abandoned.write_all(b"half").unwrap();
        drop(abandoned);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        let mut finished = PendingFile::create(&target).unwrap();
        finished.write_all(b"new").unwrap();
        finished.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 1, "no temporary file is left behind");
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
