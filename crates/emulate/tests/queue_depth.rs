//! Queue depth end to end (docs/emulate.md, "Queue depth"): paced requests of concurrent clients
//! are in the simulated device together, and an NBD connection answers its requests as they
//! complete, out of submission order. Reads are made long (20 ms) so that the structure shows
//! through a loaded machine's scheduling delays; the checks compare the model's own latencies with
//! each other and with wall time at wide margins, never a speed.

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use nandlab_core::{Config, ConfigBuilder};
use nandlab_emulate::{EmulateOptions, EmulatedSsd, Pace};
use nandlab_nbd::{client, BlockDevice, Export, NbdAddress, NbdServer};

const PAGE: usize = 4096;
/// The flash read time: long against scheduling delays.
const READ_NS: u64 = 20_000_000;

fn paced_ssd() -> Arc<EmulatedSsd> {
    let mut builder = ConfigBuilder::preset("small").expect("small");
    for key in ["precondition.enabled=false", &format!("timing.read_ns={READ_NS}")] {
        builder.set(key).expect("key");
    }
    let config: Config = builder.build().expect("valid").0;
    let options = EmulateOptions { config, data: None, state: None, pace: Pace::Real, record: None };
    Arc::new(EmulatedSsd::open(&options).expect("open"))
}

/// Writes pages `0..pages`, page `i` filled with byte `i + 1`, and waits until they are on flash.
fn write_pages(ssd: &EmulatedSsd, pages: u8) {
    for page in 0..pages {
        ssd.write_at(u64::from(page) * PAGE as u64, &[page + 1; PAGE], false).expect("write");
    }
    ssd.flush().expect("flush");
}

#[test]
fn concurrent_paced_reads_overlap_in_the_simulated_device() {
    const READERS: u8 = 8;
    let ssd = paced_ssd();
    write_pages(&ssd, READERS);
    let start = Arc::new(Barrier::new(usize::from(READERS)));
    let began = Instant::now();
    let readers: Vec<_> = (0..READERS)
        .map(|page| {
            let (ssd, start) = (Arc::clone(&ssd), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                let mut data = vec![0; PAGE];
                ssd.read_at(u64::from(page) * PAGE as u64, &mut data).expect("read");
                assert!(data.iter().all(|&byte| byte == page + 1), "page {page} reads back");
            })
        })
        .collect();
    for reader in readers {
        reader.join().expect("reader");
    }
    let wall = began.elapsed();
    let report = ssd.close().expect("close").expect("report");
    let read = report.timed.expect("paced").latency.read.expect("reads were timed");
    assert_eq!(read.count, u64::from(READERS));
    let read_us = READ_NS as f64 / 1e3;
    // The model's latencies are what each client waited, its queueing on a shared die included...
    assert!(read.p50_us >= read_us, "every read takes the flash read time: {read:?}");
    // ...and the reads waited for one another's dies only, not one after another: served one at
    // a time, the last would have waited for all eight reads.
    assert!(read.max_us < 6.0 * read_us, "8 reads over 4 dies: {read:?}");
    let waited_s = read.mean_us * f64::from(READERS) / 1e6;
    assert!(
        wall.as_secs_f64() < 0.75 * waited_s,
        "the reads overlapped in wall time too: {wall:?} for {waited_s} s of summed latency ({read:?})"
    );
}

fn connect(path: &std::path::Path) -> UnixStream {
    let mut stream = UnixStream::connect(path).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    client::handshake(&mut stream, "").expect("handshake with the default export");
    stream
}

fn send_read(stream: &mut UnixStream, cookie: u64, offset: u64) {
    client::send_request(stream, client::CMD_READ, cookie, offset, PAGE as u32).expect("request");
}

/// Reads one reply to a 4 KiB read; returns its cookie and data.
fn read_reply(stream: &mut UnixStream) -> (u64, Vec<u8>) {
    let (error, cookie) = client::read_simple_reply(stream).expect("reply");
    assert_eq!(error, 0, "no error");
    let mut data = vec![0; PAGE];
    stream.read_exact(&mut data).expect("data");
    (cookie, data)
}

#[test]
fn an_nbd_connection_answers_reads_as_they_complete_out_of_order_by_cookie() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ssd = paced_ssd();
    write_pages(&ssd, 4);
    let socket = dir.path().join("nbd.sock");
    let address: NbdAddress = format!("unix:{}", socket.display()).parse().expect("address");
    let device: Arc<dyn BlockDevice> = Arc::clone(&ssd) as Arc<dyn BlockDevice>;
    let server = NbdServer::start(device, &address, Export::new("small", "under test")).expect("listen");
    let mut stream = connect(&socket);
    // Page 0 twice (cookies 1 and 2: the second waits for the first on their die), then pages
    // 1..4 (cookies 3..5), which lie on other dies than page 0's: they complete with the first.
    let offsets = [0, 0, PAGE as u64, 2 * PAGE as u64, 3 * PAGE as u64];
    for (cookie, &offset) in (1u64..).zip(&offsets) {
        send_read(&mut stream, cookie, offset);
    }
    let replies: Vec<(u64, Vec<u8>)> = offsets.iter().map(|_| read_reply(&mut stream)).collect();
    for (cookie, data) in &replies {
        let page = offsets[usize::try_from(*cookie - 1).expect("small")] / PAGE as u64;
        assert!(data.iter().all(|&byte| u64::from(byte) == page + 1), "cookie {cookie} carries page {page}'s data");
    }
    let order: Vec<u64> = replies.iter().map(|(cookie, _)| *cookie).collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [1, 2, 3, 4, 5], "every request answered once");
    // The two reads of page 0 reach the device in the order sent (the connection's reading
    // thread submits each as it reads it); the second waits for its die, and a later read on an
    // idle die is answered before it.
    let answered_at = |wanted: u64| order.iter().position(|&cookie| cookie == wanted).expect("answered");
    let waited = answered_at(1).max(answered_at(2));
    assert!(
        order[..waited].iter().any(|&cookie| cookie > 2),
        "a read sent after both reads of page 0 but on an idle die is answered before the one that waited: {order:?}"
    );
    drop(stream);
    server.shut_down();
    let report = ssd.close().expect("close").expect("report");
    let read = report.timed.expect("paced").latency.read.expect("timed reads");
    // The second read of page 0 arrived a little after the first and waited for the rest of its
    // read on their die.
    assert!(read.max_us > 1.25 * READ_NS as f64 / 1e3, "the model saw a read of page 0 wait for its die: {read:?}");
    // What the client waited, as the server saw it: each read's model latency and more.
    let served = ssd.served_latency().read.expect("served reads");
    assert_eq!(served.count, read.count, "every read answered was counted: {served:?}");
    assert!(served.p50_us >= read.p50_us && served.max_us >= read.max_us, "{served:?} holds {read:?}");
}

#[test]
fn queued_nbd_requests_take_effect_in_the_order_sent_whenever_they_are_answered() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("tempdir");
    let ssd = paced_ssd();
    let socket = dir.path().join("nbd.sock");
    let address: NbdAddress = format!("unix:{}", socket.display()).parse().expect("address");
    let device: Arc<dyn BlockDevice> = Arc::clone(&ssd) as Arc<dyn BlockDevice>;
    let server = NbdServer::start(device, &address, Export::new("small", "under test")).expect("listen");
    let mut stream = connect(&socket);
    // A write, a read of it, a trim of it and a read again, all sent before any reply: each
    // takes effect on the data in the order sent, whenever the simulated device completes it.
    client::send_request(&mut stream, client::CMD_WRITE, 1, 0, PAGE as u32).expect("write");
    stream.write_all(&[7; PAGE]).expect("payload");
    send_read(&mut stream, 2, 0);
    client::send_request(&mut stream, client::CMD_TRIM, 3, 0, PAGE as u32).expect("trim");
    send_read(&mut stream, 4, 0);
    client::send_request(&mut stream, client::CMD_FLUSH, 5, 0, 0).expect("flush");
    let mut answered = Vec::new();
    while answered.len() < 5 {
        let (error, cookie) = client::read_simple_reply(&mut stream).expect("reply");
        assert_eq!(error, 0, "cookie {cookie} succeeds");
        if cookie == 2 || cookie == 4 {
            let mut data = vec![0; PAGE];
            stream.read_exact(&mut data).expect("data");
            let expected = if cookie == 2 { 7 } else { 0 };
            assert!(data.iter().all(|&byte| byte == expected), "read {cookie} sees the data as sent before it");
        }
        answered.push(cookie);
    }
    answered.sort_unstable();
    assert_eq!(answered, [1, 2, 3, 4, 5], "every request answered once");
    drop(stream);
    server.shut_down();
    ssd.close().expect("close").expect("report");
    let served = ssd.served_latency();
    let counts = [&served.write, &served.read, &served.trim, &served.flush].map(|row| row.as_ref().map(|s| s.count));
    assert_eq!(counts, [Some(1), Some(2), Some(1), Some(1)], "each request's wait was recorded: {served:?}");
}
