//! nandlab-nbd: the DHRD exported over the NBD protocol (the newstyle fixed handshake of
//! <https://github.com/NetworkBlockDevice/nbd/blob/master/doc/proto.md>, written from that
//! specification), so QEMU, qemu-img, nbdcopy or a kernel NBD client can use a DHRD without FUSE.
//! Loopback TCP or a Unix socket only: NBD has no authentication. See docs/dhrd.md.

mod address;
mod connection;
mod device;
mod dhrd;
mod error;
mod protocol;
mod server;

pub use address::NbdAddress;
pub use device::{BlockDevice, BlockError, DaemonInfo};
pub use error::NbdError;
pub use server::{NbdServer, EXPORT_NAME};

/// Serves one client over any byte stream: the handshake, then requests until the client
/// disconnects. The server runs it per socket; the fuzz target (fuzz/src/lib.rs) over bytes.
pub fn serve(
    device: &dyn BlockDevice,
    reader: impl std::io::BufRead,
    writer: impl std::io::Write,
) -> Result<(), NbdError> {
    connection::Connection { reader, writer, device, export_name: EXPORT_NAME }.run()
}
