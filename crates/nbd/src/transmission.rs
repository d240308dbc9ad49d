//! The transmission phase of one connection: requests are read in order, served concurrently by the
//! connection's worker threads, and answered as they complete — in any order, each reply naming
//! its request by the client's cookie (proto.md, "Transmission phase": "the server MAY reply in
//! any order"). So a client keeping 16 requests outstanding on one connection has 16 in the device
//! at once. Workers are started as requests need them, at most [`MAX_IN_FLIGHT`] per connection and
//! while the export's [`WorkerSlots`] last; without one, the reading thread serves the request
//! itself. Every READ and WRITE holds its data under a lease of the export's byte budget until it
//! is answered.

use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Mutex, PoisonError};
use std::thread::{Builder, Scope};

use crate::device::{BlockDevice, BlockError};
use crate::error::{io as io_error, NbdError};
use crate::limits::{ByteBudget, Lease, WorkerSlots, CONNECTION_STACK_BYTES, MAX_REQUEST_BYTES};
use crate::protocol::*;

/// Most requests of one connection served at once (its worker threads); a client with more
/// outstanding waits for replies. Twice the deepest queue `scripts/bench-emulate.sh` drives.
pub(crate) const MAX_IN_FLIGHT: usize = 64;
/// Zeroes written per piece when a WRITE_ZEROES asks for allocated zeros (NO_HOLE).
const ZERO_PIECE_BYTES: usize = 1 << 20;

/// A request read off the wire, with what it holds, ready to be served.
type Work<'env> = Box<dyn FnOnce() -> Result<(), NbdError> + Send + 'env>;

/// What a connection's reading thread and its workers share.
struct Transmission<'a, W> {
    device: &'a dyn BlockDevice,
    writer: Mutex<&'a mut W>,
    /// Workers waiting for a request.
    idle: AtomicUsize,
    /// The first error a worker met (the connection then ends).
    failed: Mutex<Option<NbdError>>,
}

/// Serves requests from `reader` until the client disconnects (NBD_CMD_DISC or end of stream);
/// every request read is answered before this returns.
pub(crate) fn transmit<R: BufRead, W: Write + Send>(
    reader: &mut R,
    writer: &mut W,
    device: &dyn BlockDevice,
    budget: &ByteBudget,
    slots: &WorkerSlots,
) -> Result<(), NbdError> {
    let shared =
        Transmission { device, writer: Mutex::new(writer), idle: AtomicUsize::new(0), failed: Mutex::new(None) };
    let (sender, receiver) = sync_channel::<Work<'_>>(0);
    let receiver = Mutex::new(receiver);
    let read = std::thread::scope(|scope| {
        let mut workers = Workers { sender: Some(sender), started: 0, slots };
        let read = shared.read_requests(reader, budget, &mut |work| workers.serve(scope, &shared, &receiver, work));
        // Workers finish what they hold, then see the channel closed.
        drop(workers);
        read
    });
    let failed = shared.failed.lock().unwrap_or_else(PoisonError::into_inner).take();
    read.and(failed.map_or(Ok(()), Err))
}

/// The connection's worker threads, started as requests need them.
struct Workers<'s, 'w> {
    sender: Option<SyncSender<Work<'w>>>,
    started: usize,
    slots: &'s WorkerSlots,
}

impl<'s, 'w> Workers<'s, 'w> {
    /// Hands `work` to an idle worker, to a new one, or (none to be had) serves it here.
    fn serve<'scope, 'env, W: Write + Send>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        shared: &'scope Transmission<'_, W>,
        receiver: &'scope Mutex<Receiver<Work<'w>>>,
        work: Work<'w>,
    ) -> Result<(), NbdError>
    where
        'w: 'scope,
        's: 'scope,
    {
        let Some(sender) = &self.sender else { return work() };
        // An idle worker is claimed here, so the next request does not count on it too.
        let claimed = shared.idle.fetch_update(Ordering::AcqRel, Ordering::Acquire, |idle| idle.checked_sub(1)).is_ok();
        if !claimed && self.started < MAX_IN_FLIGHT && self.slots.take() {
            let slots = self.slots;
            let spawned = Builder::new().name("nbd-request".into()).stack_size(CONNECTION_STACK_BYTES).spawn_scoped(
                scope,
                move || {
                    shared.work(work, receiver);
                    slots.give_back();
                },
            );
            return match spawned {
                Ok(_) => {
                    self.started += 1;
                    Ok(())
                }
                Err(error) => {
                    self.slots.give_back();
                    Err(NbdError::Protocol(format!("cannot start a request thread: {error}")))
                }
            };
        }
        if self.started == 0 {
            return work();
        }
        // A rendezvous: waits until a worker takes it, so requests wait in the socket, not here.
        sender.send(work).map_err(|_| NbdError::Protocol("the connection's workers stopped".into()))?;
        if !claimed {
            // The worker that took it had counted itself idle.
            let _ = shared.idle.fetch_update(Ordering::AcqRel, Ordering::Acquire, |idle| idle.checked_sub(1));
        }
        Ok(())
    }
}

impl<'a, W: Write + Send> Transmission<'a, W> {
    /// A worker's loop: serves `first`, then requests from the channel until the reading thread
    /// closes it. Idle, it counts itself in `idle` (the reading thread takes it out again when it
    /// hands it a request).
    fn work(&self, first: Work<'_>, receiver: &Mutex<Receiver<Work<'_>>>) {
        let mut next = Some(first);
        while let Some(work) = next {
            if let Err(error) = work() {
                self.failed.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(error);
            }
            self.idle.fetch_add(1, Ordering::AcqRel);
            next = receiver.lock().unwrap_or_else(PoisonError::into_inner).recv().ok();
        }
    }

    /// Reads requests and hands each to `serve`, until the client disconnects or a worker failed.
    fn read_requests<'env, R: BufRead>(
        &'env self,
        reader: &mut R,
        budget: &'env ByteBudget,
        serve: &mut dyn FnMut(Work<'env>) -> Result<(), NbdError>,
    ) -> Result<(), NbdError> {
        while let Some(request) = read_request(reader).map_err(io_error("read request"))? {
            let work: Work<'env> = match request.command {
                CMD_DISC => return Ok(()),
                CMD_READ | CMD_WRITE if request.length > MAX_REQUEST_BYTES => {
                    skip_oversized(reader, &request)?;
                    Box::new(move || self.reply(EINVAL, request.cookie, &[]))
                }
                CMD_READ => {
                    let lease = budget.lease(u64::from(request.length));
                    Box::new(move || self.read(&request, lease))
                }
                CMD_WRITE => {
                    let lease = budget.lease(u64::from(request.length));
                    let mut data = vec![0u8; request.length as usize];
                    reader.read_exact(&mut data).map_err(io_error("read write payload"))?;
                    Box::new(move || {
                        let result = self.device.write_at(request.offset, &data, fua(&request));
                        drop(lease);
                        self.finish_mutation(&request, result)
                    })
                }
                CMD_TRIM => Box::new(move || {
                    let result = self.device.discard(request.offset, u64::from(request.length), fua(&request));
                    self.finish_mutation(&request, result)
                }),
                CMD_WRITE_ZEROES => Box::new(move || {
                    let result = if request.flags & CMD_FLAG_NO_HOLE != 0 {
                        write_zeros(self.device, request.offset, request.length as usize, fua(&request))
                    } else {
                        self.device.discard(request.offset, u64::from(request.length), fua(&request))
                    };
                    self.finish_mutation(&request, result)
                }),
                CMD_FLUSH => Box::new(move || {
                    let error = self.device.flush().err().map_or(0, |err| errno_of(&err, EIO));
                    self.reply(error, request.cookie, &[])
                }),
                _ => Box::new(move || self.reply(EINVAL, request.cookie, &[])),
            };
            serve(work)?;
            if self.failed.lock().unwrap_or_else(PoisonError::into_inner).is_some() {
                break;
            }
        }
        Ok(())
    }

    /// A READ, its data held under `lease` until it is sent.
    fn read(&self, request: &Request, lease: Lease<'_>) -> Result<(), NbdError> {
        let mut data = vec![0u8; request.length as usize];
        let replied = match self.device.read_at(request.offset, &mut data) {
            Ok(()) => self.reply(0, request.cookie, &data),
            Err(err) => self.reply(errno_of(&err, EINVAL), request.cookie, &[]),
        };
        drop(lease);
        replied
    }

    /// Replies to a WRITE, TRIM or WRITE_ZEROES.
    fn finish_mutation(&self, request: &Request, result: Result<(), BlockError>) -> Result<(), NbdError> {
        let error = result.err().map_or(0, |err| errno_of(&err, ENOSPC));
        self.reply(error, request.cookie, &[])
    }

    /// One whole reply, written and flushed while no other reply is.
    fn reply(&self, error: u32, cookie: u64, data: &[u8]) -> Result<(), NbdError> {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        write_simple_reply(&mut **writer, error, cookie, data)
            .and_then(|()| writer.flush())
            .map_err(io_error("send reply"))
    }
}

/// A READ or WRITE over the advertised maximum: a WRITE's payload is read past in small pieces
/// (never held), so the connection stays usable.
pub(crate) fn skip_oversized(reader: &mut impl BufRead, request: &Request) -> Result<(), NbdError> {
    if request.command == CMD_WRITE {
        let payload = u64::from(request.length);
        let skipped = io::copy(&mut io::Read::take(reader, payload), &mut io::sink())
            .map_err(io_error("read past an oversized write payload"))?;
        if skipped != payload {
            return Err(NbdError::Protocol(format!("write payload ended after {skipped} of {payload} bytes")));
        }
    }
    Ok(())
}

/// Allocated zeros: plain writes of zeroes, never a hole; FUA on the last piece.
pub(crate) fn write_zeros(device: &dyn BlockDevice, offset: u64, length: usize, fua: bool) -> Result<(), BlockError> {
    let zeros = vec![0u8; ZERO_PIECE_BYTES.min(length)];
    let mut done = 0usize;
    while done < length {
        let piece = zeros.len().min(length - done);
        device.write_at(offset + done as u64, &zeros[..piece], fua && done + piece == length)?;
        done += piece;
    }
    Ok(())
}

/// The request must be durable when answered (NBD_CMD_FLAG_FUA).
pub(crate) fn fua(request: &Request) -> bool {
    request.flags & CMD_FLAG_FUA != 0
}

/// The NBD error value for a device error; `out_of_range` is what a range past the end maps to
/// (EINVAL for reads, ENOSPC for writes, as proto.md asks).
pub(crate) fn errno_of(err: &BlockError, out_of_range: u32) -> u32 {
    match err.errno() {
        None => out_of_range,
        Some(28) => ENOSPC,
        Some(_) => EIO,
    }
}
