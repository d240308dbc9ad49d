//! The emulated device's saved state, so a restart on the same data resumes it. The state is the
//! device's request history (a native trace, `STATE.nlt`) and a small JSON file (`STATE`) naming the
//! configuration it belongs to and whether the last session stopped cleanly. A restart replays the
//! history in counting mode: the simulation is deterministic, so the translation layer, the host
//! stages and every count come back exactly as the clean stop left them, at a few million requests
//! a second, without a serialization format for every layer's internals.

use std::fs;
use std::path::{Path, PathBuf};

use nandlab_core::Config;
use nandlab_trace::Access;
use serde::{Deserialize, Serialize};

use crate::error::EmulateError;

/// Version of the JSON file's layout.
const STATE_VERSION: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
struct StateFile {
    version: u32,
    /// The configuration the history was made with (seed included).
    config: serde_json::Value,
    /// The last session ended with a clean stop: the history holds every request it served.
    clean: bool,
    requests: u64,
    /// The history's last timestamp: the next session's times continue after it.
    last_timestamp_ns: u64,
}

/// An opened state: where its files are and what the previous session left.
#[derive(Debug)]
pub struct State {
    path: PathBuf,
    config: serde_json::Value,
    /// The history to replay, when a previous session saved one.
    pub previous_history: Option<PathBuf>,
    /// Requests in the previous history.
    pub previous_requests: u64,
    pub last_timestamp_ns: u64,
}

impl State {
    /// Opens the state at `path` for `config`: a missing file starts a new device; an existing one
    /// must belong to `config` and have been saved by a clean stop. Marks the state as in use (not
    /// clean) until [`Self::save`].
    pub fn open(path: &Path, config: &Config) -> Result<State, EmulateError> {
        let config = serde_json::to_value(config).map_err(|error| EmulateError::Invalid(error.to_string()))?;
        let mut state = State {
            path: path.to_path_buf(),
            config,
            previous_history: None,
            previous_requests: 0,
            last_timestamp_ns: 0,
        };
        if path.exists() {
            let text = fs::read_to_string(path).map_err(EmulateError::file(path, "read the saved state"))?;
            let saved: StateFile = serde_json::from_str(&text)
                .map_err(|error| EmulateError::State { path: path.to_path_buf(), message: error.to_string() })?;
            state.check(&saved)?;
            state.previous_history = Some(state.history_path());
            state.previous_requests = saved.requests;
            state.last_timestamp_ns = saved.last_timestamp_ns;
        }
        state.write(false, state.previous_requests, state.last_timestamp_ns)?;
        Ok(state)
    }

    fn check(&self, saved: &StateFile) -> Result<(), EmulateError> {
        let refuse = |message: String| Err(EmulateError::State { path: self.path.clone(), message });
        if saved.version != STATE_VERSION {
            return refuse(format!("state version {} (this nandlab writes {STATE_VERSION})", saved.version));
        }
        if !saved.clean {
            return refuse(
                "the last session did not stop cleanly, so the translation layer's state is lost; \
                 the data file is intact: move the state aside to start the simulated flash afresh"
                    .to_owned(),
            );
        }
        if saved.config != self.config {
            return refuse(
                "the saved state belongs to another configuration or seed; give the one it was made with".to_owned(),
            );
        }
        Ok(())
    }

    /// Where the history trace lives.
    pub fn history_path(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".nlt");
        PathBuf::from(name)
    }

    /// Records a clean stop: the history (already finished) holds `requests` requests.
    pub fn save(&self, requests: u64, last_timestamp_ns: u64) -> Result<(), EmulateError> {
        self.write(true, requests, last_timestamp_ns)
    }

    /// Replaces the JSON file atomically (a crash leaves the old one or the new one), mode 0600,
    /// its temporary file 0600 and gone on every exit path ([`nandlab_trace::OutputPath`]).
    fn write(&self, clean: bool, requests: u64, last_timestamp_ns: u64) -> Result<(), EmulateError> {
        let file =
            StateFile { version: STATE_VERSION, config: self.config.clone(), clean, requests, last_timestamp_ns };
        let text = serde_json::to_vec_pretty(&file).map_err(|error| EmulateError::Invalid(error.to_string()))?;
        nandlab_trace::write_output_with(&self.path, &text, Access::Private)
            .map_err(EmulateError::file(&self.path, "write the state"))
    }
}
