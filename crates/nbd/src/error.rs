//! Errors of the NBD export: bad listen addresses, socket failures, protocol violations by a client.

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NbdError {
    #[error("NBD address {text:?}: {reason}")]
    Address { text: String, reason: String },
    #[error("NBD {action} failed: {source}")]
    Io {
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("NBD client broke the protocol: {0}")]
    Protocol(String),
    #[error("NBD export limits: {0}")]
    Limits(String),
}

pub(crate) fn io(action: &'static str) -> impl FnOnce(std::io::Error) -> NbdError {
    move |source| NbdError::Io { action, source }
}
