//! The admission crate's error type: bad task files and bad parameters, each
//! naming the file, line, task and key where it can.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdmissionError {
    #[error("cannot read task set {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Toml { path: PathBuf, source: Box<toml::de::Error> },
    #[error("{path}:{line}: task {task:?}: key `{key}`: {reason}")]
    InvalidTask { path: PathBuf, line: usize, task: String, key: &'static str, reason: String },
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter { name: &'static str, reason: String },
}
