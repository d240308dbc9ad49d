//! Regression tests of issue 11 (hardening): each is named after the bug it
//! pins. Bad input must be an error naming the file, never a panic, a hang,
//! unbounded memory or silently wrong numbers.

#![allow(clippy::unwrap_used)]

use nandlab_trace::{
    Flags, Format, Op, ProcessName, ReadOptions, Record, Sector, SectorCount, TimestampNs, TraceError, TraceHeader,
    TraceSummary,
};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// A native trace by hand: preamble, JSON header, then raw record bytes.
fn native(header_json: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = b"NLTRACE\0".to_vec();
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&0u16.to_le_bytes());
    bytes.extend_from_slice(&u32::try_from(header_json.len()).unwrap().to_le_bytes());
    bytes.extend_from_slice(header_json.as_bytes());
    bytes.extend_from_slice(body);
    bytes
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// One write record (no stream tag) with a new, empty process name.
fn write_record(time_delta: i64, start_delta: i64, len: u64) -> Vec<u8> {
    let zigzag = |value: i64| ((value << 1) ^ (value >> 63)) as u64;
    let mut out = vec![Op::Write.index() as u8];
    varint(&mut out, zigzag(time_delta));
    varint(&mut out, zigzag(start_delta));
    varint(&mut out, len);
    varint(&mut out, 0);
    varint(&mut out, 0);
    out
}

fn read_all(bytes: Vec<u8>, format: Format) -> Result<Vec<Record>, TraceError> {
    let mut reader =
        nandlab_trace::read_from(std::io::Cursor::new(bytes), Path::new("t.nlt"), format, &ReadOptions::default())?;
    (&mut reader).collect()
}

fn error_of(bytes: Vec<u8>, format: Format) -> String {
    read_all(bytes, format).expect_err("must be refused").to_string()
}

#[test]
fn native_sector_size_0_256_1000_and_2_32_minus_1_are_refused() {
    for size in [0u64, 256, 1000, 131_072, u64::from(u32::MAX)] {
        let message = error_of(native(&format!(r#"{{"sector_size_bytes":{size}}}"#), &[0xff, 0]), Format::Native);
        assert!(message.contains("sector_size_bytes") && message.starts_with("t.nlt"), "{size}: {message}");
    }
    assert!(read_all(native(r#"{"sector_size_bytes":4096}"#, &[0xff, 0]), Format::Native).unwrap().is_empty());
}

#[test]
fn native_journal_range_that_overflows_is_refused() {
    let header = format!(r#"{{"journal":[{{"start":{},"len":10}}]}}"#, u64::MAX);
    assert!(error_of(native(&header, &[0xff, 0]), Format::Native).contains("journal range"));
}

#[test]
fn native_timestamps_going_backwards_are_refused() {
    let mut body = write_record(100, 0, 8);
    body.extend(write_record(-50, 0, 8));
    body.extend([0xff, 2]);
    assert!(error_of(native("{}", &body), Format::Native).contains("not in time order"));
}

#[test]
fn native_start_2_62_with_4096_byte_sectors_is_refused_not_wrapped() {
    let mut body = write_record(0, 1 << 62, 8);
    body.extend([0xff, 1]);
    let message = error_of(native(r#"{"sector_size_bytes":4096}"#, &body), Format::Native);
    assert!(message.contains("64-bit byte address space"), "{message}");
}

#[test]
fn native_60_byte_file_with_huge_request_is_summarised_at_once() {
    let mut body = write_record(0, 0, u64::from(u32::MAX));
    body.extend([0xff, 1]);
    let bytes = native(r#"{"sector_size_bytes":65536}"#, &body);
    let started = Instant::now();
    let mut reader = nandlab_trace::read_from(
        std::io::Cursor::new(bytes),
        Path::new("t.nlt"),
        Format::Native,
        &ReadOptions::default(),
    )
    .unwrap();
    let header = reader.header().clone();
    let mut summary = TraceSummary::new(&header);
    for record in &mut reader {
        summary.add(&record.unwrap(), &header);
    }
    assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());
    assert_eq!(summary.footprint_blocks().0, u64::from(u32::MAX) * 16);
    assert!(summary.to_string().contains(&format!("highest sector end {}", u32::MAX)));
}

#[test]
fn write_at_sector_2_64_minus_1_is_refused() {
    let line = format!("  8,0    3        1     0.000000000   697  D   W {} + 8 [dd]\n", u64::MAX);
    let message = error_of(line.into_bytes(), Format::Blkparse);
    assert!(message.starts_with("t.nlt:1:") && message.contains("64-bit byte address space"), "{message}");
}

#[test]
fn a_200_mb_line_is_refused_early_with_a_short_quote() {
    let line = vec![b'7'; 200 << 20];
    let message = error_of(line, Format::Umass);
    assert!(message.starts_with("t.nlt:1: line is longer than 65536 bytes"), "{}", &message[..80.min(message.len())]);
    assert!(message.len() < 200, "the error quotes a few dozen characters: {} bytes", message.len());
}

#[test]
fn a_gzip_bomb_of_zeros_is_refused_in_constant_memory() {
    let folder = tempdir("bomb");
    let path = folder.join("zeros.csv.gz");
    let mut encoder = flate2::write::GzEncoder::new(std::fs::File::create(&path).unwrap(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..256 {
        encoder.write_all(&zeros).unwrap();
    }
    encoder.finish().unwrap();
    let mut reader = nandlab_trace::open(&path, Some(Format::Msr), &ReadOptions::default()).unwrap();
    let error = reader.next().unwrap().unwrap_err().to_string();
    assert!(error.contains("longer than 65536 bytes"), "{error}");
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn convert_to_msr_and_fio_honours_4096_byte_sectors() {
    let folder = tempdir("scale");
    let header = TraceHeader { sector_size_bytes: 4096, ..TraceHeader::default() };
    let record = Record {
        timestamp: TimestampNs(0),
        op: Op::Write,
        flags: Flags::NONE,
        start: Sector(10),
        len: SectorCount(2),
        process: ProcessName::default(),
        stream: None,
    };
    for (name, format, expected) in
        [("t.csv", Format::Msr, ",Write,40960,8192,"), ("t.iolog", Format::FioV2, "write 40960 8192")]
    {
        let path = folder.join(name);
        let mut writer = nandlab_trace::create(&path, format, &header).unwrap();
        writer.write(&record).unwrap();
        writer.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(expected), "{name}: {text}");
    }
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn convert_to_an_unwritable_format_leaves_an_existing_file_alone() {
    let folder = tempdir("keep");
    let path = folder.join("keep.txt");
    std::fs::write(&path, "precious").unwrap();
    let error = nandlab_trace::create(&path, Format::Blkparse, &TraceHeader::default()).err().unwrap();
    assert!(matches!(error, TraceError::NotWritable { .. }));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
    let unfinished = nandlab_trace::create(&path, Format::Native, &TraceHeader::default()).unwrap();
    drop(unfinished);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 1);
    std::fs::remove_dir_all(folder).unwrap();
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let folder = std::env::temp_dir().join(format!("nandlab-trace-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    folder
}
