//! nandlab-fuse: the DHRD served over FUSE (the `fuser` crate). The mount holds `disk`, a file a
//! loop device can attach (the paper's DHRD is a block device under XFS; here it is a file under
//! FUSE direct I/O) and `stats`. See docs/dhrd.md.

mod daemon;
mod error;
mod fs;
mod holders;
mod nbd_args;
mod serve;
mod stop;

pub use daemon::{serve, serve_until_stopped, stop_signals, Ending, Frontends};
pub use error::FuseError;
pub use fs::{DISK_FILE_NAME, STATS_FILE_NAME};
pub use holders::disk_holders;
pub use nbd_args::NbdArgs;
pub use serve::{clear_stale_mount, mount, MountOptions, MountedDisk, ServeArgs, DEFAULT_THREADS};
pub use stop::{stop, StopArgs};
