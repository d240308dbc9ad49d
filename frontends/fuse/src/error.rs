//! Errors of the FUSE front end: mounting, unmounting and the device underneath.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FuseError {
    #[error(transparent)]
    Device(#[from] nandlab_dhrd::DhrdError),
    #[error(transparent)]
    Nbd(#[from] nandlab_nbd::NbdError),
    #[error("mount point {path}: {action} failed: {source}")]
    Mount {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{0} is already a mount point (is another DHRD serving it?); unmount it first")]
    MountPointBusy(PathBuf),
    #[error("mount point {0} is not an existing directory")]
    MountPointMissing(PathBuf),
    #[error("installing the SIGINT/SIGTERM handler failed: {0}")]
    Signals(#[source] std::io::Error),
    #[error("{path} is not served by a running DHRD daemon: {reason}")]
    NotServed { path: PathBuf, reason: String },
    #[error("signalling daemon {pid} failed: {source}")]
    Signal {
        pid: i32,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "daemon {pid} is still serving: {holders}; the stop stays requested (it exits once the disk \
         is released), or stop it at once with --force"
    )]
    StillServing { pid: i32, holders: String },
}
