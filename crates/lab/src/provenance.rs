//! [`Provenance`]: what a report must say so its numbers can be traced and
//! re-run: nandlab's version and commit, the date, the kernel, the machine,
//! the command line and the wall time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where and how a result was made.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Provenance {
    pub version: &'static str,
    /// `git rev-parse --short HEAD` at build time, `-dirty` with uncommitted changes.
    pub commit: &'static str,
    /// When the run finished, UTC, ISO 8601.
    pub date: String,
    /// `uname -sr`, from /proc/sys/kernel.
    pub kernel: String,
    /// CPU model, logical CPUs and memory.
    pub machine: String,
    pub command_line: String,
    pub wall_s: f64,
}

impl Provenance {
    /// This process, now, after `wall` of work.
    #[must_use]
    pub fn now(wall: Duration) -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION"),
            commit: env!("NANDLAB_GIT_COMMIT"),
            date: utc_date(SystemTime::now()),
            kernel: kernel(),
            machine: machine(),
            command_line: command_line(),
            wall_s: wall.as_secs_f64(),
        }
    }

    /// A markdown section with one row per field.
    #[must_use]
    pub fn to_markdown(&self) -> String {
        let mut summary = nandlab_report::Summary::default();
        summary.heading("Provenance").table(
            &["", "value"],
            &[
                vec!["nandlab".to_owned(), format!("{} (commit {})", self.version, self.commit)],
                vec!["date".to_owned(), self.date.clone()],
                vec!["kernel".to_owned(), self.kernel.clone()],
                vec!["machine".to_owned(), self.machine.clone()],
                vec!["command line".to_owned(), format!("`{}`", self.command_line)],
                vec!["wall time".to_owned(), format!("{:.1} s", self.wall_s)],
            ],
        );
        summary.to_markdown()
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` for `time` (the civil-from-days algorithm of
/// H. Hinnant's date library, proleptic Gregorian calendar).
fn utc_date(time: SystemTime) -> String {
    let seconds = time.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
    let (days, second_of_day) = (seconds / 86_400, seconds % 86_400);
    let shifted = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|text| text.trim().to_owned())
}

fn kernel() -> String {
    match (read_trimmed("/proc/sys/kernel/ostype"), read_trimmed("/proc/sys/kernel/osrelease")) {
        (Some(name), Some(release)) => format!("{name} {release}"),
        _ => std::env::consts::OS.to_owned(),
    }
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name").and_then(|rest| rest.split_once(':')).map(|(_, m)| m.trim()))
        .unwrap_or(std::env::consts::ARCH)
        .to_owned();
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|line| line.starts_with("MemTotal:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or_else(String::new, |kib| format!(", {:.1} GiB", kib as f64 / 1024.0 / 1024.0));
    format!("{model}, {cpus} CPUs{memory}")
}

/// The process's arguments, each quoted for a POSIX shell when it needs it.
fn command_line() -> String {
    std::env::args().map(|argument| shell_quote(&argument)).collect::<Vec<_>>().join(" ")
}

fn shell_quote(argument: &str) -> String {
    let plain = !argument.is_empty() && argument.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        argument.to_owned()
    } else {
        format!("'{}'", argument.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_iso_8601() {
        assert_eq!(utc_date(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(utc_date(UNIX_EPOCH + Duration::from_secs(951_782_400 + 3661)), "2000-02-29T01:01:01Z");
        assert_eq!(utc_date(UNIX_EPOCH + Duration::from_secs(1_795_478_399)), "2026-11-23T23:59:59Z");
    }

    #[test]
    fn the_section_names_every_field() {
        let provenance = Provenance::now(Duration::from_millis(1500));
        let text = provenance.to_markdown();
        assert!(text.starts_with("## Provenance"), "{text}");
        for needle in
            ["| nandlab | 0.", "commit ", "| date | 20", "| kernel |", "| machine |", "CPUs", "| wall time | 1.5 s |"]
        {
            assert!(text.contains(needle), "missing {needle}: {text}");
        }
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("--out=/tmp/x"), "--out=/tmp/x");
    }
}
