//! Output files, the one way nandlab writes a file a user named (`--json`,
//! `--csv`, `--parquet`, `trace convert IN OUT`, `reproduce` folders, the
//! emulated device's state, the Python front end). What happens depends on
//! what the target is:
//!
//! - a new path, or an existing regular file: the bytes go to an anonymous
//!   temporary file (`O_TMPFILE`, else a `.NAME.PID.tmp` file) in the same
//!   folder, created mode 0600; at [`OutputPath::commit`] it is fsynced, given
//!   its final mode (the replaced file's, or 0666 less the umask for a new
//!   file, as the shell's `>` does), renamed over the target, and the folder
//!   fsynced. A failed or killed run never leaves a truncated file, never
//!   destroys the file it would have replaced, and (with `O_TMPFILE`) leaves
//!   no temporary file behind even after `SIGKILL`;
//! - a symbolic link to a regular file: the same, on the link's final target;
//!   the link stays a link;
//! - anything else that exists (a character or block device such as
//!   `/dev/null`, a FIFO, a symbolic link to one, `/dev/stdout`, and any file
//!   reached through `/proc`, whose links name open files rather than paths):
//!   written in place, as the shell's `>` would. Renaming over it would
//!   replace the system's `/dev/null` with a regular file when run as root.

use std::ffi::{CString, OsString};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Mode of a temporary file while it is written: only its owner can read it.
const TEMPORARY_MODE: u32 = 0o600;
/// Mode a new output file is created with before the umask, as `open(2)` callers such as the shell use.
const NEW_FILE_MODE: u32 = 0o666;

/// Who may read an output once it is in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A replaced file keeps its mode; a new file gets 0666 less the umask.
    Usual,
    /// Mode 0600 whatever was there: the emulated device's state and history,
    /// which record what its user wrote.
    Private,
}

/// An output being written: [`OutputPath::commit`] puts it in place; dropped
/// uncommitted, a temporary file is removed and the target left as it was.
#[derive(Debug)]
pub struct OutputPath {
    target: PathBuf,
    how: Placement,
}

#[derive(Debug)]
enum Placement {
    /// Written straight into the target (device, FIFO, `/proc` link).
    InPlace,
    /// Written to a temporary file that replaces `path` at commit.
    Replace { path: PathBuf, temporary: Temporary, file: File, mode: u32 },
}

#[derive(Debug)]
enum Temporary {
    /// An `O_TMPFILE` file: it has no name until commit links it in.
    Anonymous,
    /// A named file, removed if the output is not committed.
    Named(PathBuf),
}

impl OutputPath {
    /// Opens `target` for writing as the module header says and returns the
    /// file to write into.
    pub fn create(target: &Path) -> std::io::Result<(OutputPath, File)> {
        Self::create_with(target, Access::Usual)
    }

    /// [`Self::create`] with the final mode `access` says.
    pub fn create_with(target: &Path, access: Access) -> std::io::Result<(OutputPath, File)> {
        let private = (access == Access::Private).then_some(TEMPORARY_MODE);
        let (how, file) = match existing(target)? {
            Existing::Special => (Placement::InPlace, open_in_place(target)?),
            Existing::Regular { path, mode } => replace(path, private.unwrap_or(mode))?,
            Existing::Nothing => replace(target.to_path_buf(), private.unwrap_or(NEW_FILE_MODE & !umask()))?,
        };
        Ok((OutputPath { target: target.to_path_buf(), how }, file))
    }

    /// The path the output was asked for (a link, not its target).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Puts the output in place. The caller has flushed its buffers into the
    /// file; a temporary file is fsynced, given its mode, named, renamed over
    /// the target, and its folder fsynced.
    pub fn commit(mut self) -> std::io::Result<()> {
        let Placement::Replace { path, temporary, file, mode } = std::mem::replace(&mut self.how, Placement::InPlace)
        else {
            return Ok(());
        };
        let mut named = match temporary {
            Temporary::Named(name) => Some(name),
            Temporary::Anonymous => None,
        };
        let placed = place(&file, mode, &path, &mut named);
        if let (Err(_), Some(name)) = (&placed, &named) {
            let _ = std::fs::remove_file(name);
        }
        placed?;
        File::open(folder_of(&path))?.sync_all()
    }
}

/// Fsyncs `file`, gives it `mode`, names it (an anonymous file gets its name
/// into `named`) and renames it over `path`.
fn place(file: &File, mode: u32, path: &Path, named: &mut Option<PathBuf>) -> std::io::Result<()> {
    file.sync_all()?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    let name = match named {
        Some(name) => name.clone(),
        None => named.insert(link_anonymous(file, path)?).clone(),
    };
    std::fs::rename(&name, path)
}

impl Drop for OutputPath {
    fn drop(&mut self) {
        if let Placement::Replace { temporary: Temporary::Named(name), .. } = &self.how {
            // Best effort: the temporary file is ours and incomplete.
            let _ = std::fs::remove_file(name);
        }
    }
}

/// What `target` is now, as far as writing it goes.
enum Existing {
    Nothing,
    /// A regular file at `path` (a symbolic link resolved), with its permission bits.
    Regular {
        path: PathBuf,
        mode: u32,
    },
    /// Anything written in place.
    Special,
}

fn existing(target: &Path) -> std::io::Result<Existing> {
    let metadata = match std::fs::metadata(target) {
        Ok(metadata) => metadata,
        // A dangling link is written through (its target created), like `>`.
        Err(error) if error.kind() == ErrorKind::NotFound => {
            return Ok(if std::fs::symlink_metadata(target).is_ok() { Existing::Special } else { Existing::Nothing });
        }
        Err(error) => return Err(error),
    };
    if metadata.is_dir() {
        return Err(std::io::Error::new(ErrorKind::IsADirectory, "is a directory"));
    }
    if !metadata.is_file() {
        return Ok(Existing::Special);
    }
    Ok(match final_path(target)? {
        Some(path) => Existing::Regular { path, mode: metadata.permissions().mode() & 0o7777 },
        None => Existing::Special,
    })
}

/// Symbolic links followed before giving up, as the kernel's `MAXSYMLINKS`.
const LINK_HOPS_MAX: usize = 40;

/// The path of the file `target` names once every symbolic link on the way
/// is followed; `None` when the way passes through `/proc`, whose links
/// (`/dev/stdout`, `/dev/fd/N`) name open files and must be written in place.
fn final_path(target: &Path) -> std::io::Result<Option<PathBuf>> {
    let mut path = target.to_path_buf();
    for _ in 0..LINK_HOPS_MAX {
        let folder = std::fs::canonicalize(folder_of(&path))?;
        let name = path.file_name().ok_or_else(|| std::io::Error::new(ErrorKind::InvalidInput, "not a file name"))?;
        let here = folder.join(name);
        if here.starts_with("/proc") {
            return Ok(None);
        }
        if !std::fs::symlink_metadata(&here)?.file_type().is_symlink() {
            return Ok(Some(if path == target { path } else { here }));
        }
        path = folder.join(std::fs::read_link(&here)?);
    }
    Err(std::io::Error::new(ErrorKind::InvalidInput, "too many levels of symbolic links"))
}

/// Opens an existing device, FIFO or `/proc` link for writing. A FIFO's open
/// waits for its reader, as the shell's `>` does. Nothing is truncated but a
/// regular file reached through `/proc` (`/dev/stdout` redirected to a file),
/// which is appended to so that `>>` keeps what was there.
fn open_in_place(target: &Path) -> std::io::Result<File> {
    let regular = std::fs::metadata(target).is_ok_and(|metadata| metadata.is_file());
    OpenOptions::new().write(true).append(regular).create(true).mode(NEW_FILE_MODE).open(target)
}

/// A temporary file next to `path` that will replace it.
fn replace(path: PathBuf, mode: u32) -> std::io::Result<(Placement, File)> {
    let folder = folder_of(&path);
    let anonymous = OpenOptions::new().write(true).custom_flags(libc::O_TMPFILE).mode(TEMPORARY_MODE).open(&folder);
    let (temporary, file) = match anonymous {
        Ok(file) => (Temporary::Anonymous, file),
        // File systems without O_TMPFILE (FUSE, NFS, old kernels): a named temporary file.
        Err(error) if matches!(error.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)) => {
            let name = temporary_name(&path)?;
            let file = OpenOptions::new().write(true).create_new(true).mode(TEMPORARY_MODE).open(&name)?;
            (Temporary::Named(name), file)
        }
        Err(error) => return Err(error),
    };
    let writer = file.try_clone()?;
    Ok((Placement::Replace { path, temporary, file, mode }, writer))
}

/// Gives an `O_TMPFILE` file the name [`temporary_name`] of `path` (renamed
/// over `path` next). `AT_EMPTY_PATH` needs `CAP_DAC_READ_SEARCH`; without it
/// the file is linked through its `/proc/self/fd` link.
#[allow(unsafe_code, reason = "linkat(2) has no safe wrapper in std")]
fn link_anonymous(file: &File, path: &Path) -> std::io::Result<PathBuf> {
    let name = temporary_name(path)?;
    let to = c_path(&name)?;
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is an open descriptor and both strings are NUL-terminated and outlive the calls.
    let linked = unsafe { libc::linkat(fd, c"".as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::AT_EMPTY_PATH) };
    if linked == 0 {
        return Ok(name);
    }
    let from = c_path(Path::new(&format!("/proc/self/fd/{fd}")))?;
    // SAFETY: as above.
    let linked =
        unsafe { libc::linkat(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::AT_SYMLINK_FOLLOW) };
    if linked == 0 {
        Ok(name)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn c_path(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| std::io::Error::new(ErrorKind::InvalidInput, "NUL in path"))
}

/// `.NAME.PID.tmp` next to `path`.
fn temporary_name(path: &Path) -> std::io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| std::io::Error::new(ErrorKind::InvalidInput, "not a file name"))?;
    let mut temporary = OsString::from(".");
    temporary.push(name);
    temporary.push(format!(".{}.tmp", std::process::id()));
    Ok(path.with_file_name(temporary))
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The process's umask, read from `/proc/self/status` (setting it to read it
/// would race with other threads creating files); 022 where that is unknown.
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = status.lines().find_map(|line| line.strip_prefix("Umask:"));
    field.and_then(|octal| u32::from_str_radix(octal.trim(), 8).ok()).unwrap_or(0o022)
}

/// A buffered output file; [`OutputFile::commit`] flushes it and puts it in place.
#[derive(Debug)]
pub struct OutputFile {
    output: BufWriter<File>,
    path: OutputPath,
}

impl OutputFile {
    pub fn create(target: &Path) -> std::io::Result<OutputFile> {
        Self::create_with(target, Access::Usual)
    }

    pub fn create_with(target: &Path, access: Access) -> std::io::Result<OutputFile> {
        let (path, file) = OutputPath::create_with(target, access)?;
        Ok(OutputFile { output: BufWriter::with_capacity(1 << 20, file), path })
    }

    pub fn commit(mut self) -> std::io::Result<()> {
        self.output.flush()?;
        self.path.commit()
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.output.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.output.flush()
    }
}

/// Writes `bytes` to `target` as an [`OutputFile`].
pub fn write_output(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_output_with(target, bytes, Access::Usual)
}

/// [`write_output`] with the final mode `access` says.
pub fn write_output_with(target: &Path, bytes: &[u8], access: Access) -> std::io::Result<()> {
    let mut file = OutputFile::create_with(target, access)?;
    file.write_all(bytes)?;
    file.commit()
}
