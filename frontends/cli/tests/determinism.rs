//! The determinism reference test (issue 17): a few short runs through the
//! `nandlab` binary — counting runs with and without a host stage, a timed
//! run with GC active, a replay of the repository's tracefs test trace and a
//! two-job run — whose JSON documents must equal the references committed in
//! `tests/determinism/`. An optimisation that changes any simulated number
//! fails it; one that only makes the simulator faster does not.
//!
//! What is compared: the whole `--json` document minus the fields that
//! legitimately differ between two builds or two runs of the same
//! configuration and seed — [`VOLATILE_KEYS`], removed at any depth.
//!
//! Regenerating the references (`NANDLAB_BLESS=1 cargo test -p nandlab-cli
//! --test determinism`) is legitimate only when a result is *meant* to
//! change — a bug fix in the model, a new field in the report, a changed
//! default — and the commit that does it says why. Never to make a speed
//! change pass: there, a difference is the bug. See docs/validation.md.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Fields that differ between runs or builds of the same configuration and
/// seed: wall times (the run's, the replay's own), what is derived from them
/// (a replay's requests per second) and the build's version.
const VOLATILE_KEYS: [&str; 3] = ["wall_s", "requests_per_s", "nandlab_version"];

/// Set to regenerate the references instead of comparing with them.
const BLESS_VARIABLE: &str = "NANDLAB_BLESS";

/// One reference run: its name (the reference file's stem) and its arguments.
struct Case {
    name: &'static str,
    args: Vec<String>,
}

fn cases() -> Vec<Case> {
    let trace = repository().join("crates/trace/tests/data/ext4-loop-discard-fsync.tracefs.gz");
    let case = |name, args: &[&str]| Case { name, args: args.iter().map(|arg| (*arg).to_owned()).collect() };
    let mut replay = case(
        "replay-tracefs-delay-d-timed",
        &["replay", "--preset", "small", "--fit", "--discard", "delay-d", "--timing", "on", "--arrival", "closed"],
    );
    replay.args.insert(1, trace.display().to_string());
    vec![
        case("count-greedy", &["run", "--preset", "small", "--seed", "11", "--set", "workload.device_writes=1.0"]),
        case(
            "count-delay-d-cost-benefit",
            &[
                "run",
                "--preset",
                "small",
                "--seed",
                "5",
                "--set",
                "workload.trim_fraction=0.2",
                "--set",
                "discard.policy=delay-d",
                "--set",
                "ftl.gc_policy=cost-benefit",
                "--set",
                "workload.device_writes=1.0",
            ],
        ),
        case(
            "timed-gc",
            &["run", "--preset", "small", "--timing", "on", "--seed", "3", "--set", "workload.requests=20000"],
        ),
        replay,
        case(
            "two-jobs",
            &[
                "run",
                "--preset",
                "small",
                "--seed",
                "9",
                "--job",
                "name=logger,pattern=sequential,range_end=0.1,requests=2000",
                "--job",
                "name=bulk,range_start=0.1,request_pages=4,requests=3000",
            ],
        ),
    ]
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn references() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/determinism")
}

/// The case's `--json -` document, volatile fields removed.
fn document(case: &Case) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_nandlab"))
        .args(&case.args)
        .args(["--json", "-"])
        .stdin(Stdio::null())
        .output()
        .expect("nandlab runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}: {:?} failed: {stderr}", case.name, case.args);
    let mut document: Value = serde_json::from_slice(&output.stdout).expect("the JSON document parses");
    strip_volatile(&mut document);
    document
}

fn strip_volatile(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for key in VOLATILE_KEYS {
                map.remove(key);
            }
            map.values_mut().for_each(strip_volatile);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_volatile),
        _ => {}
    }
}

/// The paths (`.measured.counters.erases`) at which `actual` differs from
/// `expected`, with both values, at most `limit` of them.
fn differences(expected: &Value, actual: &Value, path: &str, limit: usize, found: &mut Vec<String>) {
    if found.len() >= limit || expected == actual {
        return;
    }
    match (expected, actual) {
        (Value::Object(left), Value::Object(right)) => {
            let keys: std::collections::BTreeSet<&String> = left.keys().chain(right.keys()).collect();
            for key in keys {
                let (left, right) = (left.get(key).unwrap_or(&Value::Null), right.get(key).unwrap_or(&Value::Null));
                differences(left, right, &format!("{path}.{key}"), limit, found);
            }
        }
        (Value::Array(left), Value::Array(right)) if left.len() == right.len() => {
            for (index, (left, right)) in left.iter().zip(right).enumerate() {
                differences(left, right, &format!("{path}[{index}]"), limit, found);
            }
        }
        _ => found.push(format!("{path}: expected {}, got {}", short(expected), short(actual))),
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[test]
fn short_runs_give_the_committed_reference_documents() {
    let bless = std::env::var_os(BLESS_VARIABLE).is_some();
    let mut failures = Vec::new();
    let mut documents = std::collections::HashMap::new();
    for case in cases() {
        let actual = document(&case);
        documents.insert(case.name, actual.clone());
        let reference = references().join(format!("{}.json", case.name));
        if bless {
            std::fs::create_dir_all(references()).unwrap();
            std::fs::write(&reference, serde_json::to_string_pretty(&actual).unwrap() + "\n").unwrap();
            continue;
        }
        let text = std::fs::read_to_string(&reference).unwrap_or_else(|error| {
            panic!("{}: {error}; create the references with {BLESS_VARIABLE}=1", reference.display())
        });
        let expected: Value = serde_json::from_str(&text).expect("the reference parses");
        let mut found = Vec::new();
        differences(&expected, &actual, "", 20, &mut found);
        if !found.is_empty() {
            failures.push(format!("{} ({:?}):\n  {}", case.name, case.args, found.join("\n  ")));
        }
    }
    check_coverage(&documents);
    assert!(
        failures.is_empty(),
        "results changed against tests/determinism/ (regenerate with {BLESS_VARIABLE}=1 only when a change of \
         results is intended; docs/validation.md):\n{}",
        failures.join("\n")
    );
}

/// The cases exercise what they claim: GC runs in the timed case, Delay-D
/// handles DISCARDs, the replay replays and both jobs report.
fn check_coverage(documents: &std::collections::HashMap<&str, Value>) {
    let number = |name: &str, pointer: &str| {
        documents[name].pointer(pointer).and_then(Value::as_u64).unwrap_or_else(|| panic!("{name}: {pointer}"))
    };
    assert!(number("timed-gc", "/measured/gc_page_copies") > 0, "the timed run collects garbage");
    assert!(number("count-delay-d-cost-benefit", "/discard/received_commands") > 0);
    let replay = "replay-tracefs-delay-d-timed";
    assert!(number(replay, "/host/writes") > 0 && number(replay, "/discard/received_commands") > 0);
    assert!(number(replay, "/replay_speed/requests") > 0);
    let jobs = documents["two-jobs"].pointer("/jobs").and_then(Value::as_array).map(Vec::len);
    assert_eq!(jobs, Some(2), "both jobs report");
}
