//! The NBD options every serving command shares (`nandlab dhrd serve`, `nandlab emulate`): where to
//! listen, the consent TCP needs, and the limits the export holds its clients to.

use nandlab_dhrd::parse_byte_size;
use nandlab_nbd::{Export, NbdAddress, NbdError};

/// [`nandlab_nbd::Limits`]' default, as the flag's type holds it.
const DEFAULT_MAX_CONNECTIONS: u16 = 256;

/// NBD export options.
#[derive(clap::Args, Clone, Debug)]
pub struct NbdArgs {
    /// Also (or only) export the device over NBD: unix:PATH (a socket created mode 0600; QEMU:
    /// `nbd+unix:///NAME?socket=PATH`), or 127.0.0.1:PORT / [::1]:PORT with
    /// --nbd-allow-local-users. Never beyond loopback: NBD has no authentication.
    #[arg(long, value_name = "ADDR")]
    pub nbd: Option<NbdAddress>,
    /// Allow a TCP --nbd address. Every user of this machine can then connect and read and write
    /// the disk; a Unix socket admits only this user.
    #[arg(long)]
    pub nbd_allow_local_users: bool,
    /// NBD clients served at once; more are disconnected at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub nbd_max_connections: u16,
    /// Bytes of NBD read and write data held in memory by all clients together (at least 32MiB,
    /// one largest request); a request past it waits for others to be answered.
    #[arg(long, value_name = "BYTES", default_value = "256MiB", value_parser = parse_byte_size)]
    pub nbd_max_buffered: u64,
}

impl NbdArgs {
    /// Where to listen and what to export there, or `None` without --nbd; refuses TCP without
    /// consent.
    pub fn export(&self, name: &str, description: &str) -> Result<Option<(&NbdAddress, Export)>, NbdError> {
        let Some(address) = &self.nbd else { return Ok(None) };
        address.require_consent(self.nbd_allow_local_users)?;
        let mut export = Export::new(name, description);
        export.limits.max_connections = usize::from(self.nbd_max_connections);
        export.limits.max_buffered_bytes = self.nbd_max_buffered;
        Ok(Some((address, export)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_default_is_the_library_default() {
        assert_eq!(usize::from(DEFAULT_MAX_CONNECTIONS), nandlab_nbd::Limits::default().max_connections);
        assert_eq!(parse_byte_size("256MiB").ok(), Some(nandlab_nbd::Limits::default().max_buffered_bytes));
    }
}
