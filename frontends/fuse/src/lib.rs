//! nandlab-fuse: the DHRD served over FUSE (the `fuser` crate). The mount holds `disk`, a file a
//! loop device can attach (the paper's DHRD is a block device under XFS; here it is a file under
//! FUSE direct I/O) and `stats`. See docs/dhrd.md.

mod error;
mod fs;
mod serve;

pub use error::FuseError;
pub use fs::{DISK_FILE_NAME, STATS_FILE_NAME};
pub use serve::{mount, serve, MountOptions, MountedDisk, ServeArgs};
