//! [`Document`]: a run's report as the JSON document `--json` writes and the
//! Python functions return: a `schema_version` first, the report's own
//! fields, then the run's `wall_s`.

use serde::Serialize;
use std::time::Duration;

/// Version of the JSON documents of `run` and `replay`. Raised when a field
/// is renamed, removed or changes meaning; adding fields keeps it.
/// 1: the first versioned documents (schema_version, wall_s).
pub const SCHEMA_VERSION: u32 = 1;

/// A report with its schema version and wall time around it.
#[derive(Debug, Serialize)]
pub struct Document<'a, T: Serialize> {
    pub schema_version: u32,
    #[serde(flatten)]
    pub report: &'a T,
    /// Wall time of the run in seconds (the one field that differs between
    /// two runs of the same configuration and seed).
    pub wall_s: f64,
}

impl<'a, T: Serialize> Document<'a, T> {
    #[must_use]
    pub fn new(report: &'a T, wall: Duration) -> Self {
        Self { schema_version: SCHEMA_VERSION, report, wall_s: wall.as_secs_f64() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_comes_first_and_the_report_keeps_its_fields_in_order() {
        #[derive(Serialize)]
        struct Report {
            seed: u64,
            nested: Vec<u8>,
        }
        let report = Report { seed: 7, nested: vec![1] };
        let text = serde_json::to_string(&Document::new(&report, Duration::from_millis(250))).expect("json");
        assert_eq!(text, r#"{"schema_version":1,"seed":7,"nested":[1],"wall_s":0.25}"#);
    }
}
