//! The fuzz targets of nandlab: each takes arbitrary bytes and must neither
//! panic, nor hang, nor allocate without bound, and what it accepts must
//! keep the invariants checked here. Shared by the cargo-fuzz binaries
//! (fuzz_targets/) and the stable-toolchain test that runs them over
//! generated inputs (frontends/cli/tests/fuzz_targets.rs, which includes this
//! file as a module).

use nandlab_core::config::{from_sources, ConfigBuilder, Document};
use nandlab_core::host::discard::DiscardPolicy;
use nandlab_core::host::event::{HostEvent, HostOp};
use nandlab_core::workload::IterEvents;
use nandlab_core::Simulation;
use nandlab_lab::replay::host_event;
use nandlab_trace::journal::JournalTracker;
use nandlab_trace::{
    FioVersion, FioWriter, Format, MsrWriter, NativeReader, NativeWriter, ReadOptions, Record, TraceHeader, TraceRead,
    TraceSummary, TraceWrite,
};
use std::io::Cursor;
use std::path::Path;

/// Inputs longer than this are cut: the targets look for bugs of structure,
/// and a replay of a long trace would be slow without finding more.
pub const INPUT_BYTES_MAX: usize = 1 << 14;

/// Every trace reader: the first byte picks the format (or detection from
/// the content), the rest is the file. Whatever is read must satisfy the
/// readers' promises, summarise, and write to every writable format.
pub fn trace_reader(data: &[u8]) {
    let Some((mut reader, _)) = open(data) else { return };
    check_records(reader.as_mut());
}

/// The native reader on raw bytes; a file that decodes whole must survive
/// being written again and read back unchanged.
pub fn native_reader(data: &[u8]) {
    let data = &data[..data.len().min(INPUT_BYTES_MAX)];
    let Ok(mut reader) = NativeReader::new(Cursor::new(data), "fuzz.nlt".into()) else { return };
    let header = reader.header().clone();
    let Some(records) = check_records(&mut reader) else { return };
    let mut bytes = Vec::new();
    let mut writer = Box::new(NativeWriter::new(&mut bytes, "fuzz.nlt".into(), &header).expect("a read header writes"));
    for record in &records {
        writer.write(record).expect("a record read writes");
    }
    writer.finish().expect("finishes");
    let again = NativeReader::new(Cursor::new(&bytes), "again.nlt".into()).expect("written preamble reads");
    assert_eq!(again.header(), &header);
    let decoded: Vec<Record> = again.collect::<Result<_, _>>().expect("written records read");
    assert_eq!(decoded, records);
}

/// The configuration parser: a TOML document, or (when the input starts
/// with `=`) `--set` assignments one per line over the `small` preset.
/// Whatever validates must be estimable.
pub fn config_parser(data: &[u8]) {
    let text = String::from_utf8_lossy(&data[..data.len().min(INPUT_BYTES_MAX)]);
    let built = match text.strip_prefix('=') {
        Some(assignments) => {
            let overrides: Vec<String> = assignments.lines().map(str::to_owned).collect();
            from_sources(Some("small"), None, &overrides, None)
        }
        None => {
            let mut builder = ConfigBuilder::new();
            builder.merge_toml(&text, "fuzz.toml").and_then(|()| builder.build())
        }
    };
    if let Ok((config, geometry)) = built {
        let estimate = nandlab_core::config::memory::estimate(&config, &geometry);
        assert!(estimate.bytes >= estimate.key_bytes);
        let _ = from_sources(None, Some(Document::Toml { text: &text, origin: "fuzz.toml" }), &[], None);
    }
}

/// Replay of an arbitrary small trace on the `small` preset: byte 0 picks
/// the format (as in [`trace_reader`]), byte 1 the DISCARD policy and the
/// mode. Every host page a write touches is accounted as written.
pub fn replay_small(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let Some((mut reader, header)) = open(rest) else { return };
    let (mut config, _) = from_sources(Some("small"), None, &[], None).expect("the small preset is valid");
    config.discard.policy = [DiscardPolicy::Off, DiscardPolicy::Online, DiscardPolicy::DelayD, DiscardPolicy::Periodic]
        [usize::from(mode & 3)];
    config.discard.delay_ms = 1;
    config.discard.period_ms = 2;
    config.precondition.enabled = false;
    let Ok(mut simulation) = Simulation::new(&config) else { return };
    let sectors_per_page = u64::from(simulation.geometry().sectors_per_page());
    let mut journal = JournalTracker::new(&header);
    let mut events: Vec<HostEvent> = Vec::new();
    for record in &mut reader {
        let Ok(record) = record else { break };
        events.push(host_event(&record, &header, &mut journal));
    }
    let mut source = IterEvents(events.iter().copied());
    if mode & 4 != 0 {
        if simulation.replay_timed(&mut source, &mut |_| {}).is_err() {
            return;
        }
        let timed = simulation.report().timed.expect("a timed replay reports timing");
        assert!(timed.drained_s >= timed.simulated_s);
        return;
    }
    let pages_in: u64 = events
        .iter()
        .filter(|event| event.op == HostOp::Write)
        .map(|event| event.sectors.end.div_ceil(sectors_per_page) - event.sectors.start / sectors_per_page)
        .sum();
    if simulation.replay(&mut source, &mut |_| {}).is_err() {
        return;
    }
    let report = simulation.report();
    assert_eq!(report.measured.counters.host_pages_written, pages_in, "host pages in = pages accounted");
}

fn open(data: &[u8]) -> Option<(Box<dyn TraceRead + Send>, TraceHeader)> {
    let (&selector, content) = data.split_first()?;
    let content = content[..content.len().min(INPUT_BYTES_MAX)].to_vec();
    let mut input = Cursor::new(content);
    let path = Path::new("fuzz.trace");
    let format = match Format::ALL.get(usize::from(selector) % (Format::ALL.len() + 1)) {
        Some(&format) => format,
        None => nandlab_trace::detect(path, &mut input).ok()?,
    };
    let reader = nandlab_trace::read_from(input, path, format, &ReadOptions::default()).ok()?;
    let header = reader.header().clone();
    Some((reader, header))
}

/// Reads every record, checking what every reader promises; `None` if the
/// trace ends in an error.
fn check_records(reader: &mut dyn TraceRead) -> Option<Vec<Record>> {
    let header = reader.header().clone();
    header.validate().expect("readers yield valid headers");
    let mut summary = TraceSummary::new(&header);
    let mut records = Vec::new();
    let mut writers = writers(&header);
    for record in reader {
        let Ok(record) = record else { return None };
        record.check(header.sector_size_bytes).expect("readers yield checked records");
        summary.add(&record, &header);
        for writer in &mut writers {
            writer.write(&record).expect("a checked record writes to every format");
        }
        records.push(record);
    }
    let _ = summary.to_string();
    for writer in writers {
        writer.finish().expect("writers finish");
    }
    Some(records)
}

fn writers(header: &TraceHeader) -> Vec<Box<dyn TraceWrite>> {
    let sector_bytes = header.sector_size_bytes;
    vec![
        Box::new(NativeWriter::new(std::io::sink(), "fuzz.nlt".into(), header).expect("a valid header writes")),
        Box::new(MsrWriter::new(std::io::sink(), "fuzz.csv".into(), sector_bytes)),
        Box::new(
            FioWriter::new(std::io::sink(), "fuzz.iolog".into(), FioVersion::V3, "/dev/fuzz", sector_bytes)
                .expect("writes"),
        ),
    ]
}
