//! A trace file onto the simulated SSD: each record becomes a host event
//! (512-byte sectors, flags, jbd2 commits recognised) and goes through the
//! one driver — host stages (DISCARD policy, classifier) and the translation
//! layer `ftl.kind` names (page-mapped FTL or the open-channel device under
//! the pblk-like host FTL) — in counting or timed mode, after the aging
//! `[precondition]` asks for (by default workload aging: the trace looped
//! until the WAF settles). Shared by `nandlab replay`,
//! the experiments and `nandlab.replay`.

use crate::drive::{self, Aging, EventSource, HostEvent, HostOp, Passes, Report, SourceError, SECTOR_BYTES};
use crate::error::{Error, Result};
use crate::{Observer, Phase, Progress, OBSERVER_INTERVAL};
use nandlab_core::device::{DeviceConfig, Geometry};
use nandlab_core::ftl::LayerKind;
use nandlab_core::host::discard::DiscardPolicy;
use nandlab_core::timing::Arrival;
use nandlab_core::units::SimNs;
use nandlab_core::workload::AgingChoice;
use nandlab_core::Config;
use nandlab_trace::host::{host_event, journal_sectors};
use nandlab_trace::journal::JournalTracker;
use nandlab_trace::{Format, ReadOptions, TraceHeader, TraceRead};
use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How a trace is replayed: which DISCARD policy, whether the device is
/// scaled to the trace, in which mode, and how the device is aged.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplayMode<'a> {
    /// `None`: the configuration's `discard.policy`.
    pub policy: Option<DiscardPolicy>,
    /// Scale the device (blocks per plane, same over-provisioning) so its
    /// logical capacity equals the traced device's size: `device_size`
    /// when given, else the trace header's, else the end of the highest
    /// sector the trace touches ([`fit_size`]).
    pub fit: bool,
    /// The traced device's size (`--device-size`, or one [`fit_size`]
    /// resolved before); given, the device is scaled to it even without `fit`.
    pub device_size: Option<FitSize>,
    /// `None`: counting mode; `Some(arrival)`: timed.
    pub timed: Option<Arrival>,
    /// The trace workload aging replays instead of the measured one
    /// (`--age-with`; needs `precondition.kind = "workload"`, the default).
    pub age_with: Option<&'a Path>,
}

/// Which trace and how to read it.
#[derive(Clone, Copy, Debug)]
pub struct TraceSource<'a> {
    pub path: &'a Path,
    /// Detected from the content when `None`.
    pub format: Option<Format>,
    /// Keep only this device's requests (e.g. `7,0`), when the trace holds several.
    pub device: Option<&'a str>,
}

impl<'a> TraceSource<'a> {
    /// A trace whose format is detected and which holds one device.
    pub fn file(path: &'a Path) -> Self {
        Self { path, format: None, device: None }
    }

    pub(crate) fn open(&self) -> Result<Box<dyn TraceRead + Send>> {
        Ok(nandlab_trace::open(self.path, self.format, &self.options())?)
    }

    /// What the trace says about the file system journal: its extents from
    /// the header when it has them, else inferred as the replay reads
    /// jbd2's circular log (one pass: a first pass over a long trace would
    /// delay the replay and could not be interrupted); commits are found as
    /// the replay goes.
    pub(crate) fn journal(&self, header: &TraceHeader) -> JournalTracker {
        JournalTracker::new(header)
    }

    fn options(&self) -> ReadOptions {
        ReadOptions { device: self.device.map(str::to_owned) }
    }
}

/// Replays one trace on the device `config` describes, aged as its
/// `[precondition]` says — by default workload aging: the trace itself (or
/// `mode.age_with`) replayed pass after pass from an empty device until the
/// WAF settles — and settled (the aging's GC debt paid, reported apart).
/// `observer` sees the requests read so far (and the aging's progress) and
/// may stop the run.
pub fn replay(
    source: &TraceSource<'_>,
    mut config: Config,
    mode: ReplayMode<'_>,
    observer: &mut dyn Observer,
) -> Result<Report> {
    selects_requests(source)?;
    if let Some(path) = mode.age_with {
        selects_requests(&TraceSource::file(path))?;
    }
    let trace = source.open()?;
    let header = trace.header().clone();
    if let Some(policy) = mode.policy {
        config.discard.policy = policy;
    }
    if let Some(size) = fit_size(source, &mode)? {
        config.device = fitted_device(&config, size).map_err(|error| fit_error(error, size))?;
    }
    if let Some(arrival) = mode.timed {
        config.timing.arrival = arrival;
    }
    if let (None, Some(recorded)) = (config.precondition.kind, recorded_aging(source, &header, &mode)?) {
        // Named in the configuration, so the aging stage (whose own default is random fill) runs it.
        config.precondition.kind = Some(recorded);
    }
    let kind = config.precondition.kind_or(AgingChoice::Workload);
    if mode.age_with.is_some() && kind != AgingChoice::Workload {
        return Err(Error::Invalid(format!(
            "--age-with is workload aging (the trace replayed until the WAF settles): it needs precondition.kind = \
             \"workload\", a replay's default, not \"{}\"",
            kind.name()
        )));
    }
    let aging_source = mode.age_with.map_or(*source, TraceSource::file);
    let mut passes = match kind {
        AgingChoice::Workload => Some(TracePass::new(&aging_source, 0, Rc::default())?),
        AgingChoice::RandomFill | AgingChoice::None => None,
    };
    let watched = Watched { observer: RefCell::new(observer), stopped: RefCell::new(None) };
    let tracker = source.journal(&header);
    let journal = journal_sectors(&header.journal, &header);
    let mut events = TraceEvents::new(trace, header, tracker, Phase::Measure, &watched);
    // The measured trace reports through its events; the aging through the
    // driver, which stops once the observer has said so.
    let stop = Arc::new(AtomicBool::new(false));
    let mut aging_progress = |progress: Progress| {
        if matches!(progress.phase, Phase::Fill | Phase::Overwrite | Phase::AgingTrace) && !watched.poll(progress) {
            stop.store(true, Ordering::Relaxed);
        }
    };
    let aging = match passes.as_mut() {
        Some(passes) => Aging::Workload(passes),
        None => Aging::Configured,
    };
    let report = drive::replay(
        &config,
        &journal,
        aging,
        &mut events,
        mode.timed.is_some(),
        &mut aging_progress,
        Arc::clone(&stop),
    );
    let aging_failure = passes.as_mut().and_then(TracePass::take_failure);
    match watched.stopped.into_inner().or(aging_failure) {
        Some(error) => Err(error),
        None => report,
    }
}

/// The aging the trace's header says its device had (an emulated session's
/// recording: `none` for a fresh device), which a replay runs when its
/// configuration names none; `None` when the header does not say, or when
/// `--age-with` asks for workload aging.
fn recorded_aging(
    source: &TraceSource<'_>,
    header: &TraceHeader,
    mode: &ReplayMode<'_>,
) -> Result<Option<AgingChoice>> {
    let Some(name) = header.aging.as_deref().filter(|_| mode.age_with.is_none()) else {
        return Ok(None);
    };
    serde_json::from_value(serde_json::Value::String(name.to_owned())).map(Some).map_err(|_| {
        Error::Invalid(format!(
            "{}: the header's aging {name:?} is not a precondition.kind (none, random-fill, workload)",
            source.path.display()
        ))
    })
}

/// Refuses a trace of which the replay would take no request — a
/// `--trace-device` that names no device of the trace, or a file with no event
/// the format counts as a request (a blkparse file without `D` actions) —
/// naming the filter and the devices the trace holds. Reads up to the first
/// request (the whole trace only when there is none), before any aging.
pub fn selects_requests(source: &TraceSource<'_>) -> Result<()> {
    let mut records = source.open()?;
    if records.next().transpose()?.is_some() {
        return Ok(());
    }
    let format = records.header().source_format.clone().unwrap_or_else(|| "nandlab".to_owned());
    let devices = records.devices();
    let held = if devices.is_empty() {
        "it holds no request of any device".to_owned()
    } else {
        format!("it holds requests of device {} (pick one with --trace-device)", devices.join(", "))
    };
    let filter = match source.device {
        Some(device) => format!("--trace-device {device} selects none of its requests"),
        None => format!("none of its lines is a request{}", requests_are(&format)),
    };
    Err(Error::Invalid(format!("{}: the replay would take no request: {filter}; {held}", source.path.display())))
}

/// Which lines of a `format` trace are requests, when it has others.
fn requests_are(format: &str) -> &'static str {
    match format {
        "tracefs" => " (only block_rq_issue events are)",
        "blkparse" => " (only D actions, requests issued to the driver, are)",
        _ => "",
    }
}

/// The size a replay scales the device to, and where it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FitSize {
    pub bytes: u64,
    pub origin: SizeOrigin,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeOrigin {
    /// `device_size` (`--device-size`).
    Given,
    /// The trace header's `device_size_bytes`.
    Header,
    /// The end of the highest sector the trace touches: raw traces (tracefs,
    /// blkparse, CSV) say nothing of the device they came from.
    HighestSector,
}

impl std::fmt::Display for SizeOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SizeOrigin::Given => "--device-size",
            SizeOrigin::Header => "the trace header's device size",
            SizeOrigin::HighestSector => "the highest sector the trace touches",
        })
    }
}

/// The size `mode` scales the device to (`None`: the configuration's own
/// size): the given size, else the header's, else the trace's extent —
/// which takes one pass over the trace.
pub fn fit_size(source: &TraceSource<'_>, mode: &ReplayMode<'_>) -> Result<Option<FitSize>> {
    if let Some(size) = mode.device_size {
        return Ok(Some(size));
    }
    if !mode.fit {
        return Ok(None);
    }
    let records = source.open()?;
    let header = records.header().clone();
    if let Some(bytes) = header.device_size_bytes {
        return Ok(Some(FitSize { bytes, origin: SizeOrigin::Header }));
    }
    let mut end_sector = 0_u64;
    for record in records {
        end_sector = end_sector.max(record?.end().0);
    }
    if end_sector == 0 {
        // A trace that selects no request at all is refused as such.
        selects_requests(source)?;
        return Err(Error::Invalid(format!(
            "{}: the trace touches no sector and its header gives no device size: give --device-size",
            source.path.display()
        )));
    }
    let bytes = end_sector.checked_mul(u64::from(header.sector_size_bytes)).ok_or_else(|| {
        Error::Invalid(format!("{}: sector {end_sector} lies beyond 2^64 bytes", source.path.display()))
    })?;
    Ok(Some(FitSize { bytes, origin: SizeOrigin::HighestSector }))
}

/// `config`'s device scaled to `size`, checked as the simulation will
/// check it (a replay may fill the device, so the page FTL's full-device
/// reserve is needed); the error, if no device fits, is the one of the
/// device with the configuration's own units, so that it can say which
/// size it was. The over-provisioning, block and page sizes and timing
/// stay the configuration's; what may change, in this order of preference:
/// 1. only the blocks per plane (every unit kept);
/// 2. fewer parallel units ([`DeviceConfig::with_fewer_units`]), the most
///    that leave each unit enough spare blocks for its reserve: a small
///    trace's few blocks spread over fewer units;
/// 3. one unit with more blocks than the trace needs, the fewest that hold
///    the reserve: a trace too small for even one unit's reserve gets a
///    device larger than its extent, at the same ρ.
pub fn fitted_device(config: &Config, size: FitSize) -> Result<DeviceConfig, nandlab_core::ConfigError> {
    let scaled = config.device.fitted_to(size.bytes)?;
    let Err(error) = check_fitted(config, &scaled) else { return Ok(scaled) };
    let mut one_unit = scaled;
    for fewer in config.device.with_fewer_units() {
        let Ok(device) = fewer.fitted_to(size.bytes) else { continue };
        if check_fitted(config, &device).is_ok() {
            return Ok(device);
        }
        one_unit = device;
    }
    grown_to_fit(config, &one_unit, size).ok_or(error)
}

/// Whether `device` holds what the replay needs: a valid geometry and, for
/// the page FTL, the reserve of a device that gets full.
fn check_fitted(config: &Config, device: &DeviceConfig) -> Result<(), nandlab_core::ConfigError> {
    let geometry = Geometry::from_config(device)?;
    if config.ftl.kind == LayerKind::Page {
        config.ftl.validate(&geometry)?;
        config.ftl.validate_for_full_device(&geometry, config.host_streams())?;
    }
    Ok(())
}

/// `device` (one unit too small for its reserve) with the fewest blocks per
/// plane that pass [`check_fitted`] and still hold `size`, at the
/// configuration's ρ: doubling the blocks until one passes, then halving
/// the interval (the spare blocks grow with the blocks).
fn grown_to_fit(config: &Config, device: &DeviceConfig, size: FitSize) -> Option<DeviceConfig> {
    let rho = match config.device.over_provisioning {
        Some(rho) => rho,
        None => Geometry::from_config(&config.device).ok()?.over_provisioning(),
    };
    let fits = |blocks: u32| {
        let grown = device.with_blocks_per_plane(blocks, rho);
        let holds = Geometry::from_config(&grown).is_ok_and(|geometry| geometry.logical_bytes() >= size.bytes);
        (holds && check_fitted(config, &grown).is_ok()).then_some(grown)
    };
    let (mut failing, mut passing) = (device.blocks_per_plane, device.blocks_per_plane);
    while fits(passing).is_none() {
        failing = passing;
        passing = passing.checked_mul(2).filter(|&blocks| blocks <= BLOCKS_PER_PLANE_MAX)?;
    }
    while passing - failing > 1 {
        let middle = failing + (passing - failing) / 2;
        if fits(middle).is_some() {
            passing = middle;
        } else {
            failing = middle;
        }
    }
    fits(passing)
}

/// The `device.blocks_per_plane` limit (docs/configuration.md, "Limits").
const BLOCKS_PER_PLANE_MAX: u32 = 1 << 24;

/// A device that cannot be scaled to `size`, with where the size came from.
pub fn fit_error(error: nandlab_core::ConfigError, size: FitSize) -> Error {
    nandlab_core::ConfigError::new(
        error.key.clone(),
        format!(
            "{}; the device was scaled to {} bytes from {}, which sets device.blocks_per_plane: raise \
             device.over_provisioning or give a larger --device-size",
            error.reason, size.bytes, size.origin
        ),
    )
    .into()
}

/// The observer of one replay, shared by its event sources and the
/// driver's progress callback; the first error (the observer's, or a trace
/// that does not read) stops the run and is what the replay returns.
struct Watched<'o> {
    observer: RefCell<&'o mut dyn Observer>,
    stopped: RefCell<Option<Error>>,
}

impl Watched<'_> {
    /// Shows `progress`; false once the run must stop.
    fn poll(&self, progress: Progress) -> bool {
        if self.stopped.borrow().is_some() {
            return false;
        }
        let Ok(mut observer) = self.observer.try_borrow_mut() else { return true };
        match observer.progress(progress) {
            Ok(()) => true,
            Err(error) => {
                self.stop(error);
                false
            }
        }
    }

    fn stop(&self, error: Error) {
        self.stopped.borrow_mut().get_or_insert(error);
    }
}

/// A trace file as the driver's event source, calling the observer every
/// [`OBSERVER_INTERVAL`] requests.
struct TraceEvents<'w, 'o> {
    records: Box<dyn TraceRead + Send>,
    header: TraceHeader,
    journal: JournalTracker,
    phase: Phase,
    done: u64,
    watched: &'w Watched<'o>,
}

impl<'w, 'o> TraceEvents<'w, 'o> {
    fn new(
        records: Box<dyn TraceRead + Send>,
        header: TraceHeader,
        journal: JournalTracker,
        phase: Phase,
        watched: &'w Watched<'o>,
    ) -> Self {
        Self { records, header, journal, phase, done: 0, watched }
    }
}

impl EventSource for TraceEvents<'_, '_> {
    fn next_event(&mut self) -> Result<Option<HostEvent>, SourceError> {
        self.done += 1;
        let stopped = || SourceError("stopped by its observer".to_owned());
        if self.done.is_multiple_of(OBSERVER_INTERVAL)
            && !self.watched.poll(Progress { phase: self.phase, done: self.done, total: 0 })
        {
            return Err(stopped());
        }
        match self.records.next() {
            None => Ok(None),
            Some(Ok(record)) => Ok(Some(host_event(&record, &self.header, &mut self.journal))),
            Some(Err(error)) => {
                let message = error.to_string();
                self.watched.stop(error.into());
                Err(SourceError(message))
            }
        }
    }
}

/// Passes over a trace at its own addresses, as workload aging repeats it:
/// the first from record `first`, each further one ([`Passes::restart`])
/// from `first` or the record [`TracePass::restarting_at`] names, its times
/// shifted to follow the last. Counts the journal's pages as the writes go by.
pub(crate) struct TracePass<'a> {
    source: TraceSource<'a>,
    records: Box<dyn TraceRead + Send>,
    header: TraceHeader,
    tracker: JournalTracker,
    /// The record further passes begin at.
    restart_first: u64,
    /// Added to every record's time: the end of the passes before.
    offset: u64,
    last_time: u64,
    journal_pages: Rc<Cell<u64>>,
    /// The first error, typed (the driver sees only its message), so the
    /// replay returns a trace error as one.
    failure: Option<Error>,
}

impl<'a> TracePass<'a> {
    pub(crate) fn new(source: &TraceSource<'a>, first: u64, journal_pages: Rc<Cell<u64>>) -> Result<Self> {
        let records = source.open()?;
        let header = records.header().clone();
        let tracker = source.journal(&header);
        let mut pass = Self {
            source: *source,
            records,
            header,
            tracker,
            restart_first: first,
            offset: 0,
            last_time: 0,
            journal_pages,
            failure: None,
        };
        pass.skip_to(first)?;
        Ok(pass)
    }

    /// Passes after the first begin at record `first` (the journal
    /// experiment's workload part, after the file system's fill).
    pub(crate) fn restarting_at(mut self, first: u64) -> Self {
        self.restart_first = first;
        self
    }

    fn skip_to(&mut self, first: u64) -> Result<()> {
        for _ in 0..first {
            let record = self.records.next().ok_or_else(|| {
                Error::Invalid(format!("{}: the trace ends before record {first}", self.source.path.display()))
            })??;
            self.tracker.observe(&record);
        }
        Ok(())
    }

    fn begin_again(&mut self) -> Result<()> {
        self.records = self.source.open()?;
        self.tracker = self.source.journal(&self.header);
        self.offset = self.last_time.saturating_add(1);
        self.skip_to(self.restart_first)
    }

    fn event(&mut self) -> Result<Option<HostEvent>> {
        let Some(record) = self.records.next() else { return Ok(None) };
        let record = record?;
        let mut event = host_event(&record, &self.header, &mut self.tracker);
        self.last_time = event.time.0.saturating_add(self.offset);
        event.time = SimNs(self.last_time);
        if event.op == HostOp::Write && event.journal_thread {
            let pages = (event.sectors.end - event.sectors.start) * SECTOR_BYTES / 4096;
            self.journal_pages.set(self.journal_pages.get() + pages);
        }
        Ok(Some(event))
    }
}

impl TracePass<'_> {
    /// The error as the driver takes it, the typed error kept for the replay.
    fn failed(&mut self, error: Error) -> SourceError {
        let message = SourceError(error.to_string());
        self.failure.get_or_insert(error);
        message
    }

    /// The first error a pass met, typed.
    pub(crate) fn take_failure(&mut self) -> Option<Error> {
        self.failure.take()
    }
}

impl EventSource for TracePass<'_> {
    fn next_event(&mut self) -> Result<Option<HostEvent>, SourceError> {
        self.event().map_err(|error| self.failed(error))
    }
}

impl Passes for TracePass<'_> {
    fn restart(&mut self) -> Result<(), SourceError> {
        self.begin_again().map_err(|error| self.failed(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::config_from;
    use crate::Error;

    /// `requests` 4 KiB writes, MSR Cambridge CSV, over the first 8 MiB.
    fn msr_trace(dir: &Path, requests: u64) -> std::path::PathBuf {
        let path = dir.join("writes.csv");
        let lines: String = (0..requests)
            .map(|index| {
                format!("{},hm,0,Write,{},4096,1\n", 128_166_372_003_061_629 + index, (index * 4096) % (8 << 20))
            })
            .collect();
        std::fs::write(&path, lines).expect("trace");
        path
    }

    fn small() -> Config {
        config_from("preset = \"small\"\n[precondition]\nenabled = false\n", &[]).expect("small preset")
    }

    /// The MSR trace as a native trace whose header says how its device was aged.
    fn aged_trace(dir: &Path, aging: &str) -> std::path::PathBuf {
        let path = dir.join(format!("{aging}.nlt"));
        let header = TraceHeader { aging: Some(aging.to_owned()), ..TraceHeader::default() };
        let records = nandlab_trace::open(&msr_trace(dir, 2_000), None, &ReadOptions::default()).expect("trace");
        let mut writer = nandlab_trace::create(&path, Format::Native, &header).expect("create");
        for record in records {
            writer.write(&record.expect("record")).expect("write");
        }
        writer.finish().expect("finish");
        path
    }

    /// An emulated session's recording says its device started fresh: the
    /// replay does too (no workload aging) unless the configuration names a
    /// kind; a header naming no kind is refused by name.
    #[test]
    fn a_replay_ages_as_the_traces_header_says_unless_configured() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let preset = config_from("preset = \"small\"\n", &[]).expect("small preset");
        let fresh = aged_trace(dir.path(), "none");
        let replayed = replay(&TraceSource::file(&fresh), preset.clone(), ReplayMode::default(), &mut |_| Ok(()));
        assert!(replayed.expect("replays").precondition.is_none(), "the header's fresh device");
        let workload = config_from("preset = \"small\"\n[precondition]\nkind = \"workload\"\n", &[]).expect("config");
        let replayed = replay(&TraceSource::file(&fresh), workload, ReplayMode::default(), &mut |_| Ok(()));
        assert!(replayed.expect("replays").precondition.is_some(), "the configuration's kind comes first");
        let error = replay(
            &TraceSource::file(&aged_trace(dir.path(), "fresh")),
            preset,
            ReplayMode::default(),
            &mut |_| Ok(()),
        )
        .expect_err("an unknown aging");
        assert!(error.to_string().contains("\"fresh\" is not a precondition.kind"), "{error}");
    }

    #[test]
    fn the_observer_sees_progress_and_a_completed_replay_is_unchanged_by_it() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let trace = msr_trace(dir.path(), 10 * OBSERVER_INTERVAL);
        let mut seen = Vec::new();
        let watched = replay(&TraceSource::file(&trace), small(), ReplayMode::default(), &mut |progress: Progress| {
            seen.push(progress.done);
            Ok(())
        })
        .expect("replays");
        assert_eq!(seen.len(), 10, "one call per {OBSERVER_INTERVAL} requests: {seen:?}");
        assert!(seen.windows(2).all(|pair| pair[0] < pair[1]));
        let unwatched =
            replay(&TraceSource::file(&trace), small(), ReplayMode::default(), &mut |_| Ok(())).expect("replays");
        assert_eq!(watched.measured.counters.host_pages_written, 10 * OBSERVER_INTERVAL);
        assert_eq!(serde_json::to_value(&watched).expect("json"), serde_json::to_value(&unwatched).expect("json"));
    }

    #[test]
    fn a_cancelled_replay_stops_at_the_next_poll_in_either_mode() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let trace = msr_trace(dir.path(), 20 * OBSERVER_INTERVAL);
        for timed in [None, Some(Arrival::Closed)] {
            let mut calls = 0;
            let mode = ReplayMode { timed, ..ReplayMode::default() };
            let error = replay(&TraceSource::file(&trace), small(), mode, &mut |_| {
                calls += 1;
                if calls == 3 {
                    Err(Error::Cancelled)
                } else {
                    Ok(())
                }
            })
            .expect_err("cancelled");
            assert!(error.is_cancelled(), "{timed:?}: {error}");
            assert_eq!(calls, 3, "{timed:?}: no request is read after the observer says stop");
        }
        let interrupt = crate::Interrupt::default();
        interrupt.raise();
        let mut open_channel = small();
        open_channel.ftl.kind = nandlab_core::ftl::LayerKind::OpenChannel;
        let error = replay(&TraceSource::file(&trace), open_channel, ReplayMode::default(), &mut interrupt.clone())
            .expect_err("cancelled");
        assert!(error.is_cancelled(), "{error}");
    }

    #[test]
    fn fit_without_a_device_size_takes_the_highest_sector_the_trace_touches() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let trace = msr_trace(dir.path(), 3000);
        let source = TraceSource::file(&trace);
        let fit = ReplayMode { fit: true, ..ReplayMode::default() };
        let size = fit_size(&source, &fit).expect("scans").expect("a size");
        assert_eq!(size, FitSize { bytes: 8 << 20, origin: SizeOrigin::HighestSector });
        let given = FitSize { bytes: 1 << 30, origin: SizeOrigin::Given };
        assert_eq!(fit_size(&source, &ReplayMode { device_size: Some(given), ..fit }).expect("given"), Some(given));
        assert_eq!(fit_size(&source, &ReplayMode::default()).expect("none"), None);
        let report = replay(
            &source,
            small(),
            ReplayMode {
                device_size: Some(FitSize { bytes: 64 << 20, origin: SizeOrigin::Given }),
                ..ReplayMode::default()
            },
            &mut |_| Ok(()),
        )
        .expect("replays on a 64 MiB device");
        assert_eq!(report.device.logical_bytes, 64 << 20);
    }

    /// Issue 26: a small trace on a preset of many parallel units left each
    /// unit too few spare blocks for its reserve, and `--fit` refused it.
    /// Now the fit keeps ρ, the block size and timing, and takes fewer units
    /// — the most that hold the reserve — or, below one unit's worth, grows
    /// that unit beyond the trace.
    #[test]
    fn fit_takes_fewer_units_or_grows_one_at_the_preset_s_over_provisioning() {
        let config = config_from("preset = \"femu-32g\"\n[precondition]\nenabled = false\n", &[]).expect("preset");
        let fit = |bytes: u64| {
            let device = fitted_device(&config, FitSize { bytes, origin: SizeOrigin::Given }).expect("fits");
            (Geometry::from_config(&device).expect("valid"), device)
        };
        let (gib, device) = fit(1 << 30);
        assert_eq!(gib.logical_bytes(), 1 << 30);
        assert!(gib.units() < 64 && gib.pages_per_block == 256, "{device:?}");
        let full = |geometry: &Geometry| config.ftl.validate_for_full_device(geometry, 1);
        assert!(full(&gib).is_ok());
        // The most units that work: one more unit (its blocks rescaled) would not.
        let more = DeviceConfig { chips_per_channel: device.chips_per_channel + 1, ..config.device.clone() };
        let more = Geometry::from_config(&more.fitted_to(1 << 30).expect("scaled")).expect("valid");
        assert!(full(&more).is_err(), "{} units would have worked", more.units());
        let (tiny, _) = fit(8 << 20);
        assert_eq!(tiny.units(), 1);
        assert!(tiny.logical_bytes() > 8 << 20 && full(&tiny).is_ok(), "{tiny:?}");
        assert!((tiny.over_provisioning() - 0.125).abs() < 1e-3, "ρ kept: {}", tiny.over_provisioning());
        let smaller = DeviceConfig { blocks_per_plane: tiny.blocks_per_plane - 1, ..config.device.clone() };
        let smaller = DeviceConfig { channels: 1, chips_per_channel: 1, ..smaller };
        assert!(full(&Geometry::from_config(&smaller).expect("valid")).is_err(), "the fewest blocks that work");
    }

    #[test]
    fn a_size_no_device_holds_names_the_key_and_the_size() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let trace = msr_trace(dir.path(), 10);
        let config = config_from("preset = \"femu-32g\"\n[precondition]\nenabled = false\n", &[]).expect("preset");
        let mode = ReplayMode {
            device_size: Some(FitSize { bytes: 1 << 50, origin: SizeOrigin::Given }),
            ..ReplayMode::default()
        };
        let error = replay(&TraceSource::file(&trace), config, mode, &mut |_| Ok(())).expect_err("too large");
        let message = error.to_string();
        assert!(message.contains("configuration key `device") && message.contains("--device-size"), "{message}");
    }

    #[test]
    fn a_device_filter_that_selects_nothing_is_refused_with_the_devices_the_trace_holds() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let trace = msr_trace(dir.path(), 10);
        let source = TraceSource { device: Some("src1,0"), ..TraceSource::file(&trace) };
        let error = replay(&source, small(), ReplayMode::default(), &mut |_| Ok(())).expect_err("nothing selected");
        let message = error.to_string();
        assert!(message.contains("--trace-device src1,0 selects none") && message.contains("device hm,0"), "{message}");
    }

    #[test]
    fn an_empty_trace_is_refused_and_a_trace_touching_no_sector_asks_for_a_size() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let trace = msr_trace(dir.path(), 0);
        let mode = ReplayMode { fit: true, ..ReplayMode::default() };
        let source = TraceSource { format: Some(Format::Msr), ..TraceSource::file(&trace) };
        for error in [fit_size(&source, &mode).map(drop), replay(&source, small(), mode, &mut |_| Ok(())).map(drop)] {
            let error = error.expect_err("nothing to replay");
            assert!(matches!(error, Error::Invalid(ref message) if message.contains("no request")), "{error}");
        }
        // A trace of flushes alone selects requests but touches no sector: its fit asks for a size.
        let flushes = dir.path().join("flushes.trace");
        std::fs::write(
            &flushes,
            "  kworker-1 [000] .....  1.000000: block_rq_issue: 7,0 FF 0 () 0 + 0 be,0,4 [kworker]\n",
        )
        .expect("trace");
        let error = fit_size(&TraceSource::file(&flushes), &mode).expect_err("no size");
        assert!(matches!(error, Error::Invalid(ref message) if message.contains("--device-size")), "{error}");
    }
}
