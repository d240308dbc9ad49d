//! The transmission phase for a [`QueueingDevice`] (docs/emulate.md, "Queue depth"): the reading
//! thread submits each request to the device the moment it has read it — no request thread
//! between the socket and the device — and one writer thread sends the replies as the device
//! completes them, in any order (proto.md, "Transmission phase": "the server MAY reply in any
//! order"), every reply ready at once in one write. So a client keeping 16 requests outstanding
//! has 16 in the device, each entered when the server read it, and a request costs the server
//! one hand-off (device to writer) instead of three (reader to request thread, request thread to
//! device, device back to request thread).
//!
//! At most [`MAX_IN_FLIGHT`] requests of a connection are in the device; READ and WRITE data stay
//! under a lease of the export's byte budget until the reply is sent.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::device::{BlockDevice, Command, CommandKind, Completion, QueueingDevice, Submission};
use crate::error::{io as io_error, NbdError};
use crate::limits::MAX_REQUEST_BYTES;
use crate::limits::{ByteBudget, Lease, CONNECTION_STACK_BYTES};
use crate::protocol::*;
use crate::transmission::{errno_of, fua, skip_oversized, write_zeros, MAX_IN_FLIGHT};

/// Serves requests from `reader` until the client disconnects (NBD_CMD_DISC or end of stream);
/// every request read is answered before this returns.
pub(crate) fn transmit<R: BufRead, W: Write + Send>(
    reader: &mut R,
    writer: &mut W,
    device: &dyn BlockDevice,
    queueing: &dyn QueueingDevice,
    budget: &ByteBudget,
) -> Result<(), NbdError> {
    let outbox = Arc::new(Outbox::default());
    let leases = Mutex::new(HashMap::new());
    std::thread::scope(|scope| {
        let sender = std::thread::Builder::new()
            .name("nbd-replies".into())
            .stack_size(CONNECTION_STACK_BYTES)
            .spawn_scoped(scope, || send_replies(writer, &outbox, &leases, queueing))
            .map_err(io_error("spawn the reply thread"))?;
        let connection = Reading { device, queueing, budget, outbox: &outbox, leases: &leases };
        let read = connection.read_requests(reader);
        outbox.lock().reading = false;
        outbox.ready.notify_one();
        let sent = sender.join().unwrap_or_else(|_| Err(NbdError::Protocol("the reply thread panicked".into())));
        read.and(sent)
    })
}

/// A reply ready to go out.
struct Ready {
    /// The connection's number for its request (the client's cookies need not be unique).
    seq: u64,
    cookie: u64,
    error: u32,
    data: Vec<u8>,
    /// The device's request it answers (`None`: answered without the device, e.g. EINVAL).
    answers: Option<(CommandKind, Instant)>,
}

/// Replies waiting for the writer thread, and how many requests are in the device.
#[derive(Default)]
struct Outbox {
    state: Mutex<OutboxState>,
    /// Signalled when a reply is ready or reading ended.
    ready: Condvar,
    /// Signalled when requests left the device (the reader may submit more).
    room: Condvar,
}

struct OutboxState {
    replies: Vec<Ready>,
    /// Requests read and not yet taken by the writer thread.
    in_flight: usize,
    /// The reading thread still reads requests.
    reading: bool,
    /// Replies can no longer be sent (the client went away): the reader stops.
    broken: bool,
}

impl Default for OutboxState {
    fn default() -> OutboxState {
        OutboxState { replies: Vec::new(), in_flight: 0, reading: true, broken: false }
    }
}

impl Outbox {
    fn lock(&self) -> MutexGuard<'_, OutboxState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for room for one more request in flight and counts it; false once replies cannot
    /// be sent.
    fn enter(&self) -> bool {
        let mut state = self.lock();
        while state.in_flight >= MAX_IN_FLIGHT && !state.broken {
            state = self.room.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        if state.broken {
            return false;
        }
        state.in_flight += 1;
        true
    }

    fn push(&self, ready: Ready) {
        self.lock().replies.push(ready);
        self.ready.notify_one();
    }

    /// Moves every ready reply into `batch`, waiting for one; false when reading ended and every
    /// request was answered.
    fn take(&self, batch: &mut Vec<Ready>) -> bool {
        let mut state = self.lock();
        loop {
            if !state.replies.is_empty() {
                std::mem::swap(&mut state.replies, batch);
                state.in_flight -= batch.len();
                self.room.notify_one();
                return true;
            }
            if !state.reading && state.in_flight == 0 {
                return false;
            }
            state = self.ready.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn is_broken(&self) -> bool {
        self.lock().broken
    }

    fn set_broken(&self) {
        self.lock().broken = true;
        self.room.notify_one();
    }
}

/// The writer thread: sends replies as they become ready, all of a batch in one flush, and
/// tells the device when each left. After a failed send it keeps taking replies (without
/// sending) so the reading side never waits for room that will not come.
fn send_replies<W: Write>(
    writer: &mut W,
    outbox: &Outbox,
    leases: &Mutex<HashMap<u64, Lease<'_>>>,
    queueing: &dyn QueueingDevice,
) -> Result<(), NbdError> {
    let mut batch = Vec::new();
    let mut sent = Ok(());
    while outbox.take(&mut batch) {
        if sent.is_ok() {
            sent = batch
                .iter()
                .try_for_each(|ready| write_simple_reply(writer, ready.error, ready.cookie, &ready.data))
                .and_then(|()| writer.flush())
                .map_err(io_error("send reply"));
            if sent.is_err() {
                outbox.set_broken();
            }
        }
        let mut held = leases.lock().unwrap_or_else(PoisonError::into_inner);
        for ready in batch.drain(..) {
            held.remove(&ready.seq);
            if let Some((kind, received)) = ready.answers {
                queueing.answered(kind, received);
            }
        }
    }
    sent
}

/// The reading side of a connection.
struct Reading<'a, 'b> {
    device: &'a dyn BlockDevice,
    queueing: &'a dyn QueueingDevice,
    budget: &'b ByteBudget,
    outbox: &'a Arc<Outbox>,
    leases: &'a Mutex<HashMap<u64, Lease<'b>>>,
}

impl Reading<'_, '_> {
    /// Reads requests and submits each as it comes, until the client disconnects or replies can
    /// no longer be sent.
    fn read_requests<R: BufRead>(&self, reader: &mut R) -> Result<(), NbdError> {
        let mut seq = 0_u64;
        while let Some(request) = read_request(reader).map_err(io_error("read request"))? {
            let received = Instant::now();
            if request.command == CMD_DISC || !self.outbox.enter() {
                return Ok(());
            }
            seq += 1;
            self.serve(reader, &request, seq, received)?;
            if self.outbox.is_broken() {
                break;
            }
        }
        Ok(())
    }

    fn serve<R: BufRead>(
        &self,
        reader: &mut R,
        request: &Request,
        seq: u64,
        received: Instant,
    ) -> Result<(), NbdError> {
        let command = match request.command {
            CMD_READ | CMD_WRITE if request.length > MAX_REQUEST_BYTES => {
                skip_oversized(reader, request)?;
                self.answer_here(seq, request, EINVAL);
                return Ok(());
            }
            CMD_READ => {
                self.hold(seq, request.length);
                Command::Read { len: request.length as usize }
            }
            CMD_WRITE => {
                self.hold(seq, request.length);
                let mut data = vec![0u8; request.length as usize];
                reader.read_exact(&mut data).map_err(io_error("read write payload"))?;
                Command::Write { data, fua: fua(request) }
            }
            CMD_TRIM => Command::Discard { len: u64::from(request.length), fua: fua(request) },
            CMD_WRITE_ZEROES if request.flags & CMD_FLAG_NO_HOLE != 0 => {
                // Allocated zeros are plain writes, made here one piece after another.
                let written = write_zeros(self.device, request.offset, request.length as usize, fua(request));
                self.answer_here(seq, request, written.err().map_or(0, |err| errno_of(&err, ENOSPC)));
                return Ok(());
            }
            CMD_WRITE_ZEROES => Command::Discard { len: u64::from(request.length), fua: fua(request) },
            CMD_FLUSH => Command::Flush,
            _ => {
                self.answer_here(seq, request, EINVAL);
                return Ok(());
            }
        };
        let kind = command.kind();
        let submission = Submission { offset: request.offset, command, received };
        self.queueing.submit(submission, self.completion(seq, request.cookie, kind, received));
        Ok(())
    }

    /// Holds `length` bytes of the budget until the reply to request `seq` is sent.
    fn hold(&self, seq: u64, length: u32) {
        let lease = self.budget.lease(u64::from(length));
        self.leases.lock().unwrap_or_else(PoisonError::into_inner).insert(seq, lease);
    }

    /// A reply made without the device.
    fn answer_here(&self, seq: u64, request: &Request, error: u32) {
        self.outbox.push(Ready { seq, cookie: request.cookie, error, data: Vec::new(), answers: None });
    }

    /// Where the device leaves the outcome of request `seq`: the outbox, as its reply.
    fn completion(&self, seq: u64, cookie: u64, kind: CommandKind, received: Instant) -> Completion {
        let outbox = Arc::clone(self.outbox);
        Box::new(move |outcome| {
            let (error, data) = match outcome {
                Ok(data) => (0, data),
                Err(err) => (errno_of(&err, out_of_range_errno(kind)), Vec::new()),
            };
            outbox.push(Ready { seq, cookie, error, data, answers: Some((kind, received)) });
        })
    }
}

/// What a range past the end answers, by command (EINVAL for reads, ENOSPC for writes, as proto.md
/// asks; a flush has no range, so any failure of it is EIO).
fn out_of_range_errno(kind: CommandKind) -> u32 {
    match kind {
        CommandKind::Read => EINVAL,
        CommandKind::Write | CommandKind::Discard => ENOSPC,
        CommandKind::Flush => EIO,
    }
}
