//! Telomere's task model (Section 3.1, Table 1) and the task-set TOML format.
//!
//! A task τ_i reads r_i pages every read period T_i^r, writes w_i pages every
//! write period T_i^w, and its data stays valid for l_i^w write periods.
//!
//! ```toml
//! [[task]]
//! name = "tau0"
//! read_pages = 16        # r_i (0 or absent: the task does not read)
//! read_period_ms = 20    # T_i^r
//! write_pages = 16       # w_i (0 or absent: the task does not write)
//! write_period_ms = 80   # T_i^w
//! lifetime_periods = 250 # l_i^w
//! ```

use crate::AdmissionError;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// A periodic job: `pages` flash pages every `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Periodic {
    pub pages: u64,
    pub period: Duration,
}

/// One task τ_i.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub name: String,
    /// r_i and T_i^r; `None` when the task does not read.
    pub read: Option<Periodic>,
    /// w_i and T_i^w; `None` when the task does not write.
    pub write: Option<Periodic>,
    /// l_i^w: write periods after which written data expires.
    pub lifetime_periods: u64,
}

impl Task {
    /// A task that only writes (the storage examples of Section 4).
    #[must_use]
    pub fn writer(name: &str, pages: u64, period: Duration, lifetime_periods: u64) -> Self {
        Self { name: name.to_owned(), read: None, write: Some(Periodic { pages, period }), lifetime_periods }
    }

    /// w_i (0 for a task that does not write).
    #[must_use]
    pub fn write_pages(&self) -> u64 {
        self.write.map_or(0, |write| write.pages)
    }

    /// How long a written page occupies flash: T_i^w · (l_i^w + 1), the sort key
    /// of Algorithm 1 (the extra period is eq. (4)'s).
    #[must_use]
    pub fn data_lifetime(&self) -> Duration {
        self.write.map_or(Duration::ZERO, |write| saturating_mul(write.period, self.lifetime_periods.saturating_add(1)))
    }

    /// Write rate w_i / T_i^w in pages per second.
    #[must_use]
    pub fn write_pages_per_second(&self) -> f64 {
        self.write.map_or(0.0, |write| pages_per_second(write.pages, write.period))
    }

    /// Read rate r_i / T_i^r in pages per second.
    #[must_use]
    pub fn read_pages_per_second(&self) -> f64 {
        self.read.map_or(0.0, |read| pages_per_second(read.pages, read.period))
    }
}

#[allow(clippy::cast_precision_loss)]
fn pages_per_second(pages: u64, period: Duration) -> f64 {
    pages as f64 / period.as_secs_f64()
}

fn saturating_mul(duration: Duration, factor: u64) -> Duration {
    u32::try_from(factor).ok().and_then(|factor| duration.checked_mul(factor)).unwrap_or(Duration::MAX)
}

/// The tasks of one task file, in file order (the order `open()` would see them).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TaskSet {
    pub tasks: Vec<Task>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    task: Vec<toml::Spanned<RawTask>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: Option<String>,
    #[serde(default)]
    read_pages: u64,
    read_period_ms: Option<f64>,
    #[serde(default)]
    write_pages: u64,
    write_period_ms: Option<f64>,
    #[serde(default)]
    lifetime_periods: u64,
}

impl TaskSet {
    /// Reads a task-set TOML file (format in the module documentation).
    pub fn load(path: &Path) -> Result<Self, AdmissionError> {
        let text =
            std::fs::read_to_string(path).map_err(|cause| AdmissionError::Read { path: path.to_owned(), cause })?;
        Self::parse(&text, path)
    }

    /// Parses task-set TOML; `path` only labels errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, AdmissionError> {
        let raw: RawFile = toml::from_str(text)
            .map_err(|cause| AdmissionError::Toml { path: path.to_owned(), cause: Box::new(cause) })?;
        let tasks = raw
            .task
            .into_iter()
            .enumerate()
            .map(|(index, spanned)| {
                let line = text[..spanned.span().start.min(text.len())].matches('\n').count() + 1;
                let raw = spanned.into_inner();
                let name = raw.name.clone().unwrap_or_else(|| format!("task{index}"));
                let invalid = |key, reason: &str| AdmissionError::InvalidTask {
                    path: path.to_owned(),
                    line,
                    task: name.clone(),
                    key,
                    reason: reason.to_owned(),
                };
                let read =
                    periodic(raw.read_pages, raw.read_period_ms).map_err(|reason| invalid("read_period_ms", reason))?;
                let write = periodic(raw.write_pages, raw.write_period_ms)
                    .map_err(|reason| invalid("write_period_ms", reason))?;
                if write.is_some() && raw.lifetime_periods == 0 {
                    return Err(invalid(
                        "lifetime_periods",
                        "a writing task needs a data lifetime of at least 1 write period",
                    ));
                }
                if read.is_none() && write.is_none() {
                    return Err(invalid("write_pages", "the task neither reads nor writes"));
                }
                Ok(Task { name, read, write, lifetime_periods: raw.lifetime_periods })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { tasks })
    }

    /// The task set as TOML in the format [`TaskSet::parse`] reads.
    #[must_use]
    pub fn to_toml(&self) -> String {
        let mut text = String::new();
        for task in &self.tasks {
            text.push_str(&format!("[[task]]\nname = {:?}\n", task.name));
            for (prefix, job) in [("read", task.read), ("write", task.write)] {
                if let Some(job) = job {
                    let period_ms = job.period.as_secs_f64() * 1e3;
                    text.push_str(&format!("{prefix}_pages = {}\n{prefix}_period_ms = {period_ms}\n", job.pages));
                }
            }
            text.push_str(&format!("lifetime_periods = {}\n\n", task.lifetime_periods));
        }
        text
    }
}

/// A job from `pages` and a period in milliseconds; no pages and no (or a zero)
/// period means "no such job", as Table 3 writes "0 0" for tasks that do not read.
fn periodic(pages: u64, period_ms: Option<f64>) -> Result<Option<Periodic>, &'static str> {
    match (pages, period_ms) {
        (0, None) => Ok(None),
        (0, Some(0.0)) => Ok(None),
        (0, Some(_)) => Err("a period is given but the task moves 0 pages"),
        (_, None) => Err("pages are given without a period"),
        (_, Some(period)) if !(period.is_finite() && period > 0.0) => {
            Err("the period must be a positive number of milliseconds")
        }
        (_, Some(period)) => Ok(Some(Periodic { pages, period: Duration::from_secs_f64(period / 1e3) })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE_3: &str = include_str!("../tasksets/table3.toml");

    #[test]
    fn parses_tasks_and_round_trips_through_toml() {
        let set = TaskSet::parse(TABLE_3, Path::new("table3.toml")).expect("valid task set");
        assert_eq!(set.tasks.len(), 6);
        assert_eq!(set.tasks[0].read, Some(Periodic { pages: 16, period: Duration::from_millis(20) }));
        assert_eq!(set.tasks[3].read, None, "Table 3 writes \"0 0\" for a task that does not read");
        assert_eq!(set.tasks[5].read, None);
        assert_eq!(set.tasks[3].data_lifetime(), Duration::from_millis(40 * 991));
        let again = TaskSet::parse(&set.to_toml(), Path::new("again.toml")).expect("round trip");
        assert_eq!(again, set);
    }

    #[test]
    fn errors_name_file_line_task_and_key() {
        let text = "[[task]]\nname = \"a\"\nwrite_pages = 4\nwrite_period_ms = 9\nlifetime_periods = 9\n\n[[task]]\nname = \"b\"\nwrite_pages = 3\nlifetime_periods = 7\n";
        let error = TaskSet::parse(text, Path::new("set.toml")).expect_err("missing period").to_string();
        assert_eq!(error, "set.toml:7: task \"b\": key `write_period_ms`: pages are given without a period");
        let unknown =
            TaskSet::parse("[[task]]\nwrite_page = 3\n", Path::new("u.toml")).expect_err("unknown key").to_string();
        assert!(unknown.contains("u.toml") && unknown.contains("write_page"), "{unknown}");
    }
}
