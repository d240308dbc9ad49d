//! Whole-file behaviour through the public API: detection, streaming,
//! error positions (file and line), and conversions that keep what the
//! target format can say.

#![allow(clippy::unwrap_used)]

use nandlab_trace::{create, open, Format, Op, ReadOptions, Record, TraceError, TraceHeader};
use std::path::{Path, PathBuf};

fn scratch_file(name: &str, content: &[u8]) -> PathBuf {
    let directory = std::env::temp_dir().join(format!("nandlab-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("temp dir is writable");
    let path = directory.join(name);
    std::fs::write(&path, content).expect("temp file is writable");
    path
}

fn read_all(path: &Path, format: Option<Format>) -> Result<Vec<Record>, TraceError> {
    open(path, format, &ReadOptions::default())?.collect()
}

const TRACEFS: &str = "# tracer: nop
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
              dd-7579    [001] .....  4039.405294: block_rq_issue: 7,0 RM 1024 () 15944 + 2 be,0,4 [dd]
              dd-7579    [001] .....  4039.413617: block_rq_issue: 7,0 WS 1310720 () 24578 + 2560 be,0,4 [dd]
    jbd2/loop0-8-7570    [000] .....  4039.414861: block_rq_issue: 7,0 WSM 1024 () 229378 + 2 be,0,3 [jbd2/loop0-8]
    kworker/0:0H-10      [000] .....  4039.414916: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/0:0H]
    kworker/1:1H-44      [001] .....  4039.469758: block_rq_issue: 7,0 D 2097152 () 24578 + 4096 be,0,4 [kworker/1:1H]
";

#[test]
fn a_tracefs_capture_streams_with_times_relative_to_its_first_request() {
    let path = scratch_file("capture.txt", TRACEFS.as_bytes());
    let records = read_all(&path, None).expect("valid trace");
    let ops: Vec<Op> = records.iter().map(|r| r.op).collect();
    assert_eq!(ops, [Op::Read, Op::Write, Op::Write, Op::Flush, Op::Discard]);
    assert_eq!(records[0].timestamp.0, 0);
    assert_eq!(records[4].timestamp.0, 64_464_000);
}

#[test]
fn a_malformed_line_is_reported_with_file_and_line_number() {
    let broken = TRACEFS.replace("229378 + 2 be", "229378 + two be");
    let path = scratch_file("broken.txt", broken.as_bytes());
    let error = read_all(&path, None).unwrap_err().to_string();
    assert!(error.starts_with(&format!("{}:6: ", path.display())), "{error}");
    assert!(error.contains("length in sectors"), "{error}");
}

#[test]
fn an_unknown_format_asks_for_an_explicit_one_and_the_override_wins() {
    let path = scratch_file("mystery.txt", b"hello world\n");
    assert!(read_all(&path, None).unwrap_err().to_string().contains("--format"));
    let error = read_all(&path, Some(Format::Msr)).unwrap_err().to_string();
    assert!(error.contains("mystery.txt:1:"), "{error}");
}

#[test]
fn conversions_round_trip_through_every_writable_format() {
    let source = scratch_file("source.txt", TRACEFS.as_bytes());
    let records = read_all(&source, None).expect("valid trace");
    for format in [Format::Native, Format::FioV2, Format::FioV3, Format::Msr] {
        let target = scratch_file(&format!("converted.{}", format.name()), b"");
        let mut writer = create(&target, format, &TraceHeader::default()).expect("creatable");
        for record in &records {
            writer.write(record).expect("writable");
        }
        let summary = writer.finish().expect("finishes");
        let back = read_all(&target, None).expect("a written trace reads back");
        let kept: Vec<(Op, u64, u32)> = records
            .iter()
            .filter(|r| format != Format::Msr || matches!(r.op, Op::Read | Op::Write))
            .map(|r| (r.op, if r.op == Op::Flush { 0 } else { r.start.0 }, r.len.0))
            .collect();
        let got: Vec<(Op, u64, u32)> = back.iter().map(|r| (r.op, r.start.0, r.len.0)).collect();
        assert_eq!(got, kept, "{format}");
        assert_eq!(summary.written as usize, kept.len(), "{format}");
        // Timing survives at the format's resolution: fio v2 waits are whole
        // milliseconds, fio v3 timestamps microseconds, native nanoseconds.
        let resolution_ns = match format {
            Format::FioV2 => 1_000_000,
            Format::Msr => 100,
            _ => 1_000,
        };
        let times = |rs: &[Record]| {
            rs.iter()
                .filter(|r| format != Format::Msr || matches!(r.op, Op::Read | Op::Write))
                .map(|r| r.timestamp.0 / resolution_ns)
                .collect::<Vec<_>>()
        };
        let original = times(&records);
        let base = original[0];
        assert_eq!(times(&back), original.iter().map(|t| t - base).collect::<Vec<_>>(), "{format} keeps timing");
    }
}

#[test]
fn a_gzip_compressed_trace_is_read_transparently() {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder
        .write_all(b"128166372003061629,hm,1,Read,3154132992,32768,155547\n128166372003061729,hm,1,Write,0,4096,10\n")
        .unwrap();
    let path = scratch_file("msr.csv.gz", &encoder.finish().unwrap());
    let records = read_all(&path, None).expect("gzip is decompressed and the content detected");
    assert_eq!(records.iter().map(|r| r.op).collect::<Vec<_>>(), [Op::Read, Op::Write]);
    assert_eq!(records[1].timestamp.0, 10_000);
}
