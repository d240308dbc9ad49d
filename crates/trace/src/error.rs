//! The one error type of the trace crate. Every variant names the file and,
//! where there is one, the line or byte offset, so a user can go and look.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },

    /// A line of a text trace that does not parse.
    #[error("{}:{line}: {message}", path.display())]
    Malformed { path: PathBuf, line: u64, message: String },

    /// A native trace whose bytes do not decode.
    #[error("{}: byte {offset}: {message}", path.display())]
    Corrupt { path: PathBuf, offset: u64, message: String },

    #[error("{}: cannot tell the trace format from its content ({hint}); name it with --format", path.display())]
    UnknownFormat { path: PathBuf, hint: String },

    #[error("unknown trace format `{name}` (known: {known})")]
    UnknownFormatName { name: String, known: String },

    #[error("{}: the {format} format cannot be written", path.display())]
    NotWritable { path: PathBuf, format: &'static str },

    #[error("{}: {message}", path.display())]
    Unrepresentable { path: PathBuf, message: String },
}

impl TraceError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> TraceError {
        TraceError::Io { path: path.into(), source }
    }
}
