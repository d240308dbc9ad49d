//! The fuzz targets of nandlab: each takes arbitrary bytes and must neither
//! panic, nor hang, nor allocate without bound, and what it accepts must
//! keep the invariants checked here. Shared by the cargo-fuzz binaries
//! (fuzz_targets/) and the stable-toolchain test that runs them over
//! generated inputs (frontends/cli/tests/fuzz_targets.rs, which includes this
//! file as a module).

use nandlab_admission::policy::{admit_in_order_by, check, AdmissionContext, Policy, Tests};
use nandlab_admission::storage::Placement;
use nandlab_admission::{DeviceParams, TaskSet};
use nandlab_core::config::{from_sources, ConfigBuilder, Document};
use nandlab_core::host::discard::DiscardPolicy;
use nandlab_core::host::event::{HostEvent, HostOp};
use nandlab_core::workload::IterEvents;
use nandlab_core::Simulation;
use nandlab_nbd::{BlockDevice, BlockError, DaemonInfo};
use nandlab_trace::host::host_event;
use nandlab_trace::journal::JournalTracker;
use nandlab_trace::{
    FioVersion, FioWriter, Format, MsrWriter, NativeReader, NativeWriter, ReadOptions, Record, TraceHeader, TraceRead,
    TraceSummary, TraceWrite,
};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

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
    let mut config = small_config();
    config.discard.policy = [DiscardPolicy::Off, DiscardPolicy::Online, DiscardPolicy::DelayD, DiscardPolicy::Periodic]
        [usize::from(mode & 3)];
    config.discard.delay_ms = 1;
    config.discard.period_ms = 2;
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

/// A task file for `nandlab admit`: byte 0 picks the device (bit 0), the
/// placement (bit 1) and g (bits 2-3), the rest is the file. Whatever
/// parses is admitted task by task under each policy with finite loads, and
/// (for small sets) with the decisions a whole-set check of each prefix
/// gives; the final verdict is the whole-set check of the admitted tasks.
pub fn admit_tasks(data: &[u8]) {
    let Some((&selector, text)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(&text[..text.len().min(INPUT_BYTES_MAX)]);
    let Ok(set) = TaskSet::parse(&text, Path::new("fuzz.toml")) else { return };
    let device = if selector & 1 == 0 { DeviceParams::cosmos() } else { DeviceParams::telomere_1tb() };
    let granularity = [1, 4, 32, 64][usize::from(selector >> 2 & 3)];
    let context = AdmissionContext::new(device, granularity, 0.9).expect("a valid context");
    let placement = if selector & 2 == 0 { Placement::Sharp } else { Placement::Sip };
    for policy in [Policy::Telomere { placement }, Policy::WaoGc, Policy::MultiLogOracle { waf: 2.2 }] {
        let report = admit_in_order_by(&policy, &context, &set.tasks, Tests::Both);
        assert_eq!(report.decisions.len(), set.tasks.len());
        let admitted: Vec<_> = report.admitted.iter().map(|&index| set.tasks[index].clone()).collect();
        let verdict = check(&policy, &context, &admitted);
        assert!(verdict.throughput.load().is_finite(), "{verdict:?}");
        for (index, decision) in report.decisions.iter().enumerate().take(64) {
            let before: Vec<_> = report.admitted.iter().take_while(|&&member| member < index).collect();
            let candidate: Vec<_> = before.iter().chain([&&index]).map(|&&member| set.tasks[member].clone()).collect();
            let whole = check(&policy, &context, &candidate);
            assert_eq!(decision.verdict.storage, whole.storage.totals(), "task {index}");
            assert_eq!(decision.verdict.throughput, whole.throughput, "task {index}");
        }
    }
}

/// The NBD server's protocol parser: the input is what a client sends
/// (handshake, options, then requests) to an export of a 1 MiB device in
/// memory; the server must answer or end the connection with an error,
/// never panic, and never reach past the device.
pub fn nbd_protocol(data: &[u8]) {
    let device = MemoryDevice(Mutex::new(vec![0; 1 << 20]));
    let mut replies = Vec::new();
    let export = nandlab_nbd::Export::new("fuzz", "an in-memory device under the fuzzer");
    let _ = nandlab_nbd::serve(&device, &export, &data[..data.len().min(INPUT_BYTES_MAX)], &mut replies);
}

/// A device in memory that checks every range it is handed.
struct MemoryDevice(Mutex<Vec<u8>>);

impl MemoryDevice {
    fn range(&self, offset: u64, len: u64) -> Result<std::ops::Range<usize>, BlockError> {
        let size_bytes = self.size_bytes();
        let end = u128::from(offset) + u128::from(len);
        if end > u128::from(size_bytes) {
            return Err(BlockError::OutOfRange { offset, end, size_bytes });
        }
        Ok(usize::try_from(offset).expect("inside 1 MiB")..usize::try_from(end).expect("inside 1 MiB"))
    }
}

impl BlockDevice for MemoryDevice {
    fn size_bytes(&self) -> u64 {
        1 << 20
    }

    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<(), BlockError> {
        let range = self.range(offset, buffer.len() as u64)?;
        buffer.copy_from_slice(&self.0.lock().unwrap_or_else(PoisonError::into_inner)[range]);
        Ok(())
    }

    fn write_at(&self, offset: u64, data: &[u8], _fua: bool) -> Result<(), BlockError> {
        let range = self.range(offset, data.len() as u64)?;
        self.0.lock().unwrap_or_else(PoisonError::into_inner)[range].copy_from_slice(data);
        Ok(())
    }

    fn discard(&self, offset: u64, len: u64, _fua: bool) -> Result<(), BlockError> {
        let range = self.range(offset, len)?;
        self.0.lock().unwrap_or_else(PoisonError::into_inner)[range].fill(0);
        Ok(())
    }

    fn flush(&self) -> Result<(), BlockError> {
        Ok(())
    }

    fn stats_text(&self, _daemon: DaemonInfo) -> String {
        String::new()
    }
}

/// An emulated device resumed from a saved state: the input is the state's
/// JSON file, a NUL byte, then its history (a native trace). A `"config":
/// "small"` in the JSON stands for the whole `small` configuration (so the
/// seeds stay short and valid). A state that does not belong to the
/// configuration, or a history that does not read, is refused with an
/// error; one that resumes closes cleanly.
pub fn emulate_state(data: &[u8]) {
    let data = &data[..data.len().min(INPUT_BYTES_MAX)];
    let (json, history) = data.split_at(data.iter().position(|&byte| byte == 0).unwrap_or(data.len()));
    let config = small_config();
    let small = serde_json::to_string(&config).expect("a configuration serializes");
    let json = String::from_utf8_lossy(json).replace(r#""config":"small""#, &format!(r#""config":{small}"#));
    let folder = scratch_folder();
    let (data_path, state_path) = (folder.join("disk"), folder.join("disk.state"));
    let _ = std::fs::remove_file(&data_path);
    std::fs::write(&state_path, json).expect("the scratch folder takes the state");
    std::fs::write(folder.join("disk.state.nlt"), history.get(1..).unwrap_or_default()).expect("and the history");
    let options = nandlab_emulate::EmulateOptions {
        config,
        data: Some(data_path),
        state: Some(state_path),
        pace: nandlab_emulate::Pace::None,
        record: None,
    };
    if let Ok(device) = nandlab_emulate::EmulatedSsd::open(&options) {
        device.close().expect("a resumed device closes");
    }
}

/// The `small` preset without aging, as the emulate target's state was saved with.
fn small_config() -> nandlab_core::Config {
    let (mut config, _) = from_sources(Some("small"), None, &[], None).expect("the small preset is valid");
    config.precondition.enabled = false;
    config
}

/// Removes the folder the targets' files went to (at the end of a run).
pub fn remove_scratch_folder() {
    let _ = std::fs::remove_dir_all(scratch_folder());
}

/// A folder of this process's own for the files a target needs.
fn scratch_folder() -> &'static PathBuf {
    static FOLDER: OnceLock<PathBuf> = OnceLock::new();
    FOLDER.get_or_init(|| {
        let folder = std::env::temp_dir().join(format!("nandlab-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&folder).expect("a scratch folder");
        folder
    })
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
