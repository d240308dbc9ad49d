//! Journal inference on raw tracefs text of a real ext4 on a loop device,
//! captured as a user would (echo to /sys/kernel/tracing, no nandlab
//! header), checked against what the file system itself says about its
//! journal: the journal inode's extents from `debugfs -R "stat <8>"`.

#![allow(clippy::unwrap_used)]

use nandlab_trace::journal::{infer_region, JournalTracker};
use nandlab_trace::{open, Op, ReadOptions, Record, Sector, SectorRange, TraceHeader, TraceSummary};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// The journal inode's extents from debugfs's `EXTENTS:` line, e.g.
/// `(0-8191):131072-139263`, in 512-byte sectors.
fn journal_extents_in_sectors(debugfs_stat: &str, block_bytes: u64) -> Vec<SectorRange> {
    let sectors_per_block = block_bytes / 512;
    let line = debugfs_stat.lines().skip_while(|line| !line.starts_with("EXTENTS:")).nth(1).expect("an EXTENTS: line");
    let mut ranges: Vec<SectorRange> = Vec::new();
    for extent in line.split(", ") {
        let physical = extent.split_once("):").expect("(logical):physical").1;
        let (first, last) = physical.split_once('-').unwrap_or((physical, physical));
        let (first, last): (u64, u64) = (first.trim().parse().unwrap(), last.trim().parse().unwrap());
        let range =
            SectorRange { start: Sector(first * sectors_per_block), len: (last - first + 1) * sectors_per_block };
        match ranges.last_mut() {
            Some(previous) if previous.end() == range.start => previous.len += range.len,
            _ => ranges.push(range),
        }
    }
    ranges
}

struct Inferred {
    region: Vec<SectorRange>,
    wraps: u64,
    commits: u64,
    flushes: u64,
    one_pass_commits: u64,
    one_pass_region: Vec<SectorRange>,
}

/// Both ways the replay glue can use the inference: a first pass for the
/// region then a streaming pass for commits, and a single pass.
fn infer(path: &Path) -> Inferred {
    let (region, wraps) = infer_region(open(path, None, &ReadOptions::default()).unwrap()).unwrap();
    let mut tracker = JournalTracker::for_file(path, None, &ReadOptions::default()).unwrap();
    assert_eq!(tracker.report().regions, region);
    let reader = open(path, None, &ReadOptions::default()).unwrap();
    let mut summary = TraceSummary::new(reader.header());
    let mut flushes = 0;
    for record in reader {
        let record: Record = record.unwrap();
        tracker.observe(&record);
        summary.add(&record, &TraceHeader::default());
        flushes += u64::from(record.op == Op::Flush);
    }
    let one_pass = summary.journal();
    Inferred {
        region,
        wraps,
        commits: tracker.report().commits,
        flushes,
        one_pass_commits: one_pass.commits,
        one_pass_region: one_pass.regions,
    }
}

#[test]
fn the_stored_raw_capture_yields_the_journal_debugfs_reports_and_its_commits() {
    let facts = std::fs::read_to_string(data("ext4-loop-discard-fsync.journal.txt")).unwrap();
    let truth = journal_extents_in_sectors(&facts, 4096);
    let inferred = infer(&data("ext4-loop-discard-fsync.tracefs.gz"));
    eprintln!(
        "region {:?} (wrapped {}), commits {} (one pass {}), flushes {}",
        inferred.region, inferred.wraps, inferred.commits, inferred.one_pass_commits, inferred.flushes
    );
    assert_eq!(inferred.region, truth);
    assert_eq!(inferred.one_pass_region, truth);
    assert!(inferred.wraps >= 1);
    assert!(inferred.commits >= 100, "{} commits", inferred.commits);
    assert!(inferred.commits <= inferred.flushes, "a commit needs a flush on a loop device");
    assert_eq!(inferred.one_pass_commits, inferred.commits);
    let (commit_blocks, superblock_updates) =
        commit_blocks_and_superblock_updates(&data("ext4-loop-discard-fsync.tracefs.gz"), &truth);
    assert!(
        (commit_blocks..=commit_blocks + superblock_updates).contains(&inferred.commits),
        "{} commits, {commit_blocks} commit blocks, {superblock_updates} superblock updates",
        inferred.commits
    );
}

/// An independent count that holds for this loop-device capture: jbd2
/// issues every log block itself, while each commit block reaches the block
/// layer from a kworker (requeued by the flush machinery), so commit blocks
/// are the journal writes (by the true region) of other processes; journal
/// superblock updates are jbd2's writes to the journal's first block.
fn commit_blocks_and_superblock_updates(path: &Path, journal: &[SectorRange]) -> (u64, u64) {
    let (mut commit_blocks, mut superblock_updates) = (0, 0);
    for record in open(path, None, &ReadOptions::default()).unwrap() {
        let record = record.unwrap();
        if record.op != Op::Write || !journal.iter().any(|range| range.overlaps(record.start, record.len)) {
            continue;
        }
        if record.process.base() != "jbd2" {
            commit_blocks += 1;
        } else if record.start == journal[0].start {
            superblock_updates += 1;
        }
    }
    (commit_blocks, superblock_updates)
}

const IMAGE_BYTES: u64 = 1 << 30;
const BLOCK_BYTES: u64 = 4096;
const TRACEFS: &str = "/sys/kernel/tracing";
const DIRECTORIES: usize = 32;
const ROUNDS: usize = 400;

/// A 1 GiB ext4 on a loop device with a tracefs instance recording its
/// `block_rq_issue` events. Dropping it stops tracing, unmounts, detaches
/// the loop device and removes the files, whatever happened before.
struct Rig {
    work: PathBuf,
    mount_point: PathBuf,
    device: Option<String>,
    mounted: bool,
    instance: Option<PathBuf>,
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(instance) = self.instance.take() {
            let _ = std::fs::write(instance.join("tracing_on"), "0");
            let _ = std::fs::write(instance.join("events/block/block_rq_issue/enable"), "0");
            let _ = std::fs::remove_dir(&instance);
        }
        if self.mounted {
            let _ = Command::new("umount").arg(&self.mount_point).status();
        }
        if let Some(device) = self.device.take() {
            let _ = Command::new("losetup").args(["-d", &device]).status();
        }
        let _ = std::fs::remove_dir_all(&self.work);
    }
}

fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(program).args(args).output().map_err(|error| format!("{program}: {error}"))?;
    if !output.status.success() {
        return Err(format!("{program} {args:?}: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find(|line| line.starts_with("Uid:")).map(|line| line.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// Files created in many directories per fsync make transactions large
/// enough for jbd2's 32 MiB log to wrap within a few hundred commits; the
/// previous round's files are deleted, so `-o discard` issues discards.
fn workload(root: &Path) -> std::io::Result<()> {
    let block = vec![0x5a_u8; 16 * 1024];
    for directory in 0..DIRECTORIES {
        std::fs::create_dir(root.join(format!("d{directory}")))?;
    }
    for round in 0..ROUNDS {
        let mut last = None;
        for directory in 0..DIRECTORIES {
            let path = root.join(format!("d{directory}/f{round}"));
            std::fs::write(&path, &block)?;
            last = Some(path);
        }
        if let Some(last) = last {
            std::fs::File::open(last)?.sync_all()?;
        }
        if round > 0 {
            for directory in 0..DIRECTORIES {
                std::fs::remove_file(root.join(format!("d{directory}/f{}", round - 1)))?;
            }
        }
    }
    Ok(())
}

fn capture_raw(rig: &mut Rig) -> Result<(PathBuf, Vec<SectorRange>), String> {
    let image = rig.work.join("fs.img");
    std::fs::File::create(&image).and_then(|file| file.set_len(IMAGE_BYTES)).map_err(|error| error.to_string())?;
    let device = run("losetup", &["-f", "--show", image.to_str().unwrap()])?.trim().to_owned();
    rig.device = Some(device.clone());
    run("mkfs.ext4", &["-q", "-F", "-b", "4096", &device])?;
    std::fs::create_dir(&rig.mount_point).map_err(|error| error.to_string())?;
    run("mount", &["-o", "discard", &device, rig.mount_point.to_str().unwrap()])?;
    rig.mounted = true;
    let rdev = std::fs::metadata(&device).map_err(|error| error.to_string())?.rdev();
    let (major, minor) = ((rdev >> 8) & 0xfff, (rdev & 0xff) | ((rdev >> 12) & 0xfff00));
    let instance = Path::new(TRACEFS).join(format!("instances/nandlab-journal-test-{}", std::process::id()));
    std::fs::create_dir(&instance).map_err(|error| format!("{}: {error}", instance.display()))?;
    rig.instance = Some(instance.clone());
    let write = |file: &str, value: String| {
        std::fs::write(instance.join(file), value).map_err(|error| format!("{file}: {error}"))
    };
    write("buffer_size_kb", "32768".into())?;
    write("events/block/block_rq_issue/filter", format!("dev == {}", (major << 20) | minor))?;
    write("events/block/block_rq_issue/enable", "1".into())?;
    write("tracing_on", "1".into())?;
    workload(&rig.mount_point).map_err(|error| format!("workload: {error}"))?;
    run("sync", &[])?;
    write("tracing_on", "0".into())?;
    let raw = rig.work.join("raw.txt");
    std::fs::copy(instance.join("trace"), &raw).map_err(|error| format!("reading the trace: {error}"))?;
    let stat = run("debugfs", &["-R", "stat <8>", &device])?;
    Ok((raw, journal_extents_in_sectors(&stat, BLOCK_BYTES)))
}

/// Root only: makes its own capture and checks the inference against
/// debugfs. Skips (passing) without root, tracefs instances or loop devices.
#[test]
fn a_fresh_raw_capture_of_ext4_on_a_loop_device_yields_its_journal_and_commits() {
    if !is_root() || !Path::new(TRACEFS).join("instances").is_dir() {
        eprintln!("skipped: needs root and {TRACEFS}/instances");
        return;
    }
    let base = if Path::new("/dev/shm").is_dir() { Path::new("/dev/shm") } else { Path::new("/tmp") };
    let work = base.join(format!("nandlab-journal-test-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let mut rig = Rig { mount_point: work.join("mnt"), work, device: None, mounted: false, instance: None };
    let (raw, truth) = match capture_raw(&mut rig) {
        Ok(captured) => captured,
        Err(error) if rig.device.is_none() => {
            eprintln!("skipped: no loop device ({error})");
            return;
        }
        Err(error) => panic!("capture failed: {error}"),
    };
    let inferred = infer(&raw);
    eprintln!(
        "journal {truth:?}; inferred {:?} (wrapped {}), commits {} (one pass {}), flushes {}",
        inferred.region, inferred.wraps, inferred.commits, inferred.one_pass_commits, inferred.flushes
    );
    assert_eq!(inferred.region, truth);
    assert!(inferred.commits >= 100, "{} commits", inferred.commits);
    let (commit_blocks, superblock_updates) = commit_blocks_and_superblock_updates(&raw, &truth);
    eprintln!("{commit_blocks} commit blocks, {superblock_updates} superblock updates");
    // A live machine may slip other requests into a commit's pattern or
    // let jbd2 issue a commit block itself: allow 2 % either way.
    let slack = superblock_updates + commit_blocks / 50;
    assert!(
        inferred.commits.abs_diff(commit_blocks) <= slack,
        "{} commits, {commit_blocks} commit blocks, {superblock_updates} superblock updates",
        inferred.commits
    );
}
