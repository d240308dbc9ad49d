//! Device-level tests: direct byte reads against a reference model, recovery from the backing store
//! alone, fast initialization (write cases 1-3, read cases 1-2 of section 3.3) and input errors.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

use nandlab_dhrd::{ChunkState, Device, DeviceConfig, DhrdError, Durability};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const MIB: u64 = 1 << 20;

fn config(path: &Path, size: u64, chunk: u64) -> DeviceConfig {
    let mut config = DeviceConfig::new(path, Some(size));
    config.chunk_bytes = chunk;
    config
}

/// Deterministic, position-dependent content so misplaced bytes are caught.
fn pattern_byte(offset: u64) -> u8 {
    let x = offset.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56;
    x as u8 ^ (offset as u8)
}

fn write_pattern_file(path: &Path, size: u64) -> Vec<u8> {
    let image: Vec<u8> = (0..size).map(pattern_byte).collect();
    let file = File::create(path).expect("create backing file");
    file.write_all_at(&image, 0).expect("write pattern");
    file.sync_all().expect("sync pattern");
    image
}

#[test]
fn random_unaligned_io_matches_model_and_survives_reopen() {
    let seed = 0x5eed_d4d0_u64;
    eprintln!("seed {seed:#x}");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("backing.img");
    let size = 8 * MIB;
    let mut model = vec![0u8; size as usize];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    for durability in [Durability::Direct, Durability::Dsync, Durability::WriteBack] {
        let mut cfg = config(&path, size, 64 << 10);
        cfg.durability = durability;
        let device = Device::open(&cfg).expect("open");
        assert!(device.wait_initialized(Duration::from_secs(10)));
        for op in 0..400 {
            let len = rng.random_range(1..200_000usize);
            let offset = rng.random_range(0..size - len as u64);
            let range = offset as usize..offset as usize + len;
            match op % 5 {
                0 => {
                    device.discard(offset, len as u64).expect("discard");
                    model[range].fill(0);
                }
                1 | 2 => {
                    let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
                    device.write_at(offset, &data).expect("write");
                    model[range].copy_from_slice(&data);
                }
                _ => {
                    let mut buf = vec![0u8; len];
                    device.read_at(offset, &mut buf).expect("read");
                    assert!(buf == model[range.clone()], "{durability}: read {offset}+{len} differs");
                    let in_place =
                        device.read_in_place(offset, len, |bytes| bytes == &model[range]).expect("read in place");
                    assert!(in_place, "{durability}: read_in_place {offset}+{len} differs");
                }
            }
        }
        device.flush().expect("flush");
        assert_eq!(device.verify_mirror().expect("mirror"), 128);
        device.close().expect("close");
        // Recovery from the backing store alone: a fresh device must read the model back.
        let reopened = Device::open(&DeviceConfig::new(&path, None)).expect("reopen");
        let mut all = vec![0u8; size as usize];
        reopened.read_at(0, &mut all).expect("read all");
        assert!(all == model, "{durability}: reopened image differs from model");
    }
}

#[test]
fn initialization_serves_at_once_and_handles_every_case() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("large.img");
    let size = 128 * MIB;
    let chunk = MIB;
    let mut model = write_pattern_file(&path, size);
    let mut cfg = config(&path, size, chunk);
    cfg.copy_rate_bytes_per_s = Some(128 * MIB); // about one second of initialization

    let opened = Instant::now();
    let device = Device::open(&cfg).expect("open");
    let mut first = [0u8; 7];
    device.read_at(size - 1000, &mut first).expect("first read");
    let first_io = opened.elapsed();
    eprintln!("first I/O served {first_io:?} after open of a {size}-byte image");
    assert_eq!(&first[..], &model[(size - 1000) as usize..][..7], "read case 2");
    assert_eq!(device.chunk_state(127), Some(ChunkState::Uninitialized));

    // Write case 3: uninitialized chunk, backing store only.
    let late = size - 3 * chunk + 12_345;
    device.write_at(late, b"case three").expect("case 3 write");
    model[late as usize..][..10].copy_from_slice(b"case three");
    let mut back = [0u8; 10];
    device.read_at(late, &mut back).expect("read back case 3");
    assert_eq!(&back, b"case three");
    assert!(device.stats().writes_backing_only >= 1);

    // Write case 1: a chunk being initialized blocks the write until its copy is done.
    let mut waited = false;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !waited && Instant::now() < deadline {
        let copying = (0..128).find(|&i| device.chunk_state(i) == Some(ChunkState::Initializing));
        if let Some(index) = copying {
            let at = index * chunk + 777;
            device.write_at(at, b"case one").expect("case 1 write");
            model[at as usize..][..8].copy_from_slice(b"case one");
            waited = device.stats().writes_waited_for_copy >= 1;
        }
    }
    assert!(waited, "never caught a chunk while it was being initialized");

    // Write case 2 and read case 1: initialized chunk, mirrored write, RAM read.
    while device.chunk_state(0) != Some(ChunkState::Initialized) {
        std::thread::sleep(Duration::from_millis(1));
    }
    device.write_at(4095, b"case two spans a block").expect("case 2 write");
    model[4095..][..22].copy_from_slice(b"case two spans a block");

    assert!(device.wait_initialized(Duration::from_secs(30)), "initialization did not finish");
    let mut all = vec![0u8; size as usize];
    device.read_at(0, &mut all).expect("read all");
    assert!(all == model, "RAM image differs from the expected contents after initialization");
    assert_eq!(device.verify_mirror().expect("RAM equals backing byte for byte"), 128);
    let stats = device.stats();
    eprintln!("{stats}");
    assert!(stats.reads_from_backing >= 1);
    assert_eq!(stats.init.chunks_initialized, 128);
}

#[test]
fn bad_configurations_are_clear_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("img");
    let err = |cfg: &DeviceConfig| Device::open(cfg).err().map(|e| e.to_string());

    assert!(err(&config(&path, 4 * MIB, 3000)).is_some_and(|e| e.contains("chunk_bytes")));
    assert!(err(&config(&path, 1000, MIB)).is_some_and(|e| e.contains("multiple of 4096")));
    assert!(err(&DeviceConfig::new(&path, None)).is_some_and(|e| e.contains("size must be given")));

    let device = Device::open(&config(&path, 4 * MIB, MIB)).expect("open");
    assert!(matches!(Device::open(&config(&path, 4 * MIB, MIB)), Err(DhrdError::BackingInUse { .. })));
    let mut buf = [0u8; 2];
    assert!(matches!(device.read_at(4 * MIB - 1, &mut buf), Err(DhrdError::OutOfRange { .. })));
    drop(device);
    let mismatch = Device::open(&config(&path, 8 * MIB, MIB));
    assert!(matches!(mismatch, Err(DhrdError::SizeMismatch { actual_bytes, .. }) if actual_bytes == 4 * MIB));
    OpenOptions::new().write(true).open(&path).expect("reopen file").set_len(4 * MIB + 1).expect("set_len");
    assert!(err(&DeviceConfig::new(&path, None)).is_some_and(|e| e.contains("size_bytes")));
}
