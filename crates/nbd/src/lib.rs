//! nandlab-nbd: the DHRD exported over the NBD protocol (the newstyle fixed handshake of
//! <https://github.com/NetworkBlockDevice/nbd/blob/master/doc/proto.md>, written from that
//! specification), so QEMU, qemu-img, nbdcopy or a kernel NBD client can use a DHRD without FUSE.
//! A Unix socket (mode 0600), or loopback TCP when the user agrees that every local user may
//! connect: NBD has no authentication. See docs/dhrd.md and docs/emulate.md.

mod address;
pub mod client;
mod connection;
mod device;
mod dhrd;
mod error;
mod export;
mod limits;
mod protocol;
mod queued;
mod server;
mod transmission;

pub use address::{NbdAddress, TCP_CONSENT_FLAG};
pub use device::{BlockDevice, BlockError, Command, CommandKind, Completion, DaemonInfo, QueueingDevice, Submission};
pub use error::NbdError;
pub use export::Export;
pub use limits::Limits;
pub use server::NbdServer;

/// Serves one client over any byte stream: the handshake, then requests until the client
/// disconnects, under `export`'s byte budget. The server runs the same two steps per socket; the
/// fuzz target (fuzz/src/lib.rs) runs this over bytes.
pub fn serve(
    device: &dyn BlockDevice,
    export: &Export,
    reader: impl std::io::BufRead,
    writer: impl std::io::Write + Send,
) -> Result<(), NbdError> {
    let budget = limits::ByteBudget::new(export.limits.max_buffered_bytes);
    let slots = limits::WorkerSlots::new(export.limits.max_request_threads);
    let mut connection = connection::Connection { reader, writer, device, export, budget: &budget, slots: &slots };
    if connection.handshake()? {
        connection.transmit()?;
    }
    Ok(())
}
