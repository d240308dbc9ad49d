//! The client's side of the protocol, byte for byte (proto.md: the fixed newstyle handshake with
//! NBD_OPT_EXPORT_NAME, request headers, simple replies), for tests and tools that must send
//! exactly what they choose — an idle handshake, an oversized request, requests out of order.
//! Users connect with qemu-img, qemu-io, nbdcopy or a kernel client instead.

use std::io::{self, Read, Write};

use crate::protocol::{
    CLIENT_FIXED_NEWSTYLE, CLIENT_NO_ZEROES, IHAVEOPT, NBDMAGIC, OPT_EXPORT_NAME, REQUEST_MAGIC, SIMPLE_REPLY_MAGIC,
};
pub use crate::protocol::{CMD_DISC, CMD_FLUSH, CMD_READ, CMD_TRIM, CMD_WRITE, CMD_WRITE_ZEROES};

/// Reads the server's greeting (NBDMAGIC, IHAVEOPT, handshake flags).
pub fn read_greeting(stream: &mut impl Read) -> io::Result<()> {
    let mut greeting = [0u8; 18];
    stream.read_exact(&mut greeting)?;
    if greeting[..8] != NBDMAGIC.to_be_bytes() || greeting[8..16] != IHAVEOPT.to_be_bytes() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not an NBD newstyle greeting"));
    }
    Ok(())
}

/// After the greeting: the client's flags (fixed newstyle, no zeroes) and NBD_OPT_EXPORT_NAME for
/// `export` ("" is the default export). Returns the export's size in bytes.
pub fn choose_export(stream: &mut (impl Read + Write), export: &str) -> io::Result<u64> {
    let name_length = u32::try_from(export.len()).map_err(|_| io::Error::other("export name over 4 GiB"))?;
    let mut message = (CLIENT_FIXED_NEWSTYLE | CLIENT_NO_ZEROES).to_be_bytes().to_vec();
    message.extend_from_slice(&IHAVEOPT.to_be_bytes());
    message.extend_from_slice(&OPT_EXPORT_NAME.to_be_bytes());
    message.extend_from_slice(&name_length.to_be_bytes());
    message.extend_from_slice(export.as_bytes());
    stream.write_all(&message)?;
    let mut size_and_flags = [0u8; 10];
    stream.read_exact(&mut size_and_flags)?;
    let mut size = [0u8; 8];
    size.copy_from_slice(&size_and_flags[..8]);
    Ok(u64::from_be_bytes(size))
}

/// The whole handshake: [`read_greeting`] then [`choose_export`].
pub fn handshake(stream: &mut (impl Read + Write), export: &str) -> io::Result<u64> {
    read_greeting(stream)?;
    choose_export(stream, export)
}

/// Sends one request header (no flags); a WRITE's payload follows it, sent by the caller.
pub fn send_request(stream: &mut impl Write, command: u16, cookie: u64, offset: u64, length: u32) -> io::Result<()> {
    let mut header = REQUEST_MAGIC.to_be_bytes().to_vec();
    header.extend_from_slice(&0u16.to_be_bytes());
    header.extend_from_slice(&command.to_be_bytes());
    header.extend_from_slice(&cookie.to_be_bytes());
    header.extend_from_slice(&offset.to_be_bytes());
    header.extend_from_slice(&length.to_be_bytes());
    stream.write_all(&header)
}

/// Reads one simple reply's header; returns its error (0: none) and cookie. A READ's data
/// follows it, read by the caller.
pub fn read_simple_reply(stream: &mut impl Read) -> io::Result<(u32, u64)> {
    let mut reply = [0u8; 16];
    stream.read_exact(&mut reply)?;
    let [magic, error] = [&reply[..4], &reply[4..8]].map(|field| {
        let mut bytes = [0u8; 4];
        bytes.copy_from_slice(field);
        u32::from_be_bytes(bytes)
    });
    if magic != SIMPLE_REPLY_MAGIC {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not a simple reply"));
    }
    let mut cookie = [0u8; 8];
    cookie.copy_from_slice(&reply[8..]);
    Ok((error, u64::from_be_bytes(cookie)))
}
