//! The reporting error type: every variant names the file it concerns.

use std::path::PathBuf;

/// Errors from writing an output folder or drawing a chart.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    #[error("cannot create output folder {path}: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot write CSV {path}: {source}")]
    Csv { path: PathBuf, source: csv::Error },
    #[error("cannot serialize JSON for {path}: {source}")]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("cannot draw chart {name}: {message}")]
    Draw { name: String, message: String },
    #[error("chart {name}: {reason}")]
    InvalidChart { name: String, reason: String },
    #[error("file name {name:?} must be a plain file name (no folders, not empty)")]
    InvalidFileName { name: String },
}
