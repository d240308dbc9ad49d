//! Issue checks (NBD limits): a client cannot make the export hold unbounded memory or keep real
//! clients out. A raw protocol client (written from proto.md) sends what well-behaved clients never
//! do: READs and WRITEs over the advertised maximum, idle connections that never finish the
//! handshake, more connections than the limit.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nandlab_dhrd::{Device, DeviceConfig};
use nandlab_nbd::{Export, Limits, NbdAddress, NbdServer};

const SIZE: u64 = 40 << 20;
const CMD_READ: u16 = 0;
const CMD_WRITE: u16 = 1;
const EINVAL: u32 = 22;

struct Served {
    _dir: tempfile::TempDir,
    server: NbdServer,
}

fn serve(limits: Limits) -> Served {
    let dir = tempfile::tempdir().expect("tempdir");
    let device = Arc::new(Device::open(&DeviceConfig::new(dir.path().join("backing.img"), Some(SIZE))).expect("open"));
    let mut export = Export::new("disk", "under test");
    export.limits = limits;
    let server = NbdServer::start(device, &"127.0.0.1:0".parse().expect("address"), export).expect("listen");
    Served { _dir: dir, server }
}

fn connect(served: &Served) -> TcpStream {
    let NbdAddress::Tcp(address) = served.server.address() else { unreachable!("started on TCP") };
    let stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    stream
}

/// Fixed newstyle handshake with NBD_OPT_EXPORT_NAME; returns the export size.
fn handshake(stream: &mut TcpStream) -> u64 {
    let mut greeting = [0u8; 18];
    stream.read_exact(&mut greeting).expect("greeting");
    assert_eq!(&greeting[..8], b"NBDMAGIC");
    stream.write_all(&3u32.to_be_bytes()).expect("client flags: fixed newstyle, no zeroes");
    let mut option = b"IHAVEOPT".to_vec();
    option.extend_from_slice(&1u32.to_be_bytes()); // NBD_OPT_EXPORT_NAME
    option.extend_from_slice(&4u32.to_be_bytes());
    option.extend_from_slice(b"disk");
    stream.write_all(&option).expect("option");
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply).expect("export size and flags");
    u64::from_be_bytes(reply[..8].try_into().expect("8 bytes"))
}

fn send_request(stream: &mut TcpStream, command: u16, cookie: u64, offset: u64, length: u32) {
    let mut header = 0x2560_9513u32.to_be_bytes().to_vec();
    header.extend_from_slice(&0u16.to_be_bytes());
    header.extend_from_slice(&command.to_be_bytes());
    header.extend_from_slice(&cookie.to_be_bytes());
    header.extend_from_slice(&offset.to_be_bytes());
    header.extend_from_slice(&length.to_be_bytes());
    stream.write_all(&header).expect("request");
}

/// Reads a simple reply; returns its error and cookie.
fn read_reply(stream: &mut TcpStream) -> (u32, u64) {
    let mut reply = [0u8; 16];
    stream.read_exact(&mut reply).expect("reply");
    assert_eq!(u32::from_be_bytes(reply[..4].try_into().expect("4")), 0x6744_6698, "simple reply magic");
    (u32::from_be_bytes(reply[4..8].try_into().expect("4")), u64::from_be_bytes(reply[8..].try_into().expect("8")))
}

#[test]
fn oversized_reads_and_writes_get_einval_and_the_connection_goes_on() {
    let served = serve(Limits::default());
    let mut stream = connect(&served);
    assert_eq!(handshake(&mut stream), SIZE);
    send_request(&mut stream, CMD_READ, 1, 0, 64 << 20);
    assert_eq!(read_reply(&mut stream), (EINVAL, 1));
    let payload = vec![0x77u8; 40 << 20];
    send_request(&mut stream, CMD_WRITE, 2, 0, payload.len() as u32);
    stream.write_all(&payload).expect("oversized payload");
    assert_eq!(read_reply(&mut stream), (EINVAL, 2));
    send_request(&mut stream, CMD_READ, 3, 0, 4096);
    assert_eq!(read_reply(&mut stream), (0, 3));
    let mut data = vec![1u8; 4096];
    stream.read_exact(&mut data).expect("data");
    assert!(data.iter().all(|&byte| byte == 0), "the refused write changed the disk");
}

#[test]
fn connections_past_the_limit_are_closed_and_idle_ones_time_out() {
    let limits = Limits { max_connections: 4, handshake_timeout: Duration::from_millis(300), ..Limits::default() };
    let served = serve(limits);
    let idle: Vec<TcpStream> = (0..4).map(|_| connect(&served)).collect();
    std::thread::sleep(Duration::from_millis(100));
    let mut refused = connect(&served);
    let mut greeting = [0u8; 18];
    assert!(refused.read_exact(&mut greeting).is_err(), "a fifth connection was served past a limit of 4");
    // The idle clients never finish their handshake: their slots come free, and a real client is served.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut stream = loop {
        let mut stream = connect(&served);
        let mut greeting = [0u8; 18];
        if stream.read_exact(&mut greeting).is_ok() {
            break stream;
        }
        assert!(Instant::now() < deadline, "idle connections kept every slot");
        std::thread::sleep(Duration::from_millis(100));
    };
    stream.write_all(&3u32.to_be_bytes()).expect("client flags");
    let mut option = b"IHAVEOPT".to_vec();
    option.extend_from_slice(&1u32.to_be_bytes());
    option.extend_from_slice(&4u32.to_be_bytes());
    option.extend_from_slice(b"disk");
    stream.write_all(&option).expect("option");
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply).expect("export size and flags");
    drop(idle);
    // A served client that then idles is a real client: it is not timed out.
    std::thread::sleep(Duration::from_millis(600));
    send_request(&mut stream, CMD_READ, 9, 0, 512);
    assert_eq!(read_reply(&mut stream), (0, 9));
}

#[test]
fn many_connections_stay_within_the_documented_memory_bound() {
    let limits = Limits { max_connections: 64, ..Limits::default() };
    let served = serve(limits);
    let rss_before = resident_bytes();
    // 120 connections, each asking for a 32 MiB read it never reads: without the shared budget
    // the 64 served ones held 64 × 32 MiB. All connect first, as a flood does.
    let mut streams: Vec<TcpStream> = (0..120).map(|_| connect(&served)).collect();
    for (cookie, stream) in (0u64..).zip(&mut streams) {
        let mut greeting = [0u8; 18];
        if stream.read_exact(&mut greeting).is_ok() {
            let _ = stream.write_all(&3u32.to_be_bytes());
            let mut option = b"IHAVEOPT".to_vec();
            option.extend_from_slice(&1u32.to_be_bytes());
            option.extend_from_slice(&4u32.to_be_bytes());
            option.extend_from_slice(b"disk");
            let _ = stream.write_all(&option);
            let mut reply = [0u8; 10];
            if stream.read_exact(&mut reply).is_ok() {
                send_request(stream, CMD_READ, cookie, 0, 32 << 20);
            }
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let grown = resident_bytes().saturating_sub(rss_before);
    let bound = limits.memory_bound_bytes() + (SIZE * 2);
    assert!(grown < bound, "the export grew by {grown} bytes, past its bound of {bound}");
    drop(streams);
}

/// This process's resident memory (`/proc/self/statm`, second field, in pages).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|field| field.parse().ok()).expect("resident pages");
    pages * 4096
}
