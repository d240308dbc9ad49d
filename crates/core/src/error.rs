//! The configuration error every floor returns: which key, and why. It lives at the
//! ground floor, beside the units, so that the parts a configuration key configures
//! (device, translation layers, host stages, workloads, timing) check their own keys
//! without importing the configuration that gathers them.

use std::fmt;

/// A configuration problem: which key, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    pub reason: String,
}

impl ConfigError {
    pub fn new(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { key: key.into(), reason: reason.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Keys and reasons may hold what the user gave (a --set key, a parser's message
        // quoting a TOML line): shown bounded and escaped.
        let reason = nandlab_quote::bound_message(&self.reason);
        if self.key.is_empty() {
            write!(f, "configuration: {reason}")
        } else {
            write!(f, "configuration key `{}`: {reason}", nandlab_quote::quote(&self.key))
        }
    }
}

impl std::error::Error for ConfigError {}
