//! Issue checks (NBD limits): a client cannot make the export hold unbounded memory or keep real
//! clients out. A raw protocol client (written from proto.md) sends what well-behaved clients never
//! do: READs and WRITEs over the advertised maximum, idle connections that never finish the
//! handshake, more connections than the limit.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nandlab_dhrd::{Device, DeviceConfig};
use nandlab_nbd::client::{self, CMD_READ, CMD_WRITE};
use nandlab_nbd::{Export, Limits, NbdAddress, NbdServer};

const SIZE: u64 = 40 << 20;
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

fn handshake(stream: &mut TcpStream) -> u64 {
    client::handshake(stream, "disk").expect("handshake")
}

fn send_request(stream: &mut TcpStream, command: u16, cookie: u64, offset: u64, length: u32) {
    client::send_request(stream, command, cookie, offset, length).expect("request");
}

fn read_reply(stream: &mut TcpStream) -> (u32, u64) {
    client::read_simple_reply(stream).expect("reply")
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
    assert!(client::read_greeting(&mut refused).is_err(), "a fifth connection was served past a limit of 4");
    // The idle clients never finish their handshake: their slots come free, and a real client is served.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut stream = loop {
        let mut stream = connect(&served);
        if client::read_greeting(&mut stream).is_ok() {
            break stream;
        }
        assert!(Instant::now() < deadline, "idle connections kept every slot");
        std::thread::sleep(Duration::from_millis(100));
    };
    client::choose_export(&mut stream, "disk").expect("export");
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
        if client::handshake(stream, "disk").is_ok() {
            send_request(stream, CMD_READ, cookie, 0, 32 << 20);
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
