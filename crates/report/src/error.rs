//! The reporting error type: every variant names the file it concerns.

use std::path::PathBuf;

/// Errors from writing an output folder or drawing a chart. Causes are part
/// of the message (not `source`), so an error-chain report prints them once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    #[error("cannot create output folder {path}: {cause}")]
    CreateDir { path: PathBuf, cause: std::io::Error },
    #[error("cannot write {path}: {cause}")]
    Write { path: PathBuf, cause: std::io::Error },
    #[error("cannot write CSV {path}: {cause}")]
    Csv { path: PathBuf, cause: csv::Error },
    #[error("cannot serialize JSON for {path}: {cause}")]
    Json { path: PathBuf, cause: serde_json::Error },
    #[error("cannot draw chart {name}: {message}")]
    Draw { name: String, message: String },
    #[error("chart {name}: {reason}")]
    InvalidChart { name: String, reason: String },
    #[error("table {name}: {reason}")]
    Table { name: String, reason: String },
    #[error("file name {name:?} must be a plain file name (no folders, not empty)")]
    InvalidFileName { name: String },
}
