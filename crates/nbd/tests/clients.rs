//! Issue check (NBD export): real clients against an in-process export of a DHRD. `nbdinfo` sees the
//! size and the FLUSH/FUA/TRIM/WRITE_ZEROES capabilities; `qemu-img convert` writes a seeded image
//! over a Unix socket and `nbdcopy` reads it back over TCP byte for byte; `qemu-io` writes with
//! FUA, writes zeroes, discards, flushes and verifies the patterns; the backing file then holds what
//! the clients wrote. Skips (printing SKIPPED) when the Debian packages qemu-utils and libnbd-bin
//! are missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use nandlab_dhrd::{Device, DeviceConfig, Durability};
use nandlab_nbd::{Export, NbdAddress, NbdServer};

const SIZE: u64 = 16 << 20;

fn tool(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&paths).map(|dir| dir.join(name)).find(|candidate| candidate.is_file())
}

/// Runs a client, failing the test with its output unless it succeeds; returns stdout.
fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program).args(args).output().unwrap_or_else(|err| panic!("spawn {program}: {err}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{program} {args:?} failed ({}):\n{stdout}{stderr}", output.status);
    stdout
}

fn seeded_image(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13; // xorshift64
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn export() -> Export {
    Export::new("dhrd", "a DHRD under test")
}

fn tcp_uri(server: &NbdServer) -> String {
    match server.address() {
        NbdAddress::Tcp(address) => format!("nbd://{address}/dhrd"),
        NbdAddress::Unix(_) => unreachable!("started on TCP"),
    }
}

fn unix_uri(socket: &Path) -> String {
    format!("nbd+unix:///dhrd?socket={}", socket.display())
}

#[test]
fn qemu_and_libnbd_clients_read_and_write_the_export() {
    for needed in ["qemu-img", "qemu-io", "nbdinfo", "nbdcopy"] {
        if tool(needed).is_none() {
            eprintln!("SKIPPED: {needed} is not installed (apt install qemu-utils libnbd-bin)");
            return;
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let backing = dir.path().join("backing.img");
    let mut config = DeviceConfig::new(&backing, Some(SIZE));
    config.durability = Durability::WriteBack; // FUA and FLUSH must then really sync
    let device = Arc::new(Device::open(&config).expect("open device"));
    let tcp = NbdServer::start(device.clone(), &"127.0.0.1:0".parse().expect("address"), export()).expect("listen TCP");
    let socket = dir.path().join("dhrd.sock");
    let unix = NbdServer::start(device.clone(), &NbdAddress::Unix(socket.clone()), export()).expect("listen Unix");
    let socket_mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&socket).expect("stat").permissions());
    assert_eq!(socket_mode & 0o777, 0o600, "whoever can connect can write the disk");

    let info = run("nbdinfo", &[&tcp_uri(&tcp)]);
    for expected in [
        &format!("size: {SIZE}") as &str,
        "can_flush: true",
        "can_fua: true",
        "can_trim: true",
        "can_zero: true",
        "can_multi_conn: true",
    ] {
        assert!(info.contains(expected), "nbdinfo lacks {expected:?}:\n{info}");
    }

    let source = dir.path().join("source.img");
    let image = seeded_image(SIZE as usize, 0x0b_d5e4);
    std::fs::write(&source, &image).expect("write source");
    let source_arg = source.to_str().expect("utf-8 path");
    run("qemu-img", &["convert", "-n", "-f", "raw", "-O", "raw", source_arg, &unix_uri(&socket)]);
    let mut through_device = vec![0u8; image.len()];
    device.read_at(0, &mut through_device).expect("read");
    assert!(through_device == image, "the device differs from what qemu-img wrote");
    let copy = dir.path().join("copy.img");
    run("nbdcopy", &[&tcp_uri(&tcp), copy.to_str().expect("utf-8 path")]);
    assert!(std::fs::read(&copy).expect("read copy") == image, "nbdcopy read back different bytes");

    let commands = [
        "write -f -P 0xab 4096 65536", // FUA
        "write -z 1048576 131072",     // WRITE_ZEROES
        "discard 2097152 65536",       // TRIM
        "flush",
        "read -P 0xab 4096 65536",
        "read -P 0 1048576 131072",
        "read -P 0 2097152 65536",
    ];
    let mut args = vec!["-f", "raw"];
    for command in &commands {
        args.extend(["-c", command]);
    }
    let uri = tcp_uri(&tcp);
    args.push(&uri);
    let qemu_io = run("qemu-io", &args);
    assert!(!qemu_io.contains("Pattern verification failed"), "{qemu_io}");

    let mut expected = image;
    expected[4096..4096 + 65536].fill(0xab);
    expected[1 << 20..(1 << 20) + 131072].fill(0);
    expected[2 << 20..(2 << 20) + 65536].fill(0);
    tcp.shut_down();
    unix.shut_down();
    Arc::try_unwrap(device).ok().expect("clients released the device").close().expect("close");
    assert!(std::fs::read(&backing).expect("read backing") == expected, "backing store differs");
}

/// A TRIM longer than the largest READ/WRITE (32 MiB) is served, and the connection goes on: the
/// guest's `fstrim` sends such TRIMs.
#[test]
fn a_trim_of_64_mib_is_served_and_the_connection_goes_on() {
    if tool("qemu-io").is_none() {
        eprintln!("SKIPPED: qemu-io is not installed (apt install qemu-utils)");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let backing = dir.path().join("backing.img");
    let mut config = DeviceConfig::new(&backing, Some(96 << 20));
    config.sparse = true;
    let device = Arc::new(Device::open(&config).expect("open device"));
    let socket = dir.path().join("dhrd.sock");
    let server = NbdServer::start(device.clone(), &NbdAddress::Unix(socket.clone()), export()).expect("listen Unix");
    let uri = unix_uri(&socket);
    let qemu_io = run(
        "qemu-io",
        &[
            "-f",
            "raw",
            "-c",
            "write -P 0x5a 0 1M",
            "-c",
            "write -P 0x5a 80M 1M",
            "-c",
            "discard 0 64M",
            "-c",
            "read -P 0 0 1M",
            "-c",
            "read -P 0x5a 80M 1M",
            &uri,
        ],
    );
    assert!(!qemu_io.contains("Pattern verification failed") && !qemu_io.contains("error"), "{qemu_io}");
    server.shut_down();
}
