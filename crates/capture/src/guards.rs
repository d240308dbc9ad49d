//! Drop guards for everything a capture sets up on the machine: a work
//! directory (with the sparse image), a loop device, a mount. Each undoes
//! its step when dropped — on success, on error, on a signal — and reports
//! a failed undo on stderr, since a destructor cannot return an error.

use crate::error::CaptureError;
use crate::system::run_tool;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A directory that is removed with everything in it.
pub(crate) struct WorkDir {
    pub(crate) path: PathBuf,
}

impl WorkDir {
    pub(crate) fn create(parent: &Path, tag: &str) -> Result<WorkDir, CaptureError> {
        let path = parent.join(format!("nandlab-capture-{tag}"));
        std::fs::create_dir_all(&path)
            .map_err(|error| CaptureError::io("creating the work directory", &path, error))?;
        Ok(WorkDir { path })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_dir_all(&self.path) {
            eprintln!("capture cleanup: could not remove {}: {error}", self.path.display());
        }
    }
}

/// A loop device attached to an image file.
pub(crate) struct LoopDevice {
    pub(crate) device: String,
    losetup: PathBuf,
}

impl LoopDevice {
    pub(crate) fn attach(losetup: PathBuf, image: &Path) -> Result<LoopDevice, CaptureError> {
        let image = image.to_string_lossy();
        let device = run_tool("attaching a loop device", &losetup, &["--find", "--show", &image])?.trim().to_owned();
        if !device.starts_with("/dev/") {
            return Err(CaptureError::Kernel {
                what: "attach a loop device",
                detail: format!("losetup printed `{device}`"),
            });
        }
        Ok(LoopDevice { device, losetup })
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        if let Err(error) = run_tool("detaching the loop device", &self.losetup, &["--detach", &self.device]) {
            eprintln!("capture cleanup: {error}");
        }
    }
}

/// A mounted file system. `unmount` is the normal way out (its I/O is part
/// of the trace); dropping unmounts as a fallback, lazily if it is busy.
pub(crate) struct Mount {
    pub(crate) point: PathBuf,
    umount: PathBuf,
    mounted: bool,
}

impl Mount {
    pub(crate) fn create(
        mount: &Path,
        umount: PathBuf,
        file_system: &str,
        options: &str,
        device: &str,
        point: &Path,
    ) -> Result<Mount, CaptureError> {
        std::fs::create_dir_all(point).map_err(|error| CaptureError::io("creating the mount point", point, error))?;
        let point_text = point.to_string_lossy();
        let mut args = vec!["-t", file_system];
        if !options.is_empty() {
            args.extend(["-o", options]);
        }
        args.extend([device, &point_text]);
        run_tool("mounting the file system", mount, &args)?;
        Ok(Mount { point: point.to_path_buf(), umount, mounted: true })
    }

    pub(crate) fn unmount(&mut self) -> Result<(), CaptureError> {
        let point = self.point.to_string_lossy().into_owned();
        let mut last_error = None;
        // A workload's last process may still be exiting and hold the
        // mount busy for a moment.
        for _ in 0..20 {
            match run_tool("unmounting the file system", &self.umount, &[&point]) {
                Ok(_) => {
                    self.mounted = false;
                    return Ok(());
                }
                Err(error) => last_error = Some(error),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(last_error.unwrap_or(CaptureError::Interrupted))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if self.mounted && self.unmount().is_err() {
            let point = self.point.to_string_lossy().into_owned();
            if let Err(error) = run_tool("unmounting lazily", &self.umount, &["--lazy", &point]) {
                eprintln!("capture cleanup: {error}");
            }
        }
    }
}
