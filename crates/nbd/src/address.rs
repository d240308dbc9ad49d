//! Where the export listens: a loopback TCP address or a Unix socket path. Anything reachable from
//! other machines is refused, because NBD carries no authentication.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::NbdError;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NbdAddress {
    /// `127.0.0.1:10809`, `[::1]:10809`, `localhost:10809` (port 0 picks a free port).
    Tcp(SocketAddr),
    /// `unix:/run/dhrd.sock` or any path starting with `/` or `.`.
    Unix(PathBuf),
}

impl FromStr for NbdAddress {
    type Err = NbdError;

    fn from_str(text: &str) -> Result<Self, NbdError> {
        let refuse = |reason: &str| NbdError::Address { text: text.to_owned(), reason: reason.to_owned() };
        if let Some(path) = text.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(refuse("empty Unix socket path"));
            }
            return Ok(NbdAddress::Unix(PathBuf::from(path)));
        }
        if text.starts_with('/') || text.starts_with('.') {
            return Ok(NbdAddress::Unix(PathBuf::from(text)));
        }
        let resolved: Vec<SocketAddr> =
            text.to_socket_addrs().map_err(|err| refuse(&format!("not HOST:PORT or unix:PATH ({err})")))?.collect();
        match resolved.iter().find(|address| address.ip().is_loopback()) {
            Some(address) => Ok(NbdAddress::Tcp(*address)),
            None => Err(refuse(
                "NBD has no authentication, so the export listens only on a loopback address \
                 (127.0.0.1, ::1) or a Unix socket; tunnel it (ssh -L) to reach it from elsewhere",
            )),
        }
    }
}

/// The flag by which a user agrees to a TCP export ([`NbdAddress::require_consent`]).
pub const TCP_CONSENT_FLAG: &str = "--nbd-allow-local-users";

impl NbdAddress {
    /// A TCP export can be reached by every user of this machine, who can then read and write the
    /// disk (NBD has no authentication), while a Unix socket (mode 0600) admits only its owner: a
    /// TCP address is refused unless the user said so with [`TCP_CONSENT_FLAG`].
    pub fn require_consent(&self, allow_local_users: bool) -> Result<(), NbdError> {
        match self {
            NbdAddress::Tcp(_) if !allow_local_users => Err(NbdError::Address {
                text: self.to_string(),
                reason: format!(
                    "every user of this machine could connect over TCP and read and write the disk; \
                     use a Unix socket (unix:PATH, mode 0600) or add {TCP_CONSENT_FLAG}"
                ),
            }),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for NbdAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NbdAddress::Tcp(address) => write!(f, "{address}"),
            NbdAddress::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_and_unix_sockets_are_accepted() {
        assert!(matches!("127.0.0.1:10809".parse(), Ok(NbdAddress::Tcp(_))));
        assert!(matches!("[::1]:0".parse(), Ok(NbdAddress::Tcp(_))));
        assert_eq!("unix:/run/d.sock".parse::<NbdAddress>().ok(), Some(NbdAddress::Unix("/run/d.sock".into())));
        assert!(matches!("/tmp/x.sock".parse(), Ok(NbdAddress::Unix(_))));
        let refused = "0.0.0.0:10809".parse::<NbdAddress>();
        assert!(refused.is_err_and(|err| err.to_string().contains("loopback")));
        assert!("nonsense".parse::<NbdAddress>().is_err());
        assert!("unix:".parse::<NbdAddress>().is_err());
    }

    #[test]
    fn tcp_needs_consent_and_a_unix_socket_does_not() {
        let tcp: NbdAddress = "127.0.0.1:10809".parse().expect("loopback TCP");
        assert!(tcp.require_consent(false).is_err_and(|err| err.to_string().contains(TCP_CONSENT_FLAG)));
        assert!(tcp.require_consent(true).is_ok());
        let unix: NbdAddress = "unix:/run/d.sock".parse().expect("Unix socket");
        assert!(unix.require_consent(false).is_ok());
    }
}
