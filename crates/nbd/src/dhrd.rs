//! The DHRD as a [`BlockDevice`].

use std::io;
use std::path::Path;

use nandlab_dhrd::{Device, DhrdError};

use crate::device::{BlockDevice, BlockError, DaemonInfo};

impl From<DhrdError> for BlockError {
    fn from(err: DhrdError) -> BlockError {
        match err {
            DhrdError::OutOfRange { offset, end, size_bytes } => BlockError::OutOfRange { offset, end, size_bytes },
            DhrdError::Backing { source, .. } => {
                BlockError::Io(source.raw_os_error().map_or(source, io::Error::from_raw_os_error))
            }
            other => BlockError::Io(io::Error::other(other.to_string())),
        }
    }
}

/// FUA needs a flush only in write-back mode: the other modes are durable on return.
fn flush_for_fua(device: &Device, fua: bool) -> Result<(), BlockError> {
    if fua && !device.durability().acknowledges_durably() {
        Device::flush(device)?;
    }
    Ok(())
}

impl BlockDevice for Device {
    fn size_bytes(&self) -> u64 {
        Device::size_bytes(self)
    }

    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<(), BlockError> {
        Ok(Device::read_at(self, offset, buffer)?)
    }

    /// Straight from the RAM image: the only copy is the caller's.
    fn read_with(&self, offset: u64, len: usize, consume: &mut dyn FnMut(&[u8])) -> Result<(), BlockError> {
        Ok(self.read_in_place(offset, len, consume)?)
    }

    fn write_at(&self, offset: u64, data: &[u8], fua: bool) -> Result<(), BlockError> {
        Device::write_at(self, offset, data)?;
        flush_for_fua(self, fua)
    }

    fn discard(&self, offset: u64, len: u64, fua: bool) -> Result<(), BlockError> {
        Device::discard(self, offset, len)?;
        flush_for_fua(self, fua)
    }

    fn flush(&self) -> Result<(), BlockError> {
        Ok(Device::flush(self)?)
    }

    fn backing_path(&self) -> Option<&Path> {
        Some(Device::backing_path(self))
    }

    fn stats_text(&self, daemon: DaemonInfo) -> String {
        format!(
            "daemon_pid {}\ndaemon_stop_requested {}\n{}",
            daemon.pid,
            u8::from(daemon.stop_requested),
            self.stats()
        )
    }
}
