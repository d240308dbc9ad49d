//! The admission crate's error type: bad task files and bad parameters, each
//! naming the file, line, task and key where it can.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdmissionError {
    // The causes are part of the message (not `source`), so that a report of
    // the error chain does not print them twice.
    #[error("cannot read {path}: {cause}")]
    Read { path: PathBuf, cause: std::io::Error },
    #[error("{path}: {cause}")]
    Toml { path: PathBuf, cause: Box<toml::de::Error> },
    #[error("{path}:{line}: task {task:?}: key `{key}`: {reason}")]
    InvalidTask { path: PathBuf, line: usize, task: String, key: &'static str, reason: String },
    #[error("{path}:{line}: more than {limit} tasks (the most a task file may hold)")]
    TooManyTasks { path: PathBuf, line: usize, limit: usize },
    #[error("{path}: key `{key}`: {reason}")]
    InvalidDevice { path: PathBuf, key: &'static str, reason: String },
    #[error("unknown device {spec:?}: not a preset (`telomere-1tb`, `1tb`, `cosmos`) nor an existing TOML file")]
    UnknownDevice { spec: String },
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter { name: &'static str, reason: String },
}
