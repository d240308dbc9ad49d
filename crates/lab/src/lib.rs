//! nandlab lab: the paper experiments as a library, for the `nandlab` CLI and
//! the Python package alike.
//!
//! - [`advise`]: one trace under every mechanism that applies, ranked by the flash life it gives;
//! - [`document`]: the JSON document of a run (`schema_version`, the report, `wall_s`);
//! - [`registry`]: every `reproduce` experiment by name, with its
//!   description, whether it needs root and a rough run time;
//! - [`replay`]: a trace file onto the simulated SSD through the one driver
//!   (any translation layer, aging first), in counting or timed mode,
//!   watched by an [`Observer`] that may stop it;
//! - [`table`]: a trace file as columns (one row per request);
//! - [`provenance`]: version, commit, date, kernel, machine, command line and
//!   wall time, recorded in every report;
//! - [`shared`]: what experiments share (cached captures, device configurations);
//! - `experiments`: one module per paper.
//!
//! Errors are typed ([`Error`]); progress and cancellation go through [`Observer`].

pub mod advise;
mod args;
pub mod document;
mod drive;
pub mod error;
mod experiments;
pub mod provenance;
pub mod registry;
pub mod replay;
pub mod shared;
pub mod table;

pub use args::ExperimentArgs;
pub use drive::Report;
pub use error::{Error, Result};
pub use experiments::periodic_run::{simulate_admitted, AdmittedRun, TaskThroughput, SIMULATE_S_MAX};
pub use nandlab_core::sim::{Phase, Progress};
pub use registry::{reproduce, Reproduced, EXPERIMENTS};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Watches a long run: sees its progress and may stop it.
///
/// Contract: a run calls [`Observer::progress`] at least every
/// [`OBSERVER_INTERVAL`] requests, between requests, never from another
/// thread. Returning an error (normally [`Error::Cancelled`]) stops the run
/// at that point and the run returns the error; the partial result is
/// dropped. An observer never changes what a completed run computes.
pub trait Observer {
    fn progress(&mut self, progress: Progress) -> Result<()>;
}

/// Requests between two calls of an [`Observer`]: often enough that Ctrl-C
/// is answered within milliseconds even for 1 MiB requests (256 of them take
/// about 20 ms to simulate), rare enough to cost nothing.
pub const OBSERVER_INTERVAL: u64 = 256;

impl<F: FnMut(Progress) -> Result<()>> Observer for F {
    fn progress(&mut self, progress: Progress) -> Result<()> {
        self(progress)
    }
}

/// A flag another thread raises to stop a run (Ctrl-C, a dropped caller).
/// As an [`Observer`] it answers [`Error::Cancelled`] once raised.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    pub fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err(Error::Cancelled)` once raised.
    pub fn check(&self) -> Result<()> {
        if self.is_raised() {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }
}

impl Observer for Interrupt {
    fn progress(&mut self, _: Progress) -> Result<()> {
        self.check()
    }
}

/// Makes the display of one run's progress (the CLI: a bar on stderr that
/// clears itself when dropped).
pub type DisplayFactory = dyn Fn() -> Box<dyn Observer> + Send + Sync;

/// What watches an experiment's runs: an [`Interrupt`] that stops them and,
/// optionally, a fresh progress display for each.
#[derive(Clone, Default)]
pub struct Watch {
    pub interrupt: Interrupt,
    display: Option<Arc<DisplayFactory>>,
}

impl Watch {
    /// Each run's progress also goes to a display `make` creates for it.
    #[must_use]
    pub fn with_display(mut self, make: impl Fn() -> Box<dyn Observer> + Send + Sync + 'static) -> Self {
        self.display = Some(Arc::new(make));
        self
    }

    /// The observer of one run: it stops the run once the interrupt is
    /// raised, and feeds a display of its own, dropped when the run ends.
    pub fn observer(&self) -> impl Observer {
        RunWatch { interrupt: self.interrupt.clone(), display: self.display.as_ref().map(|make| make()) }
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").field("interrupt", &self.interrupt).field("display", &self.display.is_some()).finish()
    }
}

struct RunWatch {
    interrupt: Interrupt,
    display: Option<Box<dyn Observer>>,
}

impl Observer for RunWatch {
    fn progress(&mut self, progress: Progress) -> Result<()> {
        self.interrupt.check()?;
        self.display.as_mut().map_or(Ok(()), |display| display.progress(progress))
    }
}
