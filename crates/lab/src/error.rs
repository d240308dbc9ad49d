//! The one error type of the lab crate. Each library the experiments drive
//! keeps its own error, wrapped here unchanged; [`Context`] adds what was
//! being done (a file, a trace, a setting) on the way up, and a front end
//! prints the whole chain (`{error:#}` through anyhow, `source()` otherwise).

/// Errors of experiments, replays and their helpers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration key is unknown, mistyped or impossible.
    #[error(transparent)]
    Config(#[from] nandlab_core::ConfigError),
    /// A simulation or replay could not go on (e.g. the device is full).
    #[error(transparent)]
    Simulation(#[from] nandlab_core::SimError),
    /// The Telomere simulation's FTL refused an operation.
    #[error(transparent)]
    Ftl(#[from] nandlab_core::ftl::FtlError),
    /// The Telomere placement FTL refused an operation.
    #[error(transparent)]
    Telomere(#[from] nandlab_core::ftl::telomere::TelomereError),
    /// A periodic task set could not be turned into a workload.
    #[error(transparent)]
    Periodic(#[from] nandlab_core::workload::periodic::PeriodicError),
    /// A trace could not be read.
    #[error(transparent)]
    Trace(#[from] nandlab_trace::TraceError),
    /// A capture on a loop device failed (often: not root).
    #[error(transparent)]
    Capture(#[from] nandlab_capture::CaptureError),
    /// Data, plots or the summary could not be written.
    #[error(transparent)]
    Report(#[from] nandlab_report::ReportError),
    /// The DHRD device or its benchmark failed.
    #[error(transparent)]
    Dhrd(#[from] nandlab_dhrd::DhrdError),
    /// Telomere admission control rejected its input.
    #[error(transparent)]
    Admission(#[from] nandlab_admission::AdmissionError),
    /// A file could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// JSON could not be written.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A number does not fit where it goes.
    #[error(transparent)]
    OutOfRange(#[from] std::num::TryFromIntError),
    /// A `--set` value is not a number.
    #[error(transparent)]
    NotANumber(#[from] std::num::ParseFloatError),
    /// The caller's input is unusable: an unknown experiment, a `--set` key an
    /// experiment does not take, a missing option.
    #[error("{0}")]
    Invalid(String),
    /// An experiment could not produce its result.
    #[error("{0}")]
    Failed(String),
    /// The caller's progress observer asked to stop (Ctrl-C in Python).
    #[error("interrupted")]
    Cancelled,
    /// What was being done when `source` happened.
    #[error("{context}")]
    Context {
        context: String,
        #[source]
        source: Box<Error>,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether the run stopped because the observer asked it to, under any
    /// amount of context.
    pub fn is_cancelled(&self) -> bool {
        match self {
            Self::Cancelled => true,
            Self::Context { source, .. } => source.is_cancelled(),
            _ => false,
        }
    }

    /// The innermost error under every [`Error::Context`], to tell its kind.
    pub fn root(&self) -> &Self {
        match self {
            Self::Context { source, .. } => source.root(),
            other => other,
        }
    }
}

/// `anyhow::Context` for the lab's typed error: wraps a failure in what was
/// being done, or turns a `None` into [`Error::Failed`].
pub trait Context<T> {
    fn context(self, context: impl Into<String>) -> Result<T>;
    fn with_context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|error| Error::Context { context: context.into(), source: Box::new(error.into()) })
    }

    fn with_context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|error| Error::Context { context: context().into(), source: Box::new(error.into()) })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.ok_or_else(|| Error::Failed(context.into()))
    }

    fn with_context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T> {
        self.ok_or_else(|| Error::Failed(context().into()))
    }
}

/// `error: cause: cause …`, as anyhow's `{:#}` prints it.
pub fn error_chain(error: &Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_the_cause_and_cancellation_shows_through_it() {
        let io: std::io::Result<()> = Err(std::io::Error::from(std::io::ErrorKind::NotFound));
        let error = io.context("reading t.nlt").expect_err("an error");
        assert_eq!(error.to_string(), "reading t.nlt");
        assert!(std::error::Error::source(&error).is_some_and(|cause| cause.to_string().contains("not found")));
        assert!(!error.is_cancelled());
        let cancelled: Result<()> = Err(Error::Cancelled);
        assert!(cancelled.context("replaying").expect_err("an error").is_cancelled());
        assert!(
            matches!(None::<u8>.context("no plan").expect_err("an error"), Error::Failed(message) if message == "no plan")
        );
    }
}
