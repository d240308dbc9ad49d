//! The MQSim and DiskSim ASCII traces through the public API: detection,
//! errors naming file and line, and a round trip through the native format
//! that gives back the very same lines.

#![allow(clippy::unwrap_used)]

use nandlab_trace::{create, open, Format, Op, ReadOptions, Record, TraceError};
use std::path::{Path, PathBuf};

const MQSIM: &str = "0 0 2359296 16 0
4911500 0 2359312 16 0
5000128 0 8 1 1
99000000000 0 4294967296 256 1
";

const DISKSIM: &str = "0.000000 0 2048 8 1
0.123456 0 4096 16 0
12.000001 0 0 1 1
86400000.000000 0 1000 128 0
";

fn scratch_file(name: &str, content: &[u8]) -> PathBuf {
    let directory = std::env::temp_dir().join(format!("nandlab-simulators-test-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

fn read_all(path: &Path, format: Option<Format>) -> Result<Vec<Record>, TraceError> {
    open(path, format, &ReadOptions::default())?.collect()
}

fn write_all(path: &Path, format: Format, records: &[Record]) {
    let mut writer = create(path, format, &nandlab_trace::TraceHeader::default()).unwrap();
    for record in records {
        writer.write(record).unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn both_formats_are_detected_and_read() {
    let mqsim = read_all(&scratch_file("trace.mqsim", MQSIM.as_bytes()), None).unwrap();
    let summary: Vec<_> = mqsim.iter().map(|r| (r.timestamp.0, r.op, r.start.0, r.len.0)).collect();
    assert_eq!(summary[1], (4_911_500, Op::Write, 2_359_312, 16));
    assert_eq!(summary[3], (99_000_000_000, Op::Read, 4_294_967_296, 256));
    let disksim = read_all(&scratch_file("trace.disksim", DISKSIM.as_bytes()), None).unwrap();
    let summary: Vec<_> = disksim.iter().map(|r| (r.timestamp.0, r.op, r.start.0, r.len.0)).collect();
    assert_eq!(summary[1], (123_456, Op::Write, 4096, 16));
    assert_eq!(summary[3], (86_400_000_000_000, Op::Write, 1000, 128));
}

#[test]
fn a_round_trip_through_the_native_format_gives_back_the_same_lines() {
    for (format, text) in [(Format::MqSim, MQSIM), (Format::DiskSim, DISKSIM)] {
        let original = read_all(&scratch_file(&format!("original.{format}"), text.as_bytes()), Some(format)).unwrap();
        let native = scratch_file(&format!("{format}.nlt"), b"");
        write_all(&native, Format::Native, &original);
        let through_native = read_all(&native, None).unwrap();
        assert_eq!(through_native, original, "{format}");
        let back = scratch_file(&format!("back.{format}"), b"");
        write_all(&back, format, &through_native);
        assert_eq!(std::fs::read_to_string(&back).unwrap(), text, "{format}");
    }
}

#[test]
fn malformed_lines_are_reported_with_file_and_line() {
    let cases = [
        (Format::MqSim, MQSIM, "5000128 0 8 1 1", "5000128 0 8 1 2", "0 (write) or 1 (read)"),
        (Format::MqSim, MQSIM, "5000128 0 8 1 1", "5000128 0 8 1", "request type"),
        (Format::DiskSim, DISKSIM, "12.000001 0 0 1 1", "12.000001 0 0 1 0xq", "hexadecimal"),
        (Format::DiskSim, DISKSIM, "12.000001 0 0 1 1", "12,000001 0 0 1 1", "decimal milliseconds"),
    ];
    for (format, text, line, broken, complaint) in cases {
        let path = scratch_file(&format!("broken.{format}"), text.replace(line, broken).as_bytes());
        let error = read_all(&path, Some(format)).unwrap_err().to_string();
        assert!(error.starts_with(&format!("{}:3: ", path.display())), "{error}");
        assert!(error.contains(complaint), "{error}");
    }
}
