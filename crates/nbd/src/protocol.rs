//! NBD wire constants and framing (proto.md: "Newstyle negotiation", "Option types", "Transmission
//! phase"). All integers are big-endian.

use std::io::{self, Read, Write};

pub(crate) const NBDMAGIC: u64 = 0x4e42_444d_4147_4943; // "NBDMAGIC"
pub(crate) const IHAVEOPT: u64 = 0x4948_4156_454f_5054; // "IHAVEOPT"
pub(crate) const OPTION_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
pub(crate) const REQUEST_MAGIC: u32 = 0x2560_9513;
pub(crate) const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

// Handshake flags (server) and client flags.
pub(crate) const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
pub(crate) const FLAG_NO_ZEROES: u16 = 1 << 1;
pub(crate) const CLIENT_FIXED_NEWSTYLE: u32 = 1 << 0;
pub(crate) const CLIENT_NO_ZEROES: u32 = 1 << 1;

// Options.
pub(crate) const OPT_EXPORT_NAME: u32 = 1;
pub(crate) const OPT_ABORT: u32 = 2;
pub(crate) const OPT_LIST: u32 = 3;
pub(crate) const OPT_INFO: u32 = 6;
pub(crate) const OPT_GO: u32 = 7;

// Option replies.
pub(crate) const REP_ACK: u32 = 1;
pub(crate) const REP_SERVER: u32 = 2;
pub(crate) const REP_INFO: u32 = 3;
const REP_ERROR: u32 = 1 << 31;
pub(crate) const REP_ERR_UNSUP: u32 = REP_ERROR | 1;
pub(crate) const REP_ERR_INVALID: u32 = REP_ERROR | 3;
pub(crate) const REP_ERR_UNKNOWN: u32 = REP_ERROR | 6;

// NBD_REP_INFO types.
pub(crate) const INFO_EXPORT: u16 = 0;
pub(crate) const INFO_NAME: u16 = 1;
pub(crate) const INFO_DESCRIPTION: u16 = 2;
pub(crate) const INFO_BLOCK_SIZE: u16 = 3;

// Transmission flags.
pub(crate) const TFLAG_HAS_FLAGS: u16 = 1 << 0;
pub(crate) const TFLAG_SEND_FLUSH: u16 = 1 << 2;
pub(crate) const TFLAG_SEND_FUA: u16 = 1 << 3;
pub(crate) const TFLAG_SEND_TRIM: u16 = 1 << 5;
pub(crate) const TFLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub(crate) const TFLAG_CAN_MULTI_CONN: u16 = 1 << 8;

// Commands and command flags.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_WRITE_ZEROES: u16 = 6;
pub(crate) const CMD_FLAG_FUA: u16 = 1 << 0;
pub(crate) const CMD_FLAG_NO_HOLE: u16 = 1 << 1;

// Error values of simple replies (proto.md "Error values").
pub(crate) const EIO: u32 = 5;
pub(crate) const EINVAL: u32 = 22;
pub(crate) const ENOSPC: u32 = 28;

pub(crate) fn read_u32(reader: &mut impl Read) -> io::Result<u32> {
    let mut bytes = [0u8; 4];
    reader.read_exact(&mut bytes)?;
    Ok(u32::from_be_bytes(bytes))
}

pub(crate) fn read_u64(reader: &mut impl Read) -> io::Result<u64> {
    let mut bytes = [0u8; 8];
    reader.read_exact(&mut bytes)?;
    Ok(u64::from_be_bytes(bytes))
}

/// One option reply: magic, option, reply type, length, data.
pub(crate) fn write_option_reply(writer: &mut impl Write, option: u32, reply: u32, data: &[u8]) -> io::Result<()> {
    let len = u32::try_from(data.len()).map_err(io::Error::other)?;
    writer.write_all(&OPTION_REPLY_MAGIC.to_be_bytes())?;
    writer.write_all(&option.to_be_bytes())?;
    writer.write_all(&reply.to_be_bytes())?;
    writer.write_all(&len.to_be_bytes())?;
    writer.write_all(data)
}

/// A transmission request header (28 bytes after the magic check).
pub(crate) struct Request {
    pub(crate) flags: u16,
    pub(crate) command: u16,
    pub(crate) cookie: u64,
    pub(crate) offset: u64,
    pub(crate) length: u32,
}

/// Reads the next request; `Ok(None)` when the client closed the connection between requests.
pub(crate) fn read_request(reader: &mut impl Read) -> io::Result<Option<Request>> {
    let mut header = [0u8; 28];
    match reader.read_exact(&mut header[..1]) {
        Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        other => other?,
    }
    reader.read_exact(&mut header[1..])?;
    let field = |range: std::ops::Range<usize>| -> u64 {
        header[range].iter().fold(0u64, |value, &byte| (value << 8) | u64::from(byte))
    };
    if field(0..4) != u64::from(REQUEST_MAGIC) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "bad request magic"));
    }
    // The casts take fields of exactly that width.
    Ok(Some(Request {
        flags: field(4..6) as u16,
        command: field(6..8) as u16,
        cookie: field(8..16),
        offset: field(16..24),
        length: field(24..28) as u32,
    }))
}

pub(crate) fn write_simple_reply(writer: &mut impl Write, error: u32, cookie: u64, data: &[u8]) -> io::Result<()> {
    let mut header = [0u8; 16];
    header[..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    header[4..8].copy_from_slice(&error.to_be_bytes());
    header[8..].copy_from_slice(&cookie.to_be_bytes());
    writer.write_all(&header)?;
    writer.write_all(data)
}
