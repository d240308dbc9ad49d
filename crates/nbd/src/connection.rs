//! One client connection: the fixed newstyle handshake, then requests served several at once and
//! answered as they complete ([`crate::transmission`]); `CAN_MULTI_CONN` is advertised because a
//! flush makes every completed write durable, whichever connection sent it.

use std::io::{BufRead, Write};

use crate::device::BlockDevice;

use crate::error::{io as io_error, NbdError};
use crate::export::Export;
use crate::limits::{ByteBudget, WorkerSlots, MAX_REQUEST_BYTES};
use crate::protocol::*;
use crate::queued;
use crate::transmission;

/// Longest option payload accepted during the handshake.
const MAX_OPTION_BYTES: u32 = 64 << 10;

const TRANSMISSION_FLAGS: u16 = TFLAG_HAS_FLAGS
    | TFLAG_SEND_FLUSH
    | TFLAG_SEND_FUA
    | TFLAG_SEND_TRIM
    | TFLAG_SEND_WRITE_ZEROES
    | TFLAG_CAN_MULTI_CONN;

pub(crate) struct Connection<'a, R, W> {
    pub(crate) reader: R,
    pub(crate) writer: W,
    pub(crate) device: &'a dyn BlockDevice,
    pub(crate) export: &'a Export,
    pub(crate) budget: &'a ByteBudget,
    pub(crate) slots: &'a WorkerSlots,
}

impl<R: BufRead, W: Write> Connection<'_, R, W> {
    /// The handshake; returns false when the client aborted it.
    pub(crate) fn handshake(&mut self) -> Result<bool, NbdError> {
        let mut greeting = Vec::with_capacity(18);
        greeting.extend_from_slice(&NBDMAGIC.to_be_bytes());
        greeting.extend_from_slice(&IHAVEOPT.to_be_bytes());
        greeting.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
        self.send(&greeting)?;
        let client_flags = read_u32(&mut self.reader).map_err(io_error("read client flags"))?;
        if client_flags & !(CLIENT_FIXED_NEWSTYLE | CLIENT_NO_ZEROES) != 0 {
            return Err(NbdError::Protocol(format!("unknown client flags {client_flags:#x}")));
        }
        let no_zeroes = client_flags & CLIENT_NO_ZEROES != 0;
        loop {
            let magic = read_u64(&mut self.reader).map_err(io_error("read option"))?;
            if magic != IHAVEOPT {
                return Err(NbdError::Protocol(format!("bad option magic {magic:#x}")));
            }
            let option = read_u32(&mut self.reader).map_err(io_error("read option"))?;
            let length = read_u32(&mut self.reader).map_err(io_error("read option"))?;
            if length > MAX_OPTION_BYTES {
                return Err(NbdError::Protocol(format!("option {option} of {length} bytes")));
            }
            let mut data = vec![0u8; length as usize];
            self.reader.read_exact(&mut data).map_err(io_error("read option data"))?;
            match option {
                OPT_EXPORT_NAME => {
                    if !self.known_export(&data) {
                        return Err(NbdError::Protocol("EXPORT_NAME of an unknown export".into()));
                    }
                    let mut reply = Vec::with_capacity(10 + 124);
                    reply.extend_from_slice(&self.device.size_bytes().to_be_bytes());
                    reply.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
                    if !no_zeroes {
                        reply.resize(reply.len() + 124, 0);
                    }
                    self.send(&reply)?;
                    return Ok(true);
                }
                OPT_ABORT => {
                    // The client may already have closed; the acknowledgement is a courtesy.
                    let _ = self.reply(option, REP_ACK, &[]);
                    return Ok(false);
                }
                OPT_LIST => {
                    let name = self.export.name.as_bytes();
                    let mut entry = (name.len() as u32).to_be_bytes().to_vec();
                    entry.extend_from_slice(name);
                    self.reply(option, REP_SERVER, &entry)?;
                    self.reply(option, REP_ACK, &[])?;
                }
                OPT_INFO | OPT_GO => {
                    if self.info_or_go(option, &data)? && option == OPT_GO {
                        return Ok(true);
                    }
                }
                _ => self.reply(option, REP_ERR_UNSUP, &[])?,
            }
        }
    }

    fn known_export(&self, name: &[u8]) -> bool {
        name.is_empty() || name == self.export.name.as_bytes()
    }

    /// NBD_OPT_INFO / NBD_OPT_GO: name length, name, count of info requests, the requests.
    /// Returns whether the export was granted.
    fn info_or_go(&mut self, option: u32, data: &[u8]) -> Result<bool, NbdError> {
        let Some(request) = InfoRequest::parse(data) else {
            self.reply(option, REP_ERR_INVALID, b"malformed NBD_OPT_INFO/GO")?;
            return Ok(false);
        };
        if !self.known_export(request.name) {
            self.reply(option, REP_ERR_UNKNOWN, b"no such export")?;
            return Ok(false);
        }
        let mut export = INFO_EXPORT.to_be_bytes().to_vec();
        export.extend_from_slice(&self.device.size_bytes().to_be_bytes());
        export.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
        self.reply(option, REP_INFO, &export)?;
        for kind in request.wanted {
            let mut info = kind.to_be_bytes().to_vec();
            match kind {
                INFO_NAME => info.extend_from_slice(self.export.name.as_bytes()),
                INFO_DESCRIPTION => info.extend_from_slice(self.export.description.as_bytes()),
                INFO_BLOCK_SIZE => {
                    // Any byte range works; 4 KiB avoids read-modify-write in the backing store.
                    for size in [1u32, 4096, MAX_REQUEST_BYTES] {
                        info.extend_from_slice(&size.to_be_bytes());
                    }
                }
                _ => continue,
            }
            self.reply(option, REP_INFO, &info)?;
        }
        self.reply(option, REP_ACK, &[])?;
        Ok(true)
    }

    /// Serves requests until the client disconnects, several at once: submitted straight to a
    /// device that queues ([`crate::queued`]; its reply thread takes one of the export's request
    /// thread slots), else on request threads ([`crate::transmission`]).
    pub(crate) fn transmit(&mut self) -> Result<(), NbdError>
    where
        W: Send,
    {
        // The reply thread takes a request thread's place in the export's memory bound.
        match self.device.queueing() {
            Some(queueing) if self.slots.take() => {
                let served = queued::transmit(&mut self.reader, &mut self.writer, self.device, queueing, self.budget);
                self.slots.give_back();
                served
            }
            _ => transmission::transmit(&mut self.reader, &mut self.writer, self.device, self.budget, self.slots),
        }
    }

    fn reply(&mut self, option: u32, reply: u32, data: &[u8]) -> Result<(), NbdError> {
        write_option_reply(&mut self.writer, option, reply, data)
            .and_then(|()| self.writer.flush())
            .map_err(io_error("send option reply"))
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), NbdError> {
        self.writer.write_all(bytes).and_then(|()| self.writer.flush()).map_err(io_error("send handshake"))
    }
}

/// The body of NBD_OPT_INFO / NBD_OPT_GO.
struct InfoRequest<'a> {
    name: &'a [u8],
    wanted: Vec<u16>,
}

impl<'a> InfoRequest<'a> {
    fn parse(data: &'a [u8]) -> Option<InfoRequest<'a>> {
        let name_len = u32::from_be_bytes(data.get(..4)?.try_into().ok()?) as usize;
        let name = data.get(4..4usize.checked_add(name_len)?)?;
        let rest = &data[4 + name_len..];
        let count = usize::from(u16::from_be_bytes(rest.get(..2)?.try_into().ok()?));
        let list = rest.get(2..)?;
        if list.len() != count * 2 {
            return None;
        }
        let wanted = list.chunks_exact(2).map(|pair| u16::from_be_bytes([pair[0], pair[1]])).collect();
        Some(InfoRequest { name, wanted })
    }
}
