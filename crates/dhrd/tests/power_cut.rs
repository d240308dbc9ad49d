//! Issue check (power loss), in the style of SQLite's and redb's crash tests: the device runs on a
//! simulated disk (`PowerCutStore`, a `BackingStore`) that records writes and syncs and, at a
//! chosen store operation, loses power: only what was durable survives, and with tearing a random
//! subset of the sectors not yet durable (the write in flight, and in write-back mode everything
//! since the last sync) lands too. The device then restarts from what survived, and every sector
//! must hold a state the device's promise allows:
//! - every write acknowledged in a durable mode, and every write acknowledged before a successful
//!   flush in write-back mode, reads back;
//! - otherwise a sector holds one of the values written to it since its last durable state (the
//!   write in flight, or unflushed write-back data): never anything that was not written;
//! - after the cut no write, discard or flush is acknowledged.
//!
//! The cut is placed at every store operation of a seeded workload (during fast initialization
//! and after it), then at random points of a long chain of sessions, each restarting from the
//! previous one's remains. The seed is printed; `POWER_CUT_SEED=N` replays one. The copier thread's
//! interleaving with the workload is not seeded, so the exact operation a cut hits may vary.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use nandlab_dhrd::{BackingStore, Device, DeviceConfig, DhrdError, Durability, Result};
use rand::{Rng, RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const SECTOR: usize = 512;
const CHUNK: u64 = 4096;
const SIZE: u64 = 16 * CHUNK;
const OPS_PER_SESSION: usize = 40;

/// What the simulated disk holds.
struct DiskState {
    /// Survives a power cut.
    durable: Vec<u8>,
    /// What reads see: durable plus everything written since.
    current: Vec<u8>,
    /// Sector writes not yet durable, oldest first (write-back mode only).
    unsynced: Vec<(usize, Vec<u8>)>,
    operations: u64,
    cut_at: Option<u64>,
    powered: bool,
    cut_happened: bool,
    writes_durable: bool,
    tear: bool,
    rng: Xoshiro256PlusPlus,
}

/// A disk that loses power at operation `cut_at` (1-based, counting reads, writes, zeroes and
/// syncs from every thread).
#[derive(Clone)]
struct PowerCutStore {
    state: Arc<Mutex<DiskState>>,
    path: PathBuf,
}

enum Step {
    Proceed,
    CutNow,
}

impl PowerCutStore {
    fn new(image: Vec<u8>, writes_durable: bool, cut_at: Option<u64>, tear: bool, seed: u64) -> PowerCutStore {
        PowerCutStore {
            state: Arc::new(Mutex::new(DiskState {
                current: image.clone(),
                durable: image,
                unsynced: Vec::new(),
                operations: 0,
                cut_at,
                powered: true,
                cut_happened: false,
                writes_durable,
                tear,
                rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            })),
            path: PathBuf::from("power-cut-simulator"),
        }
    }

    fn state(&self) -> MutexGuard<'_, DiskState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn surviving_image(&self) -> Vec<u8> {
        self.state().durable.clone()
    }

    fn cut_happened(&self) -> bool {
        self.state().cut_happened
    }

    fn operations(&self) -> u64 {
        self.state().operations
    }

    fn power_failure(&self) -> DhrdError {
        DhrdError::Backing {
            path: self.path.clone(),
            action: "simulated power cut",
            source: std::io::Error::from_raw_os_error(libc_eio()),
        }
    }

    /// Applies `bytes` at `offset`: to what reads see, and durably or queued per the mode; at the
    /// cut, only (torn) part of it may land.
    fn store(&self, offset: u64, bytes: &[u8]) -> Result<()> {
        let mut state = self.state();
        let step = state.step().map_err(|()| self.power_failure())?;
        let offset = usize::try_from(offset).expect("offset fits");
        let sectors = touched_sectors(offset, bytes.len());
        let mut after = state.current[sectors.start * SECTOR..sectors.end * SECTOR].to_vec();
        let base = sectors.start * SECTOR;
        after[offset - base..offset - base + bytes.len()].copy_from_slice(bytes);
        let sector_writes: Vec<(usize, Vec<u8>)> =
            sectors.clone().zip(after.chunks(SECTOR)).map(|(sector, content)| (sector, content.to_vec())).collect();
        if let Step::CutNow = step {
            state.lose_power(sector_writes);
            return Err(self.power_failure());
        }
        for (sector, content) in sector_writes {
            state.current[sector * SECTOR..(sector + 1) * SECTOR].copy_from_slice(&content);
            if state.writes_durable {
                state.durable[sector * SECTOR..(sector + 1) * SECTOR].copy_from_slice(&content);
            } else {
                state.unsynced.push((sector, content));
            }
        }
        Ok(())
    }
}

fn libc_eio() -> i32 {
    5 // EIO
}

fn touched_sectors(offset: usize, len: usize) -> std::ops::Range<usize> {
    offset / SECTOR..(offset + len).div_ceil(SECTOR)
}

impl DiskState {
    fn step(&mut self) -> std::result::Result<Step, ()> {
        if !self.powered {
            return Err(());
        }
        self.operations += 1;
        Ok(if self.cut_at == Some(self.operations) { Step::CutNow } else { Step::Proceed })
    }

    /// The cut: a random subset of the not-yet-durable sector writes (oldest first, then the one
    /// in flight) lands when tearing, none otherwise.
    fn lose_power(&mut self, in_flight: Vec<(usize, Vec<u8>)>) {
        let mut pending = std::mem::take(&mut self.unsynced);
        pending.extend(in_flight);
        if self.tear {
            for (sector, content) in pending {
                if self.rng.random_bool(0.5) {
                    self.durable[sector * SECTOR..(sector + 1) * SECTOR].copy_from_slice(&content);
                }
            }
        }
        self.powered = false;
        self.cut_happened = true;
    }
}

impl BackingStore for PowerCutStore {
    fn path(&self) -> &Path {
        &self.path
    }

    fn size_bytes(&self) -> u64 {
        SIZE
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let mut state = self.state();
        match state.step() {
            Err(()) => return Err(self.power_failure()),
            Ok(Step::CutNow) => {
                state.lose_power(Vec::new());
                return Err(self.power_failure());
            }
            Ok(Step::Proceed) => {}
        }
        let offset = usize::try_from(offset).expect("offset fits");
        buf.copy_from_slice(&state.current[offset..offset + buf.len()]);
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.store(offset, data)
    }

    fn zero(&self, offset: u64, len: u64) -> Result<()> {
        self.store(offset, &vec![0u8; usize::try_from(len).expect("len fits")])
    }

    fn sync(&self) -> Result<()> {
        let mut state = self.state();
        match state.step() {
            Err(()) => Err(self.power_failure()),
            Ok(Step::CutNow) => {
                state.lose_power(Vec::new());
                Err(self.power_failure())
            }
            Ok(Step::Proceed) => {
                state.durable = state.current.clone();
                state.unsynced.clear();
                Ok(())
            }
        }
    }
}

/// What the device has promised: the acknowledged image, and per sector every content a power cut
/// may leave there.
struct Model {
    acknowledged: Vec<u8>,
    allowed: Vec<Vec<Vec<u8>>>,
}

impl Model {
    fn new(image: Vec<u8>) -> Model {
        let allowed = image.chunks(SECTOR).map(|sector| vec![sector.to_vec()]).collect();
        Model { acknowledged: image, allowed }
    }

    fn sector(&self, sector: usize) -> Vec<u8> {
        self.acknowledged[sector * SECTOR..(sector + 1) * SECTOR].to_vec()
    }

    /// A write (or zeroing) of `bytes` at `offset` was acknowledged (`Ok`) or failed at the cut.
    fn record_write(&mut self, offset: usize, bytes: &[u8], acknowledged: bool, durable_on_ack: bool) {
        let sectors = touched_sectors(offset, bytes.len());
        let mut image = self.acknowledged.clone();
        image[offset..offset + bytes.len()].copy_from_slice(bytes);
        for sector in sectors {
            let content = image[sector * SECTOR..(sector + 1) * SECTOR].to_vec();
            if acknowledged && durable_on_ack {
                self.allowed[sector] = vec![content];
            } else if !self.allowed[sector].contains(&content) {
                self.allowed[sector].push(content);
            }
        }
        if acknowledged {
            self.acknowledged = image;
        }
    }

    fn record_flush(&mut self) {
        for sector in 0..self.allowed.len() {
            self.allowed[sector] = vec![self.sector(sector)];
        }
    }

    /// After a restart: every sector must hold an allowed content; the survivors become the truth.
    fn check_restart(&mut self, recovered: &[u8], context: &str) {
        for (sector, content) in recovered.chunks(SECTOR).enumerate() {
            assert!(
                self.allowed[sector].iter().any(|allowed| allowed == content),
                "{context}: sector {sector} (byte {}) holds data the device never promised \
                 ({} allowed states; acknowledged state {})",
                sector * SECTOR,
                self.allowed[sector].len(),
                if self.sector(sector) == content { "matches" } else { "differs" }
            );
        }
        *self = Model::new(recovered.to_vec());
    }
}

/// How one session was run.
#[derive(Clone, Copy, Debug)]
struct Session {
    durability: Durability,
    cut_at: Option<u64>,
    tear: bool,
    /// Start the workload while the copier is still filling RAM (paced), or after it finished.
    during_init: bool,
    seed: u64,
}

struct Outcome {
    image: Vec<u8>,
    operations: u64,
    cut_during_init: bool,
}

/// Runs one session of a seeded workload on a device over a `PowerCutStore` holding `image`;
/// checks reads and that nothing is acknowledged after the cut; returns what survived.
fn run_session(image: Vec<u8>, model: &mut Model, session: Session) -> Outcome {
    let durable_on_ack = session.durability.acknowledges_durably();
    let store = PowerCutStore::new(image, durable_on_ack, session.cut_at, session.tear, session.seed ^ 0x7ea2);
    let mut config = DeviceConfig::new("unused", None);
    config.chunk_bytes = CHUNK;
    config.durability = session.durability;
    if session.during_init {
        config.copy_rate_bytes_per_s = Some(2 << 20);
    }
    let device = Device::open_on(Box::new(store.clone()), &config).expect("open on the simulated disk");
    if !session.during_init {
        let finished = device.wait_initialized(Duration::from_secs(10));
        assert!(finished || store.cut_happened(), "initialization did not finish");
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(session.seed);
    let mut cut_during_init = false;
    for _ in 0..OPS_PER_SESSION {
        let cut_before = store.cut_happened();
        let acknowledged = run_one_op(&device, model, &mut rng, durable_on_ack, cut_before);
        if acknowledged && cut_before {
            panic!("{session:?}: an operation was acknowledged after the power cut");
        }
        if store.cut_happened() && !cut_before {
            let progress = device.init_progress();
            cut_during_init = progress.chunks_initialized < progress.chunks_total;
        }
    }
    drop(device);
    Outcome { image: store.surviving_image(), operations: store.operations(), cut_during_init }
}

/// One random operation; returns whether a mutation or flush was acknowledged.
fn run_one_op(device: &Device, model: &mut Model, rng: &mut impl Rng, durable_on_ack: bool, cut_before: bool) -> bool {
    let size = SIZE as usize;
    match rng.random_range(0..10) {
        0..=4 => {
            let aligned = rng.random_bool(0.6);
            let (offset, len) = if aligned {
                let blocks = rng.random_range(1..=3usize);
                let start = rng.random_range(0..size / 4096 - blocks + 1);
                (start * 4096, blocks * 4096)
            } else {
                let len = rng.random_range(1..3 * CHUNK as usize);
                (rng.random_range(0..size - len), len)
            };
            let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            let acknowledged = device.write_at(offset as u64, &data).is_ok();
            model.record_write(offset, &data, acknowledged, durable_on_ack);
            acknowledged
        }
        5 => {
            let blocks = rng.random_range(1..=2usize);
            let start = rng.random_range(0..size / 4096 - blocks + 1);
            let zeros = vec![0u8; blocks * 4096];
            let acknowledged = device.discard((start * 4096) as u64, zeros.len() as u64).is_ok();
            model.record_write(start * 4096, &zeros, acknowledged, durable_on_ack);
            acknowledged
        }
        6 => {
            let acknowledged = device.flush().is_ok();
            if acknowledged {
                model.record_flush();
            }
            acknowledged
        }
        _ => {
            let len = rng.random_range(1..2 * CHUNK as usize);
            let offset = rng.random_range(0..size - len);
            let mut buf = vec![0u8; len];
            // Before the cut every read must show exactly the acknowledged data; after it, a read
            // of RAM may still succeed, a read of the lost store may not.
            if device.read_at(offset as u64, &mut buf).is_ok() && !cut_before {
                assert!(buf == model.acknowledged[offset..offset + len], "read at {offset} len {len} differs");
            }
            false
        }
    }
}

/// Restarts from `image` with a fresh (never failing) disk and reads everything back through a
/// new device while its copier runs.
fn recover(image: Vec<u8>) -> Vec<u8> {
    let store = PowerCutStore::new(image, true, None, false, 0);
    let mut config = DeviceConfig::new("unused", None);
    config.chunk_bytes = CHUNK;
    let device = Device::open_on(Box::new(store), &config).expect("reopen after the cut");
    let mut recovered = vec![0u8; SIZE as usize];
    for (index, piece) in recovered.chunks_mut(3000).enumerate() {
        device.read_at(index as u64 * 3000, piece).expect("read after restart");
    }
    recovered
}

fn seed() -> u64 {
    let seed = std::env::var("POWER_CUT_SEED").ok().and_then(|text| text.parse().ok()).unwrap_or(0x0dd_ba11_u64);
    eprintln!("power-cut test seed {seed} (replay with POWER_CUT_SEED={seed})");
    seed
}

fn initial_image(seed: u64) -> Vec<u8> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..SIZE).map(|_| rng.random()).collect()
}

#[test]
fn a_power_cut_at_every_store_operation_keeps_every_acknowledged_write() {
    let seed = seed();
    let image = initial_image(seed);
    let mut cuts = 0;
    let mut cuts_during_init = 0;
    for durability in [Durability::Direct, Durability::WriteBack] {
        for during_init in [true, false] {
            for tear in [false, true] {
                let base = Session { durability, cut_at: None, tear, during_init, seed };
                let total = run_session(image.clone(), &mut Model::new(image.clone()), base).operations;
                for cut_at in 1..=total + 1 {
                    let session = Session { cut_at: Some(cut_at), ..base };
                    let mut model = Model::new(image.clone());
                    let outcome = run_session(image.clone(), &mut model, session);
                    cuts += 1;
                    cuts_during_init += usize::from(outcome.cut_during_init);
                    let recovered = recover(outcome.image);
                    model.check_restart(&recovered, &format!("{session:?}"));
                }
            }
        }
    }
    eprintln!("power-cut test: {cuts} cuts checked, {cuts_during_init} during fast initialization");
    assert!(cuts_during_init > 0, "no cut landed during fast initialization");
}

#[test]
fn chained_sessions_each_cut_at_a_random_point_lose_nothing_acknowledged() {
    let seed = seed() ^ 0xc4a1;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut image = initial_image(seed);
    let mut model = Model::new(image.clone());
    for round in 0..300u64 {
        let session = Session {
            durability: if rng.random_bool(0.5) { Durability::Direct } else { Durability::WriteBack },
            cut_at: Some(rng.random_range(1..120)),
            tear: rng.random_bool(0.7),
            during_init: rng.random_bool(0.5),
            seed: seed.wrapping_add(round),
        };
        let outcome = run_session(image, &mut model, session);
        let recovered = recover(outcome.image);
        model.check_restart(&recovered, &format!("round {round}: {session:?}"));
        image = recovered;
    }
}
