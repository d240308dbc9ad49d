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
}
