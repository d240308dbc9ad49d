//! Issue check: crash consistency under SIGKILL of the real daemon (`nandlab-dhrd-fuse`).
//!
//! A writer issues random writes (random sizes and offsets, unaligned) through DIR/disk and logs
//! each acknowledged one into a reference image; a killer thread sends SIGKILL at a random moment;
//! the next daemon start (which clears the stale mount the dead daemon left and re-initializes from
//! the backing store, with a throttled copier in every other round so writes and kills land both
//! during and after initialization) must read
//! back every acknowledged write exactly. Only the bytes of the one write in flight at the kill are
//! uncertain; they are adopted from the device after the check.

mod support;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rand::RngExt;
use support::daemon::Daemon;
use support::{fuse_unavailable, seeded_rng, skipped};

const KILLS: usize = 50;
const SIZE_BYTES: u64 = 32 << 20;
const WRITE_BYTES_MAX: usize = 300_000;

/// `throttled` slows the copier so the kill lands during initialization.
fn start_daemon(backing: &Path, mountpoint: &Path, throttled: bool) -> Daemon {
    let mut args = vec!["--size".to_owned(), SIZE_BYTES.to_string(), "--chunk".into(), "256KiB".into()];
    if throttled {
        args.extend(["--copy-rate".into(), "200MiB".into()]);
    }
    Daemon::start(backing, mountpoint, &args)
}

/// The writer's log: what every acknowledged write put on the disk.
struct Reference {
    image: Vec<u8>,
    /// The write in flight when the daemon died: it may have landed, partly or not at all.
    uncertain: Option<(usize, usize)>,
}

impl Reference {
    /// Checks every byte outside the uncertain range, then adopts what the device has there.
    fn verify(&mut self, disk: &File, round: usize) {
        let mut actual = vec![0u8; self.image.len()];
        for (index, piece) in actual.chunks_mut(1 << 20).enumerate() {
            disk.read_exact_at(piece, (index as u64) << 20).expect("read back");
        }
        let (hole_start, hole_end) = self.uncertain.map_or((0, 0), |(at, len)| (at, at + len));
        let mismatch = (0..self.image.len()).find(|&i| (i < hole_start || i >= hole_end) && actual[i] != self.image[i]);
        assert!(
            mismatch.is_none(),
            "round {round}: acknowledged data lost at byte {mismatch:?} (in-flight write {:?})",
            self.uncertain
        );
        self.image[hole_start..hole_end].copy_from_slice(&actual[hole_start..hole_end]);
        self.uncertain = None;
    }
}

#[test]
fn acknowledged_writes_survive_sigkill_of_the_daemon() {
    if skipped(fuse_unavailable()) {
        return;
    }
    let mut rng = seeded_rng(0xC4A5_4DE5_u64);
    let dir = tempfile::tempdir().expect("tempdir");
    let backing = dir.path().join("backing.img");
    let mountpoint = dir.path().join("mnt");
    std::fs::create_dir(&mountpoint).expect("mkdir");
    let mut reference = Reference { image: vec![0u8; SIZE_BYTES as usize], uncertain: None };
    let started = Instant::now();
    let mut acknowledged = 0usize;
    let mut killed_during_init = 0usize;

    for round in 0..KILLS {
        let mut daemon = start_daemon(&backing, &mountpoint, round % 2 == 0);
        let disk = daemon.disk();
        let pid = daemon.pid();
        let kill_after = Duration::from_millis(rng.random_range(10..100));
        let killed = Arc::new(AtomicBool::new(false));
        let killer = {
            let killed = Arc::clone(&killed);
            let mountpoint = mountpoint.clone();
            thread::spawn(move || {
                thread::sleep(kill_after);
                let during_init = init_running(&mountpoint);
                nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("SIGKILL");
                killed.store(true, Ordering::Release);
                during_init
            })
        };
        // Writes only after the check, so the check itself never races the kill.
        loop {
            let len = rng.random_range(1..WRITE_BYTES_MAX);
            let at = rng.random_range(0..SIZE_BYTES as usize - len);
            let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            reference.uncertain = Some((at, len));
            match disk.write_all_at(&data, at as u64) {
                Ok(()) => {
                    reference.image[at..at + len].copy_from_slice(&data);
                    reference.uncertain = None;
                    acknowledged += 1;
                }
                Err(_) => break,
            }
            if rng.random_range(0..8) == 0 && disk.sync_data().is_err() {
                break;
            }
        }
        killed_during_init += usize::from(killer.join().expect("killer thread"));
        assert!(killed.load(Ordering::Acquire));
        drop(disk);
        let _ = daemon.child.wait();
        daemon.leave_stale_mount = true;
        drop(daemon);

        // Restart from the backing store alone and check before anything else is written.
        let daemon = start_daemon(&backing, &mountpoint, true);
        reference.verify(&daemon.disk(), round);
        drop(daemon); // SIGKILL again: the next round recovers from this kill too
    }

    let mut daemon = start_daemon(&backing, &mountpoint, false);
    reference.verify(&daemon.disk(), KILLS);
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    let status = daemon.child.wait().expect("wait");
    assert!(status.success(), "clean shutdown failed: {status}");
    let on_disk = std::fs::read(&backing).expect("read backing file");
    assert!(on_disk == reference.image, "backing file differs after clean shutdown");
    eprintln!(
        "crash test: {} SIGKILLs during writes ({killed_during_init} during initialization) + {} \
         SIGKILLs after verification, {acknowledged} acknowledged writes checked, {:.1} s",
        KILLS,
        KILLS,
        started.elapsed().as_secs_f64()
    );
}

/// True when the stats file says the copier is still running.
fn init_running(mountpoint: &Path) -> bool {
    std::fs::read_to_string(mountpoint.join("stats"))
        .map(|stats| stats.contains("init_finished_after_ms running"))
        .unwrap_or(false)
}
