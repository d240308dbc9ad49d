//! Errors of the emulated SSD: its configuration, its files, and the simulation underneath.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmulateError {
    #[error(transparent)]
    Simulation(#[from] nandlab_core::SimError),
    #[error(transparent)]
    Trace(#[from] nandlab_trace::TraceError),
    #[error("{path}: {action}: {source}")]
    File {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The saved state does not belong to this configuration or was not saved cleanly.
    #[error("{path}: {message}")]
    State { path: PathBuf, message: String },
    #[error("{0}")]
    Invalid(String),
}

impl EmulateError {
    pub(crate) fn file(path: &std::path::Path, action: &'static str) -> impl FnOnce(std::io::Error) -> EmulateError {
        let path = path.to_path_buf();
        move |source| EmulateError::File { path, action, source }
    }
}
