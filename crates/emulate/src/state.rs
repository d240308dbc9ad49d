//! The emulated device's saved state, so a restart on the same data resumes it. The state is the
//! device's request history (a native trace, `STATE.nlt`) and a small JSON file (`STATE`) naming the
//! configuration it belongs to, how many requests each session served and at which pace, and
//! whether the last session stopped cleanly. A restart runs every session's requests again, each
//! session as it ran (its own live device, counting or through the timing engine at the recorded
//! arrival times, ended as its stop ended it): the simulation is deterministic, so the translation
//! layer, the host stages, the background GC a paced device did and every count come back exactly
//! as the clean stop left them, without a serialization format for every layer's internals.
//!
//! A start that fails leaves the state as it found it: the state is marked in use only once the
//! device is open ([`State::mark_in_use`]), and a start given up after that puts the clean mark
//! back ([`State::restore`]).

use std::fs;
use std::path::{Path, PathBuf};

use nandlab_core::Config;
use nandlab_trace::Access;
use serde::{Deserialize, Serialize};

use crate::error::EmulateError;
use crate::pace::Pace;

/// Version of the JSON file's layout. 2: `sessions` (a version-1 file's history ran as one
/// counting session, as it was restored then).
const STATE_VERSION: u32 = 2;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct StateFile {
    version: u32,
    /// The configuration the history was made with (seed included).
    config: serde_json::Value,
    /// The last session ended with a clean stop: the history holds every request it served.
    clean: bool,
    requests: u64,
    /// The history's last timestamp: the next session's times continue after it.
    last_timestamp_ns: u64,
    /// The sessions the history holds, in order.
    #[serde(default)]
    sessions: Vec<SavedSession>,
}

/// One session of the history: its requests (the next `requests` records) and its pace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedSession {
    pub requests: u64,
    pub pace: Pace,
}

/// An opened state: where its files are and what the previous sessions left.
#[derive(Debug)]
pub struct State {
    path: PathBuf,
    /// What the file held when the start found it (`None`: no file, a new device).
    found: Option<StateFile>,
    config: serde_json::Value,
}

impl State {
    /// Opens the state at `path` for `config`: a missing file starts a new device; an existing one
    /// must belong to `config` and have been saved by a clean stop. Writes nothing.
    pub fn open(path: &Path, config: &Config) -> Result<State, EmulateError> {
        let config = serde_json::to_value(config).map_err(|error| EmulateError::Invalid(error.to_string()))?;
        let mut state = State { path: path.to_path_buf(), found: None, config };
        if path.exists() {
            let text = fs::read_to_string(path).map_err(EmulateError::file(path, "read the saved state"))?;
            let mut saved: StateFile = serde_json::from_str(&text)
                .map_err(|error| EmulateError::State { path: path.to_path_buf(), message: error.to_string() })?;
            state.check(&saved)?;
            if saved.version == 1 {
                saved.sessions = vec![SavedSession { requests: saved.requests, pace: Pace::None }];
            }
            state.check_sessions(&saved)?;
            state.found = Some(saved);
        }
        Ok(state)
    }

    fn refuse(&self, message: String) -> EmulateError {
        EmulateError::State { path: self.path.clone(), message }
    }

    fn check(&self, saved: &StateFile) -> Result<(), EmulateError> {
        if !(1..=STATE_VERSION).contains(&saved.version) {
            return Err(
                self.refuse(format!("state version {} (this nandlab reads 1 to {STATE_VERSION})", saved.version))
            );
        }
        if !saved.clean {
            return Err(self.refuse(
                "the last session did not stop cleanly, so the translation layer's state is lost; \
                 the data file is intact: move the state aside to start the simulated flash afresh"
                    .to_owned(),
            ));
        }
        if saved.config != self.config {
            return Err(self.refuse(
                "the saved state belongs to another configuration or seed; give the one it was made with".to_owned(),
            ));
        }
        Ok(())
    }

    fn check_sessions(&self, saved: &StateFile) -> Result<(), EmulateError> {
        let total = saved.sessions.iter().try_fold(0_u64, |total, session| total.checked_add(session.requests));
        if total == Some(saved.requests) {
            Ok(())
        } else {
            Err(self.refuse(format!("its sessions do not add up to its {} requests", saved.requests)))
        }
    }

    /// The sessions the saved history holds, in order (none for a new device).
    pub fn previous_sessions(&self) -> &[SavedSession] {
        self.found.as_ref().map_or(&[], |found| &found.sessions)
    }

    /// The history to replay, when a previous session saved one.
    pub fn previous_history(&self) -> Option<PathBuf> {
        self.found.as_ref().map(|_| self.history_path())
    }

    /// The saved history's last timestamp (0 for a new device).
    pub fn last_timestamp_ns(&self) -> u64 {
        self.found.as_ref().map_or(0, |found| found.last_timestamp_ns)
    }

    /// Where the history trace lives.
    pub fn history_path(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".nlt");
        PathBuf::from(name)
    }

    /// Marks the state in use (not clean) until [`Self::save`] or [`Self::restore`]: a session
    /// killed after this leaves a state the next start refuses.
    pub fn mark_in_use(&self) -> Result<(), EmulateError> {
        let mut file = self.found.clone().unwrap_or_else(|| self.empty());
        file.clean = false;
        self.write(&file)
    }

    /// Puts back what the start found (a start given up before serving a request): the clean
    /// state, or no file for a new device.
    pub fn restore(&self) -> Result<(), EmulateError> {
        match &self.found {
            Some(found) => self.write(found),
            None => fs::remove_file(&self.path).map_err(EmulateError::file(&self.path, "remove the unused state")),
        }
    }

    /// Records a clean stop: the history (already finished) holds the previous sessions and then
    /// `session`, whose last request came at `last_timestamp_ns`.
    pub fn save(&self, session: SavedSession, last_timestamp_ns: u64) -> Result<(), EmulateError> {
        let mut file = self.found.clone().unwrap_or_else(|| self.empty());
        file.version = STATE_VERSION;
        file.clean = true;
        file.requests = file.requests.saturating_add(session.requests);
        file.last_timestamp_ns = last_timestamp_ns;
        file.sessions.push(session);
        self.write(&file)
    }

    fn empty(&self) -> StateFile {
        StateFile {
            version: STATE_VERSION,
            config: self.config.clone(),
            clean: true,
            requests: 0,
            last_timestamp_ns: 0,
            sessions: Vec::new(),
        }
    }

    /// Replaces the JSON file atomically (a crash leaves the old one or the new one), mode 0600,
    /// its temporary file 0600 and gone on every exit path ([`nandlab_trace::OutputPath`]).
    fn write(&self, file: &StateFile) -> Result<(), EmulateError> {
        let text = serde_json::to_vec_pretty(file).map_err(|error| EmulateError::Invalid(error.to_string()))?;
        nandlab_trace::write_output_with(&self.path, &text, Access::Private)
            .map_err(EmulateError::file(&self.path, "write the state"))
    }
}
