//! The capture crate's error type: each variant says which step failed and,
//! where the cause is the machine rather than the user, what is missing.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    #[error("capture needs root (loop devices, mkfs, mount and tracefs all do): run it as root or with sudo")]
    NotRoot,

    /// `package` is the Debian package that ships the tool, when known.
    #[error("`{tool}` is not installed{}", package.map(|name| format!(" (Debian package `{name}`)")).unwrap_or_default())]
    MissingTool { tool: String, package: Option<&'static str> },

    /// The kernel lacks something capture needs.
    #[error("the kernel cannot {what}: {detail}")]
    Kernel { what: &'static str, detail: String },

    /// An external tool ran and failed.
    #[error("{step} failed: `{command}` {status}{}", if stderr.is_empty() { String::new() } else { format!(": {stderr}") })]
    Tool { step: &'static str, command: String, status: String, stderr: String },

    #[error("{what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },

    #[error("interrupted by a signal; the loop device, mount and tracefs instance were cleaned up")]
    Interrupted,

    #[error("bad argument: {0}")]
    Argument(String),

    #[error(transparent)]
    Trace(#[from] nandlab_trace::TraceError),
}

impl CaptureError {
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> CaptureError {
        CaptureError::Io { what, path: path.into(), source }
    }
}
