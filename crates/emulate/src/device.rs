//! The emulated SSD as a [`BlockDevice`]: each request is timestamped, logged (history, optional
//! recording), turned into a host event as a replay of that log would turn it
//! ([`nandlab_trace::host::host_event`], journal commits inferred from the FLUSH/FUA stream the same
//! way), enters the [`LiveDevice`] as it arrives, is applied to the contents, and — paced — is
//! answered when the simulated device completes it ([`crate::pacer`]): requests of several
//! threads are in the device at once, as a host queue holds them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use nandlab_core::host::event::SECTOR_BYTES;
use nandlab_core::sim::{EventTicket, LiveDevice, PhaseReport};
use nandlab_core::workload::AgingChoice;
use nandlab_core::{Config, Report, Simulation};
use nandlab_nbd::{BlockDevice, BlockError, Command, CommandKind, Completion, DaemonInfo, QueueingDevice, Submission};
use nandlab_trace::host::host_event;
use nandlab_trace::journal::JournalTracker;
use nandlab_trace::{
    Access, Flags, Format, Op, ProcessName, ReadOptions, Record, Sector, SectorCount, TimestampNs, TraceHeader,
    TraceWrite,
};
use serde::Serialize;

use crate::contents::{Contents, FileContents, RamContents};
use crate::error::EmulateError;
use crate::pace::Pace;
use crate::pacer::{answer_all, device_failed, Answer, Clock, Paced, Pacer, Reply, Waiter};
use crate::served::{Served, ServedLatency};
use crate::state::{SavedSession, State};

/// How to build an emulated SSD.
#[derive(Clone, Debug)]
pub struct EmulateOptions {
    pub config: Config,
    /// The data file (sparse, created mode 0600); `None`: contents in RAM.
    pub data: Option<PathBuf>,
    /// The saved state (needs a data file); `None` with a data file: `DATA.state`.
    pub state: Option<PathBuf>,
    pub pace: Pace,
    /// Also write this session's requests to this native trace.
    pub record: Option<PathBuf>,
}

/// The statistics `DIR/stats` shows (JSON).
#[derive(Debug, Serialize)]
pub struct LiveStats {
    pub daemon_pid: u32,
    pub daemon_stop_requested: bool,
    pub pace: Pace,
    pub data: Option<PathBuf>,
    /// Requests served in this session (a resumed device's history not included).
    pub requests: u64,
    pub wall_s: f64,
    /// Free blocks of the flash.
    pub free_blocks: u64,
    /// The measured phases the user's marks ended, in order (`report.measured` is the phase
    /// since the last mark).
    pub before_marks: Vec<MarkedPhase>,
    pub report: Report,
    /// What the clients waited, the host path included ([`EmulatedSsd::served_latency`]).
    pub served_latency: ServedLatency,
}

/// What the device measured between two marks (or from the start to the first mark), e.g. `mkfs`.
#[derive(Clone, Debug, Serialize)]
pub struct MarkedPhase {
    /// This session's requests when the mark came.
    pub requests: u64,
    pub measured: PhaseReport,
}

/// An emulated SSD; shared by the front ends' threads.
pub struct EmulatedSsd {
    size_bytes: u64,
    pace: Pace,
    data: Option<PathBuf>,
    /// The session, and the clock its times come from.
    pacer: Arc<Pacer<Session>>,
    /// The pacer's thread (`--pace real`), until the device stops.
    pacer_thread: Mutex<Option<JoinHandle<()>>>,
    /// The phases ended by marks ([`Self::mark`]); kept after the stop for its report.
    marks: Mutex<Vec<MarkedPhase>>,
    /// What the clients waited, the host path included.
    served: Served,
}

/// What one request at a time may touch.
struct Session {
    live: LiveDevice,
    contents: Box<dyn Contents>,
    journal: JournalTracker,
    header: TraceHeader,
    history: Option<Box<dyn TraceWrite + Send>>,
    record: Option<Box<dyn TraceWrite + Send>>,
    state: Option<State>,
    requests: u64,
    last_ns: u64,
    /// Requests in the device and who waits for their completion.
    waiting: HashMap<EventTicket, Waiter>,
    /// Why the device stopped serving, if it failed while running on its own (paced).
    failed: Option<String>,
}

/// Ages a new emulated device: by default not at all — a fresh drive, on
/// which `mkfs` (discarding) and the file system's own writes make the only
/// valid pages — or random fill when the configuration asks for it, its GC
/// debt then paid before the session starts. Workload aging has no
/// workload to repeat before the session, and is refused.
fn age(simulation: &mut Simulation, aging: AgingChoice) -> Result<(), EmulateError> {
    match aging {
        AgingChoice::None => Ok(()),
        AgingChoice::RandomFill => {
            simulation.precondition(&mut |_| {})?;
            Ok(simulation.settle()?)
        }
        AgingChoice::Workload => Err(EmulateError::Invalid(
            "precondition.kind = \"workload\" needs a workload to repeat before the session: a live device \
             starts fresh (\"none\", its default) or from \"random-fill\""
                .to_owned(),
        )),
    }
}

/// The header of every trace the emulator writes: 512-byte sectors, the device's size, and the
/// aging the device had before the trace's first request (`None`: the trace starts on a device
/// resumed from its history, which no aging makes), so a replay starts from the same device.
fn trace_header(size_bytes: u64, aging: Option<AgingChoice>) -> TraceHeader {
    TraceHeader {
        device_size_bytes: Some(size_bytes),
        source_format: Some("nandlab-emulate".to_owned()),
        aging: aging.map(|kind| kind.name().to_owned()),
        ..TraceHeader::default()
    }
}

impl EmulatedSsd {
    /// Builds the device: ages it as `[precondition]` says, or resumes it from its saved state.
    /// Every file is opened and the history run before the state is marked in use, so a start
    /// that fails here leaves the saved state as it was; one given up later calls [`Self::abandon`].
    pub fn open(options: &EmulateOptions) -> Result<EmulatedSsd, EmulateError> {
        let size_bytes = options.config.validate().map_err(nandlab_core::SimError::from)?.logical_bytes();
        let contents: Box<dyn Contents> = match &options.data {
            Some(path) => Box::new(FileContents::open(path, size_bytes)?),
            None => Box::new(RamContents::default()),
        };
        let state_path = match (&options.data, &options.state) {
            (None, Some(_)) => return Err(EmulateError::Invalid("--state needs --data FILE".to_owned())),
            (None, None) => None,
            (Some(_), Some(state)) => Some(state.clone()),
            (Some(data), None) => Some(default_state_path(data)),
        };
        let state = state_path.map(|path| State::open(&path, &options.config)).transpose()?;
        let aging = options.config.precondition.kind_or(AgingChoice::None);
        let header = trace_header(size_bytes, Some(aging));
        let mut journal = JournalTracker::new(&header);
        let mut simulation = Simulation::new(&options.config)?;
        age(&mut simulation, aging)?;
        let mut history = state
            .as_ref()
            .map(|state| nandlab_trace::create_with(&state.history_path(), Format::Native, &header, Access::Private))
            .transpose()?;
        if let (Some(state), Some(writer)) = (&state, history.as_mut()) {
            if let Some(previous) = state.previous_history() {
                let sessions = state.previous_sessions();
                let records = nandlab_trace::open(&previous, Some(Format::Native), &ReadOptions::default())?;
                let mut replay =
                    History { records, path: &previous, header: &header, journal: &mut journal, copy: writer.as_mut() };
                simulation = replay.run(simulation, sessions)?;
            }
        }
        let resumed = state.as_ref().is_some_and(|state| state.previous_history().is_some());
        let record_header = trace_header(size_bytes, (!resumed).then_some(aging));
        let record = options
            .record
            .as_ref()
            .map(|path| nandlab_trace::create_with(path, Format::Native, &record_header, Access::Private))
            .transpose()?;
        let base_ns = state.as_ref().map_or(0, |state| state.last_timestamp_ns().saturating_add(1_000_000_000));
        let live = LiveDevice::new(simulation, options.pace == Pace::Real)?;
        if let Some(state) = &state {
            state.mark_in_use()?;
        }
        let session = Session {
            live,
            contents,
            journal,
            header,
            history,
            record,
            state,
            requests: 0,
            last_ns: base_ns,
            waiting: HashMap::new(),
            failed: None,
        };
        let pacer = Arc::new(Pacer::new(Clock { origin: Instant::now(), base_ns }, session));
        let pacer_thread = match options.pace {
            Pace::None => None,
            Pace::Real => {
                let pacer = Arc::clone(&pacer);
                let spawned = std::thread::Builder::new().name("nandlab-pacer".into()).spawn(move || pacer.run());
                Some(spawned.map_err(|error| EmulateError::Invalid(format!("cannot start the pacer: {error}")))?)
            }
        };
        Ok(EmulatedSsd {
            size_bytes,
            pace: options.pace,
            data: options.data.clone(),
            pacer,
            pacer_thread: Mutex::new(pacer_thread),
            marks: Mutex::default(),
            served: Served::new(),
        })
    }

    fn session(&self) -> MutexGuard<'_, Option<Session>> {
        self.pacer.lock()
    }

    /// Starts a new measured phase (the user's mark, `nandlab emulate mark DIR`): what was
    /// measured until now (e.g. `mkfs`) is reported apart. Returns the phase it ended; `None`
    /// once the device is closed.
    pub fn mark(&self) -> Option<MarkedPhase> {
        let mut guard = self.session();
        let session = guard.as_mut()?;
        let phase = MarkedPhase { requests: session.requests, measured: session.live.mark() };
        self.marks.lock().unwrap_or_else(PoisonError::into_inner).push(phase.clone());
        Some(phase)
    }

    /// The phases the marks ended so far, in order.
    pub fn before_marks(&self) -> Vec<MarkedPhase> {
        self.marks.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// What the clients waited so far, from the moment the server received each request to the
    /// moment its reply went out ([`crate::served`]).
    pub fn served_latency(&self) -> ServedLatency {
        self.served.summary()
    }

    /// What the device measured so far.
    pub fn stats(&self, daemon: DaemonInfo) -> Option<LiveStats> {
        let guard = self.session();
        let session = guard.as_ref()?;
        Some(LiveStats {
            daemon_pid: daemon.pid,
            daemon_stop_requested: daemon.stop_requested,
            pace: self.pace,
            data: self.data.clone(),
            requests: session.requests,
            wall_s: self.pacer.clock.origin.elapsed().as_secs_f64(),
            free_blocks: session.live.free_blocks(),
            before_marks: self.before_marks(),
            report: session.live.report(),
            served_latency: self.served_latency(),
        })
    }

    /// Stops the device: the DISCARD stage's held ranges are issued and the flash finishes its
    /// work, the contents are synced, the traces finished and the state saved. Returns the final
    /// report; `None` when already closed.
    pub fn close(&self) -> Result<Option<Report>, EmulateError> {
        let Some(session) = self.stop_pacer() else {
            return Ok(None);
        };
        self.stop(session).map(Some)
    }

    /// Gives up a start (a front end failed to start): the saved state goes back to what the
    /// start found, so the next start resumes the device; a device that served requests in the
    /// meantime stops as [`Self::close`] stops it, its state holding them.
    pub fn abandon(&self) -> Result<(), EmulateError> {
        let Some(session) = self.stop_pacer() else {
            return Ok(());
        };
        if session.requests > 0 {
            return self.stop(session).map(drop);
        }
        session.state.as_ref().map(State::restore).transpose().map(drop)
    }

    fn stop(&self, session: Session) -> Result<Report, EmulateError> {
        let Session { live, mut contents, history, record, state, requests, last_ns, waiting, .. } = session;
        // Requests still in the device complete as it finishes its work.
        for (_, waiter) in waiting {
            waiter.answer(Ok(last_ns));
        }
        let (_, report) = live.finish()?;
        let data = self.data.as_deref().unwrap_or(Path::new("RAM"));
        contents.sync().map_err(EmulateError::file(data, "sync the data file"))?;
        if let Some(record) = record {
            record.finish()?;
        }
        if let (Some(history), Some(state)) = (history, state) {
            history.finish()?;
            state.save(SavedSession { requests, pace: self.pace }, last_ns)?;
        }
        Ok(report)
    }

    /// Takes the session out and waits for the pacer to see it gone; `None` when already closed.
    fn stop_pacer(&self) -> Option<Session> {
        let session = self.pacer.stop();
        if let Some(thread) = self.pacer_thread.lock().unwrap_or_else(PoisonError::into_inner).take() {
            // A panic in the pacer was already reported on stderr.
            let _ = thread.join();
        }
        session
    }

    /// Runs one request on the calling thread: entered as [`Self::enter`] enters it, then, paced,
    /// waits for its simulated completion (the pacer releases it), while other threads' requests
    /// arrive and overlap with it.
    fn serve(
        &self,
        request: Entry,
        apply: impl FnOnce(&mut dyn Contents, &mut Waiter) -> std::io::Result<()>,
    ) -> Result<(), BlockError> {
        let received = Instant::now();
        let kind = request.kind;
        let reply = Arc::new(Reply::default());
        self.enter(request, received, apply, Waiter::Thread(Arc::clone(&reply)))?;
        let outcome = reply.wait().map(drop).map_err(|failure| device_failed(&failure));
        self.served.record(kind, received.elapsed());
        outcome
    }

    /// Enters one request received at `received`: checked, applied to the contents by `apply`,
    /// logged and entered into the simulated device at its arrival, `waiter` then waiting for its
    /// completion (answered at once when the device completed it on arrival, as counting does).
    /// A request refused before it entered is returned as the error, `waiter` not answered.
    fn enter(
        &self,
        request: Entry,
        received: Instant,
        apply: impl FnOnce(&mut dyn Contents, &mut Waiter) -> std::io::Result<()>,
        mut waiter: Waiter,
    ) -> Result<(), BlockError> {
        let Entry { op, offset, len, flags, .. } = request;
        let end = u128::from(offset) + u128::from(len);
        if end > u128::from(self.size_bytes) {
            return Err(waiter.refuse(BlockError::OutOfRange { offset, end, size_bytes: self.size_bytes }));
        }
        let mut answers: Vec<Answer> = Vec::new();
        let next_ns = {
            let mut guard = self.session();
            let Some(session) = guard.as_mut() else { return Err(waiter.refuse(closed())) };
            if let Some(failure) = &session.failed {
                return Err(waiter.refuse(device_failed(failure)));
            }
            if let Err(error) = apply(session.contents.as_mut(), &mut waiter) {
                return Err(waiter.refuse(error.into()));
            }
            let time_ns = self.pacer.clock.ns_at(received).max(session.live.clock_ns()).max(session.last_ns);
            let ticket = match session.arrive(op, offset, len, flags, time_ns) {
                Ok(ticket) => ticket,
                Err(error) => return Err(waiter.refuse(device_failed(&error))),
            };
            session.waiting.insert(ticket, waiter);
            session.release_completed(&mut answers);
            session.live.next_event_ns()
        };
        answer_all(&mut answers);
        if self.pace == Pace::Real {
            self.pacer.arrived(next_ns);
        }
        Ok(())
    }
}

/// A request as the device logs it.
struct Entry {
    kind: CommandKind,
    op: Op,
    offset: u64,
    len: u64,
    flags: Flags,
}

impl Entry {
    fn new(kind: CommandKind, offset: u64, len: u64, fua: bool) -> Entry {
        let op = match kind {
            CommandKind::Read => Op::Read,
            CommandKind::Write => Op::Write,
            CommandKind::Discard => Op::Discard,
            CommandKind::Flush => Op::Flush,
        };
        Entry { kind, op, offset, len, flags: if fua { Flags::FUA } else { Flags::NONE } }
    }
}

/// Mode 0600 for a trace of the device's requests: its access pattern is the user's business.
fn closed() -> BlockError {
    BlockError::Io(std::io::Error::other("the emulated device is stopping"))
}

/// `DATA.state` next to the data file.
fn default_state_path(data: &Path) -> PathBuf {
    let mut name = data.as_os_str().to_owned();
    name.push(".state");
    PathBuf::from(name)
}

impl Paced for Session {
    fn advance_to(&mut self, now_ns: u64, answers: &mut Vec<Answer>) -> Option<u64> {
        if self.failed.is_some() {
            return None;
        }
        if let Err(error) = self.live.advance(now_ns) {
            // The device cannot go on: every waiting request, and every later one, fails.
            let failure = format!("the simulated device failed: {error}");
            eprintln!("nandlab: {failure}");
            answers.extend(self.waiting.drain().map(|(_, waiter)| (waiter, Err(failure.clone()))));
            self.failed = Some(failure);
            return None;
        }
        self.release_completed(answers);
        self.live.next_event_ns()
    }

    fn in_flight(&self) -> usize {
        self.waiting.len()
    }
}

impl Session {
    /// Moves the waiting requests that completed to `answers`.
    fn release_completed(&mut self, answers: &mut Vec<Answer>) {
        for (ticket, done_ns) in self.live.take_completed() {
            if let Some(waiter) = self.waiting.remove(&ticket) {
                answers.push((waiter, Ok(done_ns)));
            }
        }
    }

    /// Logs one request arriving at `time_ns` and enters it into the simulated device.
    fn arrive(
        &mut self,
        op: Op,
        offset: u64,
        len: u64,
        flags: Flags,
        time_ns: u64,
    ) -> Result<EventTicket, EmulateError> {
        let first = offset / SECTOR_BYTES;
        let sectors = (offset + len).div_ceil(SECTOR_BYTES) - first;
        let sectors = u32::try_from(sectors).map_err(|_| {
            EmulateError::Invalid(format!("a request of {len} bytes is longer than a trace record holds"))
        })?;
        let record = Record {
            timestamp: TimestampNs(time_ns),
            op,
            flags,
            start: Sector(first),
            len: SectorCount(sectors),
            process: ProcessName::new(""),
            stream: None,
        };
        for writer in [self.history.as_mut(), self.record.as_mut()].into_iter().flatten() {
            writer.write(&record)?;
        }
        let event = host_event(&record, &self.header, &mut self.journal);
        let ticket = self.live.arrive(&event)?;
        self.requests += 1;
        self.last_ns = time_ns;
        Ok(ticket)
    }
}

/// The saved history being run again, each record copied into the new history as it is read.
struct History<'a> {
    records: Box<dyn nandlab_trace::TraceRead + Send>,
    path: &'a Path,
    header: &'a TraceHeader,
    journal: &'a mut JournalTracker,
    copy: &'a mut dyn TraceWrite,
}

impl History<'_> {
    /// Runs every saved session on `simulation` as it ran: its requests arriving at their
    /// recorded times at a live device of its pace (the timing engine's background GC
    /// included), then stopped as its stop stopped it. Returns the device.
    fn run(&mut self, mut simulation: Simulation, sessions: &[SavedSession]) -> Result<Simulation, EmulateError> {
        let mut count = 0_u64;
        for session in sessions {
            let mut live = LiveDevice::new(simulation, session.pace == Pace::Real)?;
            for _ in 0..session.requests {
                let record = self.next()?.ok_or_else(|| self.mismatch(format!("it ends after {count} requests")))?;
                // Each request arrives at its recorded time, overlapping the ones still in the
                // device as it did live (a paced session holds several at once); nothing waits
                // for a restored request, so its completion is dropped.
                live.arrive(&host_event(&record, self.header, self.journal))?;
                drop(live.take_completed());
                count += 1;
            }
            simulation = live.finish()?.0;
        }
        if self.next()?.is_some() {
            return Err(self.mismatch(format!("it holds more than {count} requests")));
        }
        Ok(simulation)
    }

    fn next(&mut self) -> Result<Option<Record>, EmulateError> {
        let Some(record) = self.records.next().transpose()? else {
            return Ok(None);
        };
        self.copy.write(&record)?;
        Ok(Some(record))
    }

    fn mismatch(&self, found: String) -> EmulateError {
        EmulateError::State {
            path: self.path.to_path_buf(),
            message: format!("the saved history does not match its state: {found}"),
        }
    }
}

impl BlockDevice for EmulatedSsd {
    fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<(), BlockError> {
        let request = Entry::new(CommandKind::Read, offset, buffer.len() as u64, false);
        self.serve(request, |contents, _| contents.read(offset, buffer))
    }

    fn write_at(&self, offset: u64, data: &[u8], fua: bool) -> Result<(), BlockError> {
        let request = Entry::new(CommandKind::Write, offset, data.len() as u64, fua);
        self.serve(request, |contents, _| write(contents, offset, data, fua))
    }

    fn discard(&self, offset: u64, len: u64, fua: bool) -> Result<(), BlockError> {
        self.serve(Entry::new(CommandKind::Discard, offset, len, fua), |contents, _| {
            discard(contents, offset, len, fua)
        })
    }

    fn flush(&self) -> Result<(), BlockError> {
        self.serve(Entry::new(CommandKind::Flush, 0, 0, false), |contents, _| contents.sync())
    }

    fn backing_path(&self) -> Option<&Path> {
        self.data.as_deref()
    }

    fn stats_text(&self, daemon: DaemonInfo) -> String {
        match self.stats(daemon) {
            Some(stats) => {
                serde_json::to_string_pretty(&stats).unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"))
                    + "\n"
            }
            None => format!("{{\"daemon_pid\": {}, \"stopped\": true}}\n", daemon.pid),
        }
    }

    fn queueing(&self) -> Option<&dyn QueueingDevice> {
        Some(self)
    }
}

/// NBD's path: each request enters the device on the connection's reading thread, and the pacer
/// (or, counting, the submitting thread) calls its completion.
impl QueueingDevice for EmulatedSsd {
    fn submit(&self, submission: Submission, done: Completion) {
        let Submission { offset, command, received } = submission;
        let waiter = |data| Waiter::Queued { done, data };
        // A refused request was answered through its completion.
        let _ = match command {
            Command::Read { len } => {
                let request = Entry::new(CommandKind::Read, offset, len as u64, false);
                self.enter(
                    request,
                    received,
                    |contents, waiter| contents.read(offset, waiter.data_mut()),
                    waiter(vec![0; len]),
                )
            }
            Command::Write { data, fua } => {
                let request = Entry::new(CommandKind::Write, offset, data.len() as u64, fua);
                self.enter(request, received, |contents, _| write(contents, offset, &data, fua), waiter(Vec::new()))
            }
            Command::Discard { len, fua } => {
                let request = Entry::new(CommandKind::Discard, offset, len, fua);
                self.enter(request, received, |contents, _| discard(contents, offset, len, fua), waiter(Vec::new()))
            }
            Command::Flush => {
                let request = Entry::new(CommandKind::Flush, 0, 0, false);
                self.enter(request, received, |contents, _| contents.sync(), waiter(Vec::new()))
            }
        };
    }

    fn answered(&self, kind: CommandKind, received: Instant) {
        self.served.record(kind, received.elapsed());
    }
}

/// A write's bytes into the contents, synced when the write asks for it (FUA).
fn write(contents: &mut dyn Contents, offset: u64, data: &[u8], fua: bool) -> std::io::Result<()> {
    contents.write(offset, data)?;
    if fua {
        contents.sync()?;
    }
    Ok(())
}

/// A discarded range punched out of the contents (it reads as zeros), synced with FUA.
fn discard(contents: &mut dyn Contents, offset: u64, len: u64, fua: bool) -> std::io::Result<()> {
    contents.zero(offset, len)?;
    if fua {
        contents.sync()?;
    }
    Ok(())
}

impl Drop for EmulatedSsd {
    /// A device dropped without [`EmulatedSsd::close`] saves nothing, but its pacer stops too.
    fn drop(&mut self) {
        self.stop_pacer();
    }
}
