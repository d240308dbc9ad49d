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
//!
//! Every number is range-checked: pages from 0 to [`PAGES_PER_JOB_MAX`],
//! periods from [`PERIOD_MS_MIN`] to [`PERIOD_MS_MAX`] ms, lifetimes from 1 to
//! [`LIFETIME_PERIODS_MAX`] periods; task names are unique.

use crate::limits::{integer, real, Number};
use crate::{toml_file, AdmissionError};
use nandlab_convert::f64_of;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
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

fn pages_per_second(pages: u64, period: Duration) -> f64 {
    f64_of(pages) / period.as_secs_f64()
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

/// Largest r_i or w_i a task file may give: 2^32 pages (16 TiB of 4 KiB pages).
pub const PAGES_PER_JOB_MAX: u64 = 1 << 32;
/// Shortest period a task file may give: 1 µs, the resolution periods are kept in.
pub const PERIOD_MS_MIN: f64 = 0.001;
/// Longest period a task file may give: 10^10 ms, about 116 days.
pub const PERIOD_MS_MAX: f64 = 1e10;
/// Most tasks a task file may hold (docs/telomere.md, "Cost and limit"):
/// parsing and the report are linear, admission O(n log n) but for SharP
/// sets whose partition boundaries shift at every admission (quadratic).
pub const TASKS_MAX: usize = 100_000;
/// Largest l_i^w a task file may give. With the limits above, w_i·(l_i^w + 1)
/// and T_i^w·(l_i^w + 1) stay far inside u64 pages and nanoseconds·10^9.
pub const LIFETIME_PERIODS_MAX: u64 = 1_000_000_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: Option<String>,
    read_pages: Option<Number>,
    read_period_ms: Option<Number>,
    write_pages: Option<Number>,
    write_period_ms: Option<Number>,
    lifetime_periods: Option<Number>,
}

type KeyError = (&'static str, String);

impl RawTask {
    fn into_task(self, name: String) -> Result<Task, KeyError> {
        let read = periodic(("read_pages", self.read_pages), ("read_period_ms", self.read_period_ms))?;
        let write = periodic(("write_pages", self.write_pages), ("write_period_ms", self.write_period_ms))?;
        let lifetime_periods = match self.lifetime_periods {
            Some(value) => integer(value, 0, LIFETIME_PERIODS_MAX).map_err(|reason| ("lifetime_periods", reason))?,
            None => 0,
        };
        if write.is_some() && lifetime_periods == 0 {
            return Err((
                "lifetime_periods",
                "a writing task needs a data lifetime of at least 1 write period".to_owned(),
            ));
        }
        if read.is_none() && write.is_none() {
            return Err(("write_pages", "the task neither reads nor writes".to_owned()));
        }
        Ok(Task { name, read, write, lifetime_periods })
    }
}

impl TaskSet {
    /// Reads a task-set TOML file (format in the module documentation).
    pub fn load(path: &Path) -> Result<Self, AdmissionError> {
        Self::parse(&toml_file::read(path)?, path)
    }

    /// Parses task-set TOML; `path` only labels errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, AdmissionError> {
        let raw: RawFile = toml_file::parse(text, path)?;
        let mut lines = LineCounter::new(text);
        if let Some(first_beyond) = raw.task.get(TASKS_MAX) {
            return Err(AdmissionError::TooManyTasks {
                path: path.to_owned(),
                line: lines.line_at(first_beyond.span().start),
                limit: TASKS_MAX,
            });
        }
        let mut first_line: HashMap<String, usize> = HashMap::new();
        let mut tasks = Vec::with_capacity(raw.task.len());
        for (index, spanned) in raw.task.into_iter().enumerate() {
            let line = lines.line_at(spanned.span().start);
            let raw = spanned.into_inner();
            let name = raw.name.clone().unwrap_or_else(|| format!("task{index}"));
            let invalid = |key, reason| AdmissionError::InvalidTask {
                path: path.to_owned(),
                line,
                task: name.clone(),
                key,
                reason,
            };
            if let Some(first) = first_line.get(&name) {
                return Err(invalid("name", format!("a task of this name is already defined on line {first}")));
            }
            first_line.insert(name.clone(), line);
            tasks.push(raw.into_task(name.clone()).map_err(|(key, reason)| invalid(key, reason))?);
        }
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

/// Line numbers of byte offsets, counted on from the last offset asked for:
/// linear in the file for the increasing offsets of its tasks (counting from
/// the start each time made 10,000 tasks take 11 s, issue 28).
struct LineCounter<'a> {
    text: &'a str,
    offset: usize,
    line: usize,
}

impl<'a> LineCounter<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, offset: 0, line: 1 }
    }

    /// The 1-based line of byte `offset` (clamped to the text).
    fn line_at(&mut self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        if offset < self.offset {
            (self.offset, self.line) = (0, 1);
        }
        self.line += self.text.as_bytes()[self.offset..offset].iter().filter(|&&byte| byte == b'\n').count();
        self.offset = offset;
        self.line
    }
}

/// A job from its pages and its period in milliseconds, each with its key;
/// no pages and no (or a zero) period means "no such job", as Table 3 writes
/// "0 0" for tasks that do not read.
fn periodic(
    (pages_key, pages): (&'static str, Option<Number>),
    (period_key, period_ms): (&'static str, Option<Number>),
) -> Result<Option<Periodic>, KeyError> {
    let pages = match pages {
        Some(value) => integer(value, 0, PAGES_PER_JOB_MAX).map_err(|reason| (pages_key, reason))?,
        None => 0,
    };
    match (pages, period_ms) {
        (0, None) => Ok(None),
        (0, Some(period)) if period.as_f64() == 0.0 => Ok(None),
        (0, Some(_)) => Err((period_key, "a period is given but the task moves 0 pages".to_owned())),
        (_, None) => Err((period_key, "pages are given without a period".to_owned())),
        (_, Some(period)) => {
            let period_ms = real(period, PERIOD_MS_MIN, PERIOD_MS_MAX, "ms").map_err(|reason| (period_key, reason))?;
            Ok(Some(Periodic { pages, period: Duration::from_secs_f64(period_ms / 1e3) }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28: a file of more tasks than the limit is refused, naming the
    /// line of the first task beyond it.
    #[test]
    fn a_file_of_more_than_tasks_max_tasks_is_refused() {
        let task = "[[task]]\nread_pages = 1\nread_period_ms = 5\n";
        let at_limit = task.repeat(TASKS_MAX);
        assert_eq!(TaskSet::parse(&at_limit, Path::new("t.toml")).expect("at the limit").tasks.len(), TASKS_MAX);
        let error = TaskSet::parse(&(at_limit + task), Path::new("t.toml")).expect_err("beyond the limit");
        assert_eq!(
            error.to_string(),
            format!("t.toml:{}: more than {TASKS_MAX} tasks (the most a task file may hold)", 3 * TASKS_MAX + 1)
        );
    }

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

    /// Issue 15: `write_period_ms = 1e300` panicked `nandlab admit` and 1e-12
    /// printed "load inf"; both are now refused, naming the key.
    #[test]
    fn out_of_range_numbers_are_refused_naming_task_and_key() {
        let task = |body: &str| format!("[[task]]\nname = \"a\"\nwrite_pages = 4\nlifetime_periods = 9\n{body}\n");
        let error = |body: &str| TaskSet::parse(&task(body), Path::new("t.toml")).expect_err("invalid").to_string();
        for period in ["1e300", "1e-12", "-5", "nan", "inf"] {
            let message = error(&format!("write_period_ms = {period}"));
            assert!(message.starts_with("t.toml:1: task \"a\": key `write_period_ms`: must be a finite number of ms from 0.001 to 10000000000"), "{message}");
        }
        let pages = TaskSet::parse("[[task]]\nread_pages = 1e300\nread_period_ms = 5\n", Path::new("p.toml"))
            .expect_err("huge pages")
            .to_string();
        assert!(pages.contains("key `read_pages`: must be a whole number from 0 to 4294967296"), "{pages}");
        let lifetime = TaskSet::parse(
            "[[task]]\nwrite_pages = 1\nwrite_period_ms = 5\nlifetime_periods = 1e10\n",
            Path::new("l.toml"),
        )
        .expect_err("lifetime too long")
        .to_string();
        assert!(lifetime.contains("`lifetime_periods`: must be a whole number from 0 to 1000000000"), "{lifetime}");
        assert!(TaskSet::parse(&task("write_period_ms = 0.001"), Path::new("t.toml")).is_ok());
    }

    #[test]
    fn duplicate_task_names_are_refused() {
        let text = "[[task]]\nname = \"a\"\nread_pages = 1\nread_period_ms = 5\n\n[[task]]\nname = \"a\"\nread_pages = 2\nread_period_ms = 5\n";
        let error = TaskSet::parse(text, Path::new("d.toml")).expect_err("duplicate").to_string();
        assert_eq!(error, "d.toml:6: task \"a\": key `name`: a task of this name is already defined on line 1");
    }
}
