//! Reading a trace, in any format, allocates nothing per record (issue 17: a trace of any
//! length replays in memory set by the device). An allocator that counts
//! this thread's allocations wraps the system one; after the reader is open
//! and has yielded its first record, reading every other record must not
//! allocate once — not even a growing buffer, which a long trace would turn
//! into memory proportional to its length.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use nandlab_trace::{
    Flags, Format, NativeWriter, Op, ProcessName, ReadOptions, Record, Sector, SectorCount, TimestampNs, TraceHeader,
    TraceWrite,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::BufReader;
use std::path::Path;

struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counter is a plain thread-local cell that never allocates itself. The
// workspace denies unsafe code; a global allocator cannot be written without.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from `System.alloc` with this layout.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: the caller's contract for `realloc` is passed on as is.
        unsafe { System.realloc(pointer, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

const RECORDS: u64 = 200_000;

/// Writes of two processes and a few reads, DISCARDs and flushes, over a
/// 64 GiB address space (every varint width of the addresses).
fn record(index: u64) -> Record {
    let op = Op::ALL[usize::try_from(index % 7).unwrap().min(3)];
    let len = if op == Op::Flush { 0 } else { 8 };
    Record {
        timestamp: TimestampNs(index * 1_000),
        op,
        flags: if index.is_multiple_of(5) { Flags::SYNC } else { Flags::NONE },
        start: Sector(if op == Op::Flush { 0 } else { index.wrapping_mul(2_654_435_761) % (1 << 27) * 8 }),
        len: SectorCount(len),
        process: ProcessName::new(if index.is_multiple_of(2) { "fio" } else { "jbd2/vda1-8" }),
        stream: None,
    }
}

/// Reads every record of `reader`, returning how many there were and how
/// many allocations reading all but the first took.
fn read_all(mut reader: impl Iterator<Item = Result<Record, nandlab_trace::TraceError>>) -> (u64, u64) {
    reader.next().expect("one record").expect("valid");
    let before = allocations();
    let mut count = 1;
    for decoded in reader {
        std::hint::black_box(decoded.expect("valid record"));
        count += 1;
    }
    (count, allocations() - before)
}

#[test]
fn reading_a_native_trace_allocates_nothing_per_record() {
    let mut bytes = Vec::new();
    let mut writer = Box::new(NativeWriter::new(&mut bytes, "mem.nlt".into(), &TraceHeader::default()).unwrap());
    for index in 0..RECORDS {
        writer.write(&record(index)).unwrap();
    }
    writer.finish().unwrap();

    let reader = nandlab_trace::NativeReader::new(bytes.as_slice(), "mem.nlt".into()).unwrap();
    assert_eq!(read_all(reader), (RECORDS, 0), "records read, allocations after the first");

    // The path a replay takes: detection, a buffered file, the boxed reader.
    let path = std::env::temp_dir().join(format!("nandlab-streaming-{}.nlt", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let reader = nandlab_trace::open(&path, None, &ReadOptions::default());
    std::fs::remove_file(&path).unwrap();
    assert_eq!(read_all(reader.unwrap()), (RECORDS, 0), "through nandlab_trace::open");
}

/// One line of `format` for `record`, as the kernel tools print them.
fn line(format: Format, record: &Record) -> String {
    let rwbs = match record.op {
        Op::Read => "R",
        Op::Write => "W",
        Op::Discard => "D",
        Op::Flush => "FN",
    };
    let sync = if record.flags.contains(Flags::SYNC) { "S" } else { "" };
    let (seconds, micros) = (record.timestamp.0 / 1_000_000_000, record.timestamp.0 / 1_000 % 1_000_000);
    let (process, start, len) = (record.process, record.start.0, record.len.0);
    match format {
        Format::Tracefs => format!(
            " {process}-1 [001] ..... {seconds}.{micros:06}: block_rq_issue: 7,0 {rwbs}{sync} 4096 () {start} + {len} \
             be,0,4 [{process}]\n"
        ),
        Format::Blkparse => {
            format!("  8,0    1        1 {seconds}.{micros:06}000   697  D  {rwbs}{sync} {start} + {len} [{process}]\n")
        }
        Format::Umass => format!("0,{start},{},{},{seconds}.{micros:06}\n", u64::from(len) * 512, &rwbs[..1]),
        _ => unreachable!("only the read-only text formats are built by hand"),
    }
}

#[test]
fn reading_the_read_only_text_formats_allocates_nothing_per_record() {
    for format in [Format::Tracefs, Format::Blkparse] {
        let text: String = (0..RECORDS).map(|index| line(format, &record(index))).collect();
        let input = BufReader::new(std::io::Cursor::new(text.into_bytes()));
        let reader = nandlab_trace::read_from(input, Path::new("mem"), format, &ReadOptions::default()).unwrap();
        assert_eq!(read_all(reader), (RECORDS, 0), "{format}: records read, allocations after the first");
    }
    // UMass/SPC says only reads and writes.
    let text: String = (0..RECORDS)
        .map(record)
        .filter(|record| matches!(record.op, Op::Read | Op::Write))
        .map(|record| line(Format::Umass, &record))
        .collect();
    let lines = text.lines().count() as u64;
    let input = BufReader::new(std::io::Cursor::new(text.into_bytes()));
    let reader = nandlab_trace::read_from(input, Path::new("mem"), Format::Umass, &ReadOptions::default()).unwrap();
    assert_eq!(read_all(reader), (lines, 0), "umass: records read, allocations after the first");
}

#[test]
fn reading_the_writable_text_formats_allocates_nothing_per_record() {
    for format in [Format::Msr, Format::FioV2, Format::FioV3, Format::MqSim, Format::DiskSim] {
        let path = std::env::temp_dir().join(format!("nandlab-streaming-{}.{format}", std::process::id()));
        let mut writer = nandlab_trace::create(&path, format, &TraceHeader::default()).unwrap();
        for index in 0..RECORDS {
            writer.write(&record(index)).unwrap();
        }
        let written = writer.finish().unwrap().written;
        let reader = nandlab_trace::open(&path, Some(format), &ReadOptions::default());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(read_all(reader.unwrap()), (written, 0), "{format}: records read, allocations after the first");
    }
}
