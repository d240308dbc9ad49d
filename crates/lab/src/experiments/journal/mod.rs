//! `nandlab reproduce journal`: journal/data separation in a host-level FTL
//! (Son and Ahn, "Optimizing Garbage Collection Overhead of Host-level Flash
//! Translation Layer for Journaling Filesystems", 2021), run as the authors
//! would: ext4 made with `-b 4096` (and `-J size=` for the journal sweep),
//! filled to 75 % with files, then fio `randwrite bs=4k` with `fsync=N`,
//! `numjobs=4` (and one `libaio iodepth=32` run) or Filebench-like varmail
//! and fileserver, `data=ordered` and `data=journal`, each captured several
//! times through `nandlab capture`. Every trace is replayed on the
//! open-channel device under the pblk-like host FTL, mixed and separated, at
//! ρ = 11 % and 25 %, on a device aged by workload aging — the capture,
//! then its workload part looped until the windowed WAF is steady
//! (`steady.rs`) — and one more pass of the workload part is measured. Each point gets a verdict against
//! the paper's −33 % WA and +46 % throughput.

mod steady;

use crate::args::ExperimentArgs;
use crate::error::{Context as _, Error, Result};
use crate::replay::TraceSource;
use crate::shared::{capture_cached, config_from, nandlab_binary, CaptureSpec};
use crate::Report;
use nandlab_convert::f64_of;
use nandlab_core::ftl::LayerKind;
use nandlab_core::timing::{Arrival, LatencySummary};
use nandlab_core::Config;
use nandlab_report::{Axis, BarChart, BarSeries, OutputDir, Summary};
use nandlab_trace::host::journal_sectors;
use serde::Serialize;
use std::path::{Path, PathBuf};
use steady::{replay_steady, Aging};

/// pblk's default over-provisioning (`PBLK_DEFAULT_OP`, 11 %) and a roomier device.
const OVER_PROVISIONING: [f64; 2] = [0.11, 0.25];
/// The paper's claim: WAF down by more than 33 %, I/O performance up 46-50 %.
const PAPER_WA_RATIO: f64 = 0.67;
const PAPER_THROUGHPUT_RATIO: f64 = 1.46;
/// The file system is filled with files to this share before the workload.
const FILL_PERCENT: u64 = 75;
/// Captures per point unless `--repeats` says otherwise.
const SAMPLES_DEFAULT: usize = 3;
/// fio's jobs (`numjobs`), and the queue depth of its libaio run.
const FIO_JOBS: u32 = 4;
const LIBAIO_DEPTH: u32 = 32;

/// The `[precondition]` steady-state rule of the aging before the measured
/// pass (`steady.rs`): windows of a quarter of the logical capacity;
/// steady once 3 windows in a row each change the WAF by at most 5 %
/// (looser than the synthetic default: trace windows carry flush padding
/// that varies with the fsync pattern); at most 40 capacities, steady or
/// not, to bound the run time.
const AGING: [&str; 5] = [
    "precondition.kind=\"workload\"",
    "precondition.window_device_fraction=0.25",
    "precondition.steady_windows=3",
    "precondition.steady_tolerance=0.05",
    "precondition.max_device_writes=40",
];

/// The experiment device: 2 groups x 4 PUs, 64-page chunks (256 KiB), so a
/// line is 2 MiB; FEMU's timing from the `femu-32g` preset. `--fit` scales
/// the chunks per PU to the traced file system. Background chunk resets run
/// whenever a PU idles (`timing.gc_low_blocks` above any free count pblk keeps).
const DEVICE: &str = "
preset = \"femu-32g\"
[device]
channels = 2
chips_per_channel = 4
pages_per_block = 64
blocks_per_plane = 64
[timing]
gc_low_blocks = 32
";

/// A workload run on the file system after it was filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Load {
    /// fio `randwrite bs=4k` with `fsync=N`: `numjobs=4` psync, or one job
    /// at `ioengine=libaio iodepth=32` (`direct=1`, as libaio needs to be asynchronous).
    Fio {
        fsync: u32,
        libaio: bool,
    },
    Varmail,
    Fileserver,
}

impl Load {
    fn name(self) -> String {
        match self {
            Load::Fio { fsync, libaio: false } => format!("fio fsync={fsync}"),
            Load::Fio { fsync, libaio: true } => format!("fio libaio qd{LIBAIO_DEPTH} fsync={fsync}"),
            Load::Varmail => "varmail".to_owned(),
            Load::Fileserver => "fileserver".to_owned(),
        }
    }

    /// The replay's queue depth: what the workload kept outstanding (fio's
    /// jobs or iodepth; the kernel's write-back under the single-threaded
    /// Filebench-like personalities).
    fn queue_depth(self) -> u32 {
        match self {
            Load::Fio { libaio: true, .. } => LIBAIO_DEPTH,
            _ => FIO_JOBS,
        }
    }

    /// Bytes of the workload's own files, left free by the fill.
    fn footprint_bytes(self, fs_bytes: u64) -> u64 {
        match self {
            Load::Fio { .. } => fs_bytes / 8,
            Load::Varmail => 1000 * (16 << 10),
            Load::Fileserver => FILESERVER_FILES * (128 << 10),
        }
    }
}

const FILESERVER_FILES: u64 = 400;

/// How much is run: the quick default, or the paper's matrix (`--paper-scale`).
struct Scale {
    fs_size: &'static str,
    fs_bytes: u64,
    /// Host writes each workload makes, in file-system sizes.
    device_writes: u64,
    points: Vec<Point>,
    /// Cost-benefit and log-aware victims at every ρ, not only the first (greedy always).
    every_victim_at_every_rho: bool,
}

/// One captured configuration: workload, ext4 journalling mode, journal size.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Point {
    load: Load,
    mode: &'static str,
    /// `None`: mke2fs's default for the file system's size.
    journal_mib: Option<u32>,
}

impl Point {
    fn label(&self) -> String {
        let journal = self.journal_mib.map_or_else(|| "default".to_owned(), |mib| format!("{mib}MiB"));
        format!("{} data={} j={journal}", self.load.name(), self.mode)
    }

    fn file_stem(&self) -> String {
        self.label().replace([' ', '='], "-")
    }
}

impl Scale {
    /// The trace of one capture: the point, the file system's size and the
    /// workload's length, so that captures of different scales or lengths
    /// never stand in for each other in `OUT/traces`.
    fn trace_name(&self, point: &Point, sample: usize) -> String {
        format!("{}-{}-{}x-{sample}.nlt", point.file_stem(), self.fs_size, self.device_writes)
    }
}

/// `--set` keys of `reproduce journal`, each choosing part of the scale's
/// matrix: `points` (comma-separated parts of point labels, e.g.
/// `fio fsync=1 data=ordered`), `victims` (`greedy`, `cost-benefit`,
/// `greedy-log-aware`) and `capture_writes` (file-system sizes each
/// capture's workload writes).
pub const KEYS: [&str; 3] = ["points", "victims", "capture_writes"];

/// The part of the matrix `--set` chose; everything by default.
#[derive(Debug, Default)]
struct Selection {
    /// A point runs when its label contains one of these (or there are none).
    points: Vec<String>,
    /// Victim choices that run (empty: the scale's).
    victims: Vec<Victims>,
    /// Host writes of each capture in file-system sizes, instead of the scale's.
    capture_writes: Option<u64>,
}

/// The longest capture `capture_writes` allows: 100 file-system sizes.
const MAX_CAPTURE_WRITES: u64 = 100;

impl Selection {
    fn parse(set: &[String]) -> Result<Self> {
        let mut selection = Self::default();
        for assignment in set {
            let (key, value) = assignment
                .split_once('=')
                .map(|(key, value)| (key.trim(), value.trim().trim_matches('"')))
                .ok_or_else(|| Error::Invalid(format!("--set {assignment:?}: expected KEY=VALUE")))?;
            let items = || value.split(',').map(str::trim).filter(|item| !item.is_empty());
            match key {
                "points" => selection.points.extend(items().map(str::to_owned)),
                "victims" => {
                    for name in items() {
                        let victim = [GREEDY, COST_BENEFIT, GREEDY_LOG_AWARE]
                            .into_iter()
                            .find(|victim| victim.name.replace(' ', "-") == name)
                            .ok_or_else(|| {
                                Error::Invalid(format!(
                                    "--set {assignment:?}: unknown victim choice {name:?}; expected greedy, \
                                     cost-benefit or greedy-log-aware"
                                ))
                            })?;
                        selection.victims.push(victim);
                    }
                }
                "capture_writes" => {
                    let writes = value.parse().ok().filter(|writes| (1..=MAX_CAPTURE_WRITES).contains(writes));
                    selection.capture_writes = Some(writes.ok_or_else(|| {
                        Error::Invalid(format!(
                            "--set {assignment:?}: capture_writes takes a whole number of file-system sizes, \
                             1-{MAX_CAPTURE_WRITES}"
                        ))
                    })?);
                }
                _ => return Err(Error::Invalid(format!("--set {assignment:?}: journal takes {}", KEYS.join(", ")))),
            }
        }
        Ok(selection)
    }

    /// The scale with only the chosen points, and the chosen capture length.
    /// A `points` part that matches no point is refused with the labels.
    fn apply(&self, mut scale: Scale) -> Result<Scale> {
        let labels: Vec<String> = scale.points.iter().map(Point::label).collect();
        if let Some(part) = self.points.iter().find(|part| !labels.iter().any(|label| label.contains(part.as_str()))) {
            return Err(Error::Invalid(format!(
                "--set points: {part:?} is part of no point's label at this scale; the points are: {}",
                labels.join("; ")
            )));
        }
        if !self.points.is_empty() {
            scale.points.retain(|point| self.points.iter().any(|part| point.label().contains(part.as_str())));
        }
        scale.device_writes = self.capture_writes.unwrap_or(scale.device_writes);
        Ok(scale)
    }

    fn takes(&self, victim: &Victims) -> bool {
        self.victims.is_empty() || self.victims.contains(victim)
    }

    /// The `--set` arguments that chose this part, for the summary's command line.
    fn arguments(set: &[String]) -> String {
        set.iter().map(|assignment| format!(" --set '{assignment}'")).collect()
    }
}

fn scale(paper: bool) -> Scale {
    let point = |load, mode, journal_mib| Point { load, mode, journal_mib };
    let fio = |fsync| Load::Fio { fsync, libaio: false };
    let libaio = Load::Fio { fsync: 32, libaio: true };
    if paper {
        let mut points = Vec::new();
        for mode in ["ordered", "journal"] {
            for load in [fio(1), fio(8), fio(32), libaio, Load::Varmail, Load::Fileserver] {
                points.push(point(load, mode, None));
            }
            for journal in [16, 64, 256] {
                points.push(point(fio(1), mode, Some(journal)));
            }
        }
        return Scale { fs_size: "1G", fs_bytes: 1 << 30, device_writes: 10, points, every_victim_at_every_rho: true };
    }
    let points = vec![
        point(fio(1), "ordered", None),
        point(libaio, "ordered", None),
        point(Load::Varmail, "ordered", None),
        point(Load::Fileserver, "ordered", None),
        point(fio(1), "journal", None),
    ];
    Scale { fs_size: "256M", fs_bytes: 256 << 20, device_writes: 4, points, every_victim_at_every_rho: false }
}

/// One replay of one capture.
#[derive(Clone, Debug, Serialize)]
struct Row {
    point: String,
    sample: usize,
    over_provisioning: f64,
    victim: String,
    separated: bool,
    queue_depth: u32,
    host_pages_written: u64,
    /// Host writes of the measured pass in logical capacities.
    device_writes: f64,
    journal_share: f64,
    /// Journal pages written over the journal's size: times the log wrapped.
    journal_wraps: f64,
    /// pblk's `(user + gc + pad) / user`.
    pblk_wa: f64,
    /// `(user + gc) / user`.
    gc_wa: f64,
    /// Flash programs over host pages (line metadata included).
    device_waf: f64,
    padding_share: f64,
    gc_copies_data: u64,
    gc_copies_journal: u64,
    padded_data_queue: u64,
    padded_journal_queue: u64,
    gc_lines: u64,
    user_stalls: u64,
    mixed_lines_closed: u64,
    /// Host writes of the aging before the measured pass, in logical capacities.
    aging_device_writes: f64,
    aging_journal_wraps: f64,
    /// Whole aging passes (the first, the whole capture, included).
    aging_passes: u64,
    /// The aging ended steady ([`AGING`]).
    steady: bool,
    /// The last aging window's WAF.
    final_window_waf: f64,
    throughput_mb_s: f64,
    write_p99_us: f64,
    flush_p99_us: f64,
}

pub fn run(args: &ExperimentArgs) -> Result<()> {
    let selection = Selection::parse(&args.set)?;
    let scale = selection.apply(scale(args.paper_scale))?;
    let samples = args.repeats.unwrap_or(SAMPLES_DEFAULT).max(1);
    let traces = args.out.join("traces");
    std::fs::create_dir_all(&traces).with_context(|| format!("creating {}", traces.display()))?;
    let captures: Vec<(Point, usize, PathBuf)> = scale
        .points
        .iter()
        .flat_map(|point| (0..samples).map(move |sample| (*point, sample)))
        .map(|(point, sample)| (point, sample, traces.join(scale.trace_name(&point, sample))))
        .collect();
    preflight(captures.iter().filter(|(_, _, path)| !path.exists()).map(|(point, _, _)| point))?;
    let mut rows = Vec::new();
    for (point, sample, path) in &captures {
        let trace = ensure_trace(point, *sample, path, &scale, args.seed)?;
        for (rho_index, rho) in OVER_PROVISIONING.into_iter().enumerate() {
            let mut victims = vec![GREEDY];
            if scale.every_victim_at_every_rho || rho_index == 0 {
                victims.extend([COST_BENEFIT, GREEDY_LOG_AWARE]);
            }
            victims.retain(|victim| selection.takes(victim));
            for victim in victims {
                for separate in [false, true] {
                    eprintln!(
                        "journal: {} capture {sample}, ρ = {rho}, {}, {}",
                        point.label(),
                        victim.name,
                        if separate { "separated" } else { "mixed" }
                    );
                    let setting = Setting { point, sample: *sample, rho, victim, separate };
                    rows.push(replay_setting(&trace, &setting, args)?);
                }
            }
        }
    }
    write_results(&args.out, &scale, &rows, samples, args)
}

/// Says what is missing before anything is attached: root and loop devices
/// for any capture, fio for fio's captures, mkfs.ext4 always.
fn preflight<'a>(missing: impl Iterator<Item = &'a Point>) -> Result<()> {
    let missing: Vec<&Point> = missing.collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut needs = Vec::new();
    if !is_root() {
        needs.push("root (loop devices, mkfs, mount and tracefs)".to_owned());
    }
    if !Path::new("/dev/loop-control").exists() {
        needs.push("/dev/loop-control (modprobe loop)".to_owned());
    }
    if !on_path("mkfs.ext4") {
        needs.push("mkfs.ext4 (Debian package e2fsprogs)".to_owned());
    }
    if missing.iter().any(|point| matches!(point.load, Load::Fio { .. })) && !on_path("fio") {
        needs.push("fio (Debian package fio)".to_owned());
    }
    if needs.is_empty() {
        return Ok(());
    }
    Err(Error::Failed(format!(
        "{} trace(s) are not cached yet (first: {}) and capturing them needs: {}",
        missing.len(),
        missing[0].label(),
        needs.join("; ")
    )))
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find(|line| line.starts_with("Uid:"))
            .is_some_and(|line| line.split_whitespace().nth(1) == Some("0"))
    })
}

fn on_path(program: &str) -> bool {
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&dirs).chain(["/sbin".into(), "/usr/sbin".into()]).any(|dir| dir.join(program).is_file())
}

/// What one replay varied.
struct Setting<'a> {
    point: &'a Point,
    sample: usize,
    rho: f64,
    victim: Victims,
    separate: bool,
}

/// A victim choice replayed: pblk's policy, and whether separated runs
/// leave young journal lines to the log (`pblk.log_aware`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Victims {
    name: &'static str,
    policy: &'static str,
    log_aware: bool,
}

const GREEDY: Victims = Victims { name: "greedy", policy: "greedy", log_aware: false };
const COST_BENEFIT: Victims = Victims { name: "cost-benefit", policy: "cost-benefit", log_aware: false };
const GREEDY_LOG_AWARE: Victims = Victims { name: "greedy log-aware", policy: "greedy", log_aware: true };

/// The journal's size in pages, from the trace header's extents.
fn journal_size_pages(trace: &Path) -> Result<u64> {
    let header = TraceSource::file(trace).open()?.header().clone();
    let sectors: u64 = journal_sectors(&header.journal, &header).iter().map(|range| range.end - range.start).sum();
    Ok(sectors / 8)
}

fn replay_setting(trace: &Path, setting: &Setting<'_>, args: &ExperimentArgs) -> Result<Row> {
    let settings = [
        format!("device.over_provisioning={}", setting.rho),
        format!("pblk.separate={}", setting.separate),
        format!("pblk.victim=\"{}\"", setting.victim.policy),
        format!("pblk.log_aware={}", setting.victim.log_aware),
        "host.classifier=\"journal\"".to_owned(),
        format!("timing.queue_depth={}", setting.point.load.queue_depth()),
        format!("seed={}", args.seed),
    ];
    let assignments: Vec<String> = settings.into_iter().chain(AGING.map(str::to_owned)).collect();
    let mut config = config_from(DEVICE, &assignments)?;
    open_channel_closed_loop(&mut config)?;
    let journal_pages = journal_size_pages(trace)?;
    let (report, aging) = replay_steady(trace, config, journal_pages, &mut args.watch.observer())?;
    row(setting, &report, journal_pages, aging)
}

/// The experiment's replay settings: the pblk-like host FTL, closed loop,
/// one queue.
fn open_channel_closed_loop(config: &mut Config) -> Result<()> {
    config.ftl.kind = LayerKind::OpenChannel;
    config.pblk.validate(&config.validate()?)?;
    config.timing.queues = 1;
    config.timing.arrival = Arrival::Closed;
    Ok(())
}

/// Fills the file system to [`FILL_PERCENT`] (less the workload's own
/// files) with files of random bytes, syncs, marks the fill's end with one
/// `O_DIRECT` read of the file system's block device by `dd`
/// ([`steady::FILL_END_PROCESS`]; the device, not a file, as ext4 under
/// `data=journal` serves files' `O_DIRECT` reads from the page cache), then
/// runs the workload.
const FILL_THEN_RUN: &str = r#"set -e
total=$(df -B1 --output=size . | tail -1); used=$(df -B1 --output=used . | tail -1)
fill=$(( total * $NANDLAB_FILL_PERCENT / 100 - used - $NANDLAB_FOOTPRINT ))
i=0
while [ "$fill" -gt 0 ]; do
  n=$(( fill > 16777216 ? 16777216 : fill ))
  head -c "$n" /dev/urandom > "fill$i"
  fill=$(( fill - n )); i=$(( i + 1 ))
done
sync
dd if="$(df --output=source . | tail -1)" of=/dev/null bs=4096 count=1 iflag=direct status=none
echo "filled to $(df --output=pcent . | tail -1) before the workload" >&2
exec "$@"
"#;

/// Captures one sample of `point` unless its trace exists already.
fn ensure_trace(point: &Point, sample: usize, path: &Path, scale: &Scale, seed: u64) -> Result<PathBuf> {
    let traces = path.parent().context("the trace lies in a folder")?;
    let name = path.file_name().and_then(|name| name.to_str()).context("trace names are UTF-8")?;
    let sample_seed = seed.wrapping_add(sample as u64);
    let workload = workload_argv(point.load, scale, traces, name, sample_seed)?;
    let footprint = point.load.footprint_bytes(scale.fs_bytes);
    let argv: Vec<String> = [
        "env".to_owned(),
        format!("NANDLAB_FILL_PERCENT={FILL_PERCENT}"),
        format!("NANDLAB_FOOTPRINT={footprint}"),
        "sh".to_owned(),
        "-c".to_owned(),
        FILL_THEN_RUN.to_owned(),
        "sh".to_owned(),
    ]
    .into_iter()
    .chain(workload)
    .collect();
    let mut mkfs_options = vec!["-b".to_owned(), "4096".to_owned()];
    if let Some(mib) = point.journal_mib {
        mkfs_options.extend(["-J".to_owned(), format!("size={mib}")]);
    }
    let spec = CaptureSpec {
        name,
        size: scale.fs_size,
        mount_options: &format!("data={}", point.mode),
        mkfs_options: &mkfs_options,
        image_dir: Path::new("/dev/shm"),
        argv,
    };
    capture_cached(&spec, traces, "journal")
}

/// The workload's command line; fio's job file is written beside the traces.
fn workload_argv(load: Load, scale: &Scale, traces: &Path, name: &str, seed: u64) -> Result<Vec<String>> {
    let total_bytes = scale.device_writes * scale.fs_bytes;
    let exe = || nandlab_binary().map(|exe| exe.display().to_string());
    Ok(match load {
        Load::Fio { fsync, libaio } => {
            let jobs = if libaio { 1 } else { FIO_JOBS };
            let engine = if libaio {
                format!("ioengine=libaio\niodepth={LIBAIO_DEPTH}\ndirect=1")
            } else {
                "ioengine=psync".to_owned()
            };
            let job = format!(
                "[global]\nbs=4k\nrw=randwrite\n{engine}\nfsync={fsync}\nnumjobs={jobs}\nsize={}\nio_size={}\n\
                 randseed={seed}\nfilename_format=fio.$jobnum\n\n[randwrite]\n",
                load.footprint_bytes(scale.fs_bytes) / u64::from(jobs),
                total_bytes / u64::from(jobs),
            );
            let file = traces.join(format!("{name}.fio"));
            nandlab_trace::write_output(&file, job.as_bytes())
                .with_context(|| format!("writing {}", file.display()))?;
            vec!["fio".to_owned(), file.display().to_string(), "--output=/dev/null".to_owned()]
        }
        Load::Varmail => {
            // About 32 KiB written per iteration (a created and an appended 16 KiB file).
            let iterations = total_bytes / (32 << 10);
            vec![
                exe()?,
                "fsload".into(),
                "varmail".into(),
                "--iterations".into(),
                iterations.to_string(),
                "--seed".into(),
                seed.to_string(),
            ]
        }
        Load::Fileserver => {
            // About 144 KiB per iteration (a 128 KiB file written, 16 KiB appended).
            let iterations = total_bytes / (144 << 10);
            vec![
                exe()?,
                "fsload".into(),
                "fileserver".into(),
                "--iterations".into(),
                iterations.to_string(),
                "--files".into(),
                FILESERVER_FILES.to_string(),
                "--seed".into(),
                seed.to_string(),
            ]
        }
    })
}

/// `journal_size_pages`: the journal's size in 4 KiB pages.
fn row(setting: &Setting<'_>, report: &Report, journal_size_pages: u64, aging: Aging) -> Result<Row> {
    let counters = &report.measured.counters;
    let oc = report.open_channel.as_ref().context("an open-channel replay reports its host FTL")?;
    let pblk = &oc.pblk;
    let timed = report.timed.as_ref().context("the replay is timed")?;
    let journal = report.classes.iter().position(|class| class == "journal");
    let class_count =
        |counts: &[u64], class: Option<usize>| class.and_then(|index| counts.get(index)).copied().unwrap_or(0);
    let journal_pages = class_count(&pblk.class_pages, journal);
    let ratio = |part: u64, whole: u64| if whole == 0 { 0.0 } else { f64_of(part) / f64_of(whole) };
    let journal_queue = if setting.separate { journal } else { None };
    Ok(Row {
        point: setting.point.label(),
        sample: setting.sample,
        over_provisioning: setting.rho,
        victim: setting.victim.name.to_owned(),
        separated: setting.separate,
        queue_depth: setting.point.load.queue_depth(),
        host_pages_written: counters.host_pages_written,
        device_writes: ratio(counters.host_pages_written, u64::from(report.device.geometry.logical_pages)),
        journal_share: ratio(journal_pages, counters.host_pages_written),
        journal_wraps: ratio(journal_pages, journal_size_pages),
        pblk_wa: pblk.pblk_wa().unwrap_or(0.0),
        gc_wa: pblk.gc_wa().unwrap_or(0.0),
        device_waf: report.measured.waf.unwrap_or(0.0),
        padding_share: pblk.padding_share().unwrap_or(0.0),
        gc_copies_data: class_count(&pblk.class_gc_copies, Some(0)),
        gc_copies_journal: class_count(&pblk.class_gc_copies, journal),
        padded_data_queue: class_count(&pblk.queue_padded_pages, Some(0)),
        padded_journal_queue: class_count(&pblk.queue_padded_pages, journal_queue),
        gc_lines: pblk.gc_lines,
        user_stalls: pblk.user_stalls,
        mixed_lines_closed: pblk.mixed_lines_closed,
        aging_device_writes: aging.device_writes,
        aging_journal_wraps: aging.journal_wraps,
        aging_passes: aging.passes,
        steady: aging.steady,
        final_window_waf: aging.final_window_waf.unwrap_or(0.0),
        throughput_mb_s: timed.read_mb_s + timed.write_mb_s,
        write_p99_us: p99(timed.latency.write.as_ref()),
        flush_p99_us: p99(timed.latency.flush.as_ref()),
    })
}

fn p99(latency: Option<&LatencySummary>) -> f64 {
    latency.map_or(0.0, |latency| latency.p99_us)
}

/// One point at one ρ and victim policy over its captures: the ratios
/// separated / mixed of each capture.
struct Verdict {
    point: String,
    rho: f64,
    victim: String,
    wa_ratios: Vec<f64>,
    throughput_ratios: Vec<f64>,
    gc_wa_ratios: Vec<f64>,
    mixed_pblk_wa: Vec<f64>,
    separated_pblk_wa: Vec<f64>,
    padding_share: Vec<f64>,
    /// The least any of its replays reached before measuring.
    journal_wraps: f64,
    device_writes: f64,
    /// Every replay's aging ended steady.
    steady: bool,
}

/// Mean, low and high of a sample.
fn spread(values: &[f64]) -> (f64, f64, f64) {
    let mean = values.iter().sum::<f64>() / f64_of(values.len().max(1));
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, low, high)
}

fn format_spread(values: &[f64]) -> String {
    let (mean, low, high) = spread(values);
    format!("{mean:.3} [{low:.3}–{high:.3}]")
}

impl Verdict {
    /// The paper's claim at this point: WA ratio ≤ 0.67 and throughput
    /// ratio ≥ 1.46 (means), each range excluding 1.0.
    fn reasons_not(&self) -> Vec<String> {
        let (wa, wa_low, wa_high) = spread(&self.wa_ratios);
        let (tp, tp_low, tp_high) = spread(&self.throughput_ratios);
        let mut reasons = Vec::new();
        if wa > PAPER_WA_RATIO {
            reasons.push(format!("WA ratio {wa:.2} > {PAPER_WA_RATIO}"));
        }
        if wa_low <= 1.0 && wa_high >= 1.0 {
            reasons.push("WA range includes 1.0".to_owned());
        }
        if tp < PAPER_THROUGHPUT_RATIO {
            reasons.push(format!("throughput ratio {tp:.2} < {PAPER_THROUGHPUT_RATIO}"));
        }
        if tp_low <= 1.0 && tp_high >= 1.0 {
            reasons.push("throughput range includes 1.0".to_owned());
        }
        reasons
    }
}

fn verdicts(rows: &[Row]) -> Vec<Verdict> {
    let mut verdicts: Vec<Verdict> = Vec::new();
    for mixed in rows.iter().filter(|row| !row.separated) {
        let Some(separated) = rows.iter().find(|row| {
            row.separated
                && row.point == mixed.point
                && row.sample == mixed.sample
                && row.over_provisioning == mixed.over_provisioning
                && row.victim == mixed.victim
        }) else {
            continue;
        };
        let index = verdicts.iter().position(|verdict| {
            verdict.point == mixed.point && verdict.rho == mixed.over_provisioning && verdict.victim == mixed.victim
        });
        let index = index.unwrap_or_else(|| {
            verdicts.push(Verdict {
                point: mixed.point.clone(),
                rho: mixed.over_provisioning,
                victim: mixed.victim.clone(),
                wa_ratios: Vec::new(),
                throughput_ratios: Vec::new(),
                gc_wa_ratios: Vec::new(),
                mixed_pblk_wa: Vec::new(),
                separated_pblk_wa: Vec::new(),
                padding_share: Vec::new(),
                journal_wraps: f64::INFINITY,
                device_writes: f64::INFINITY,
                steady: true,
            });
            verdicts.len() - 1
        });
        let verdict = &mut verdicts[index];
        verdict.wa_ratios.push(separated.pblk_wa / mixed.pblk_wa);
        verdict.gc_wa_ratios.push(separated.gc_wa / mixed.gc_wa);
        verdict.throughput_ratios.push(separated.throughput_mb_s / mixed.throughput_mb_s);
        verdict.mixed_pblk_wa.push(mixed.pblk_wa);
        verdict.separated_pblk_wa.push(separated.pblk_wa);
        verdict.padding_share.push(separated.padding_share);
        for row in [mixed, separated] {
            verdict.journal_wraps = verdict.journal_wraps.min(row.aging_journal_wraps);
            verdict.device_writes = verdict.device_writes.min(row.aging_device_writes);
            verdict.steady &= row.steady;
        }
    }
    verdicts
}

/// Grouped bars: one group per point, one bar per series of `pick`, ranges as error bars.
fn ratio_chart(title: &str, verdicts: &[&Verdict], axis: &str, pick: fn(&Verdict) -> &[f64]) -> BarChart {
    let groups = verdicts.iter().map(|verdict| verdict.point.clone()).collect();
    let spreads: Vec<(f64, f64, f64)> = verdicts.iter().map(|verdict| spread(pick(verdict))).collect();
    BarChart::new(title, groups, Axis::new(axis)).with(
        BarSeries::new("separated / mixed (mean of captures)", spreads.iter().map(|(mean, _, _)| *mean).collect())
            .ranges(spreads.iter().map(|(_, low, high)| (*low, *high)).collect()),
    )
}

fn write_results(out: &Path, scale: &Scale, rows: &[Row], samples: usize, args: &ExperimentArgs) -> Result<()> {
    let dir = OutputDir::create(out)?;
    dir.write_csv("journal_separation.csv", rows)?;
    dir.write_json("journal_separation.json", rows)?;
    let verdicts = verdicts(rows);
    let mut summary = Summary::new("Journal separation in a host-level FTL (open-channel SSD)");
    summary.paragraph(&format!(
        "Son and Ahn 2021 separate the ext4 journal from other data in pblk and report WAF down by more than 33 % \
         and I/O performance up 46-50 % (fio, Filebench; QEMU OCSSD). Here: ext4 on a {} loop device made with \
         `mkfs.ext4 -b 4096` (the mkfs command line is in each trace header), filled to {FILL_PERCENT} % with files, \
         then the workload writing about {}x the file system; {samples} captures per point. Each trace is replayed \
         on the open-channel device (2 groups x 4 PUs, 2 MiB lines, ws_min 4 / ws_opt 8 pages, FEMU timing) aged \
         by workload aging: the whole capture once, then its workload part looped until, at the end of a pass, \
         the windowed WAF is steady (3 windows of 1/4 device write each within 5 %, counted once the device's \
         physical pages were written), or 40 device writes were spent; the aging's GC debt is then paid and one \
         pass of the workload part is measured, closed loop at the workload's queue depth. WA is pblk's (user + gc + pad) \
         / user. A point reproduces the claim when the mean WA ratio (separated / mixed) is ≤ {PAPER_WA_RATIO} and \
         the mean throughput ratio ≥ {PAPER_THROUGHPUT_RATIO}, with both ranges over the captures excluding 1.0.",
        scale.fs_size, scale.device_writes
    ));
    if !args.set.is_empty() {
        summary.paragraph(&format!(
            "Part of the {} matrix, chosen with{}.",
            if args.paper_scale { "paper-scale" } else { "quick" },
            Selection::arguments(&args.set)
        ));
    }
    let table: Vec<Vec<String>> = verdicts
        .iter()
        .map(|verdict| {
            let reasons = verdict.reasons_not();
            vec![
                verdict.point.clone(),
                format!("{}", verdict.rho),
                verdict.victim.clone(),
                format_spread(&verdict.mixed_pblk_wa),
                format_spread(&verdict.separated_pblk_wa),
                format_spread(&verdict.wa_ratios),
                format_spread(&verdict.gc_wa_ratios),
                format_spread(&verdict.throughput_ratios),
                format!("{:.1}", 100.0 * spread(&verdict.padding_share).0),
                format!("{:.1} / {:.0}", verdict.device_writes, verdict.journal_wraps),
                if verdict.steady { "yes" } else { "no" }.to_owned(),
                if reasons.is_empty() { "reproduces".to_owned() } else { format!("no: {}", reasons.join("; ")) },
            ]
        })
        .collect();
    let reproduced = verdicts.iter().filter(|verdict| verdict.reasons_not().is_empty()).count();
    summary.paragraph(&format!("{reproduced} of {} points reproduce the claim.", verdicts.len())).table(
        &[
            "point",
            "ρ",
            "victim",
            "WA mixed",
            "WA separated",
            "WA ratio",
            "GC-only WA ratio",
            "throughput ratio",
            "padding % (sep.)",
            "aged: device writes / journal wraps",
            "steady",
            "verdict (paper: ratio ≤ 0.67, ≥ 1.46)",
        ],
        &table,
    );
    for rho in OVER_PROVISIONING {
        let greedy: Vec<&Verdict> =
            verdicts.iter().filter(|verdict| verdict.rho == rho && verdict.victim == "greedy").collect();
        if greedy.is_empty() {
            continue;
        }
        let percent = rho * 100.0;
        let wa =
            ratio_chart(&format!("pblk WA, separated / mixed, ρ = {rho}, greedy"), &greedy, "WA ratio", |verdict| {
                &verdict.wa_ratios
            })
            .level("paper: −33 % (0.67)", PAPER_WA_RATIO)
            .level("no change (1.0)", 1.0);
        let name = format!("wa_ratio_op{percent:.0}.svg");
        dir.write_bar_chart(&name, &wa)?;
        summary.image(&format!("WA ratio at ρ = {rho}"), &name);
        let throughput = ratio_chart(
            &format!("throughput, separated / mixed, ρ = {rho}, greedy"),
            &greedy,
            "throughput ratio",
            |verdict| &verdict.throughput_ratios,
        )
        .level("paper: +46 % (1.46)", PAPER_THROUGHPUT_RATIO)
        .level("no change (1.0)", 1.0);
        let name = format!("throughput_ratio_op{percent:.0}.svg");
        dir.write_bar_chart(&name, &throughput)?;
        summary.image(&format!("throughput ratio at ρ = {rho}"), &name);
    }
    let per_class: Vec<Vec<String>> = rows
        .iter()
        .filter(|row| row.sample == 0 && row.victim == "greedy")
        .map(|row| {
            vec![
                row.point.clone(),
                format!("{}", row.over_provisioning),
                if row.separated { "separated" } else { "mixed" }.to_owned(),
                format!("{:.1}", 100.0 * row.journal_share),
                format!("{:.3}", row.pblk_wa),
                format!("{:.3}", row.gc_wa),
                row.gc_copies_data.to_string(),
                row.gc_copies_journal.to_string(),
                row.padded_data_queue.to_string(),
                row.padded_journal_queue.to_string(),
                row.user_stalls.to_string(),
                format!("{:.1}", row.throughput_mb_s),
                format!("{:.0}", row.flush_p99_us),
            ]
        })
        .collect();
    summary
        .heading("Per class (first capture, greedy)")
        .paragraph(
            "GC copies per true class of the page and padding per write queue: mixed, every flush pads the one \
             data line's partial unit; separated, a flush pads the data queue's and the journal queue's partial \
             units apart (pblk pads each open line's write unit to ws_opt).",
        )
        .table(
            &[
                "point",
                "ρ",
                "placement",
                "journal %",
                "pblk WA",
                "GC WA",
                "GC copies data",
                "GC copies journal",
                "pad data queue",
                "pad journal queue",
                "user stalls",
                "MB/s",
                "flush p99 us",
            ],
            &per_class,
        )
        .code(
            "sh",
            &format!(
                "nandlab reproduce journal --seed {} --out DIR{}{}{}   # as root: captures into DIR/traces first",
                args.seed,
                if args.paper_scale { " --paper-scale" } else { "" },
                args.repeats.map_or_else(String::new, |repeats| format!(" --repeats {repeats}")),
                Selection::arguments(&args.set)
            ),
        );
    dir.write_summary(&summary)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! On a real capture: ext4 on a loop device with a workload that fsyncs,
    //! so jbd2 commits land in the trace. Needs root and loop devices; without
    //! them it prints `SKIPPED: <reason>`. The capture's guards clean up; the
    //! test removes its trace and image directory even when it fails.

    use super::*;
    use crate::replay::{replay, ReplayMode};
    use crate::Interrupt;
    use nandlab_capture::fsload::FileOps;
    use nandlab_capture::{capture, CaptureConfig, Workload};
    use nandlab_core::config::ConfigBuilder;
    use nandlab_core::host::classify::{Classifier, ClassifierKind, WriteInfo};
    use nandlab_trace::host::{host_event, journal_sectors};
    use nandlab_trace::journal::JournalTracker;
    use nandlab_trace::{Op, ReadOptions};

    /// Removes the test's trace and image directory on drop.
    struct Scratch {
        trace: PathBuf,
        images: PathBuf,
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.trace);
            let _ = std::fs::remove_dir_all(&self.images);
        }
    }

    fn skip_reason() -> Option<&'static str> {
        if !nix_is_root() {
            return Some("not root");
        }
        if !Path::new("/dev/loop-control").exists() {
            return Some("no /dev/loop-control");
        }
        None
    }

    fn nix_is_root() -> bool {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                status
                    .lines()
                    .find(|line| line.starts_with("Uid:"))
                    .map(|line| line.split_whitespace().nth(1) == Some("0"))
            })
            .unwrap_or(false)
    }

    /// 24 MiB of 64 KiB files, each fsynced, rewritten twice over.
    fn fsync_workload(root: &Path) -> std::io::Result<()> {
        let ops = FileOps::new(root, 5, true);
        for round in 0..3 {
            for file in 0..128 {
                ops.create(&format!("f{file}"), 64 << 10)?;
                if round == 2 && file % 2 == 0 {
                    ops.delete(&format!("f{file}"))?;
                }
            }
        }
        Ok(())
    }

    fn capture_small(name: &str) -> Option<(Scratch, nandlab_capture::CaptureReport)> {
        if let Some(reason) = skip_reason() {
            eprintln!("SKIPPED: {reason}");
            return None;
        }
        let scratch = Scratch {
            trace: std::env::temp_dir().join(format!("nandlab-journal-test-{}-{name}.nlt", std::process::id())),
            images: PathBuf::from(format!("/dev/shm/nandlab-journal-test-{}-{name}", std::process::id())),
        };
        std::fs::create_dir_all(&scratch.images).expect("/dev/shm is writable");
        let config = CaptureConfig {
            file_system: "ext4".to_owned(),
            size_bytes: 64 << 20,
            mount_options: String::new(),
            mkfs_options: Vec::new(),
            image_dir: scratch.images.clone(),
            output: scratch.trace.clone(),
            buffer_kib_per_cpu: 4096,
        };
        let report = capture(&config, Workload::InProcess(Box::new(|root: &Path| fsync_workload(root))), &mut |line| {
            eprintln!("{line}")
        })
        .expect("capture runs as root");
        assert_eq!(report.exit_code, Some(0), "the workload succeeds");
        Some((scratch, report))
    }

    /// A replay on a fresh device (no aging), closed loop.
    fn replay_fresh(path: &Path, mut config: Config) -> Report {
        open_channel_closed_loop(&mut config).expect("valid open-channel configuration");
        let mode = ReplayMode { fit: true, timed: Some(Arrival::Closed), ..ReplayMode::default() };
        replay(&TraceSource::file(path), config, mode, &mut Interrupt::default()).expect("replays")
    }

    fn small_config(separate: bool) -> Config {
        let mut builder = ConfigBuilder::preset("small").expect("preset exists");
        builder.set(&format!("pblk.separate={separate}")).expect("valid key");
        builder.set("pblk.write_buffer_pages=64").expect("valid key");
        builder.set("host.classifier=\"journal\"").expect("valid key");
        builder.build().expect("valid configuration").0
    }

    /// A replay's row with the given WA and throughput; the rest plausible.
    fn row_with(separated: bool, sample: usize, pblk_wa: f64, throughput_mb_s: f64) -> Row {
        Row {
            point: "fio fsync=1 data=ordered j=default".to_owned(),
            sample,
            over_provisioning: 0.11,
            victim: "greedy".to_owned(),
            separated,
            queue_depth: 4,
            host_pages_written: 1000,
            device_writes: 1.0,
            journal_share: 0.1,
            journal_wraps: 2.0,
            pblk_wa,
            gc_wa: pblk_wa,
            device_waf: pblk_wa,
            padding_share: 0.0,
            gc_copies_data: 0,
            gc_copies_journal: 0,
            padded_data_queue: 0,
            padded_journal_queue: 0,
            gc_lines: 1,
            user_stalls: 0,
            mixed_lines_closed: 0,
            aging_device_writes: 12.0,
            aging_journal_wraps: 60.0,
            aging_passes: 3,
            steady: true,
            final_window_waf: 2.0,
            throughput_mb_s,
            write_p99_us: 1.0,
            flush_p99_us: 1.0,
        }
    }

    #[test]
    fn results_are_written_with_a_verdict_per_point() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let args = ExperimentArgs { out: dir.path().to_path_buf(), ..ExperimentArgs::default() };
        // Capture 0 reproduces the claim, capture 1 does not: the point does not.
        let rows = vec![
            row_with(false, 0, 3.0, 10.0),
            row_with(true, 0, 1.5, 20.0),
            row_with(false, 1, 3.0, 10.0),
            row_with(true, 1, 3.3, 9.0),
        ];
        let verdicts = verdicts(&rows);
        assert_eq!(verdicts.len(), 1);
        assert_eq!(verdicts[0].wa_ratios.len(), 2);
        assert!((verdicts[0].wa_ratios[1] - 1.1).abs() < 1e-12);
        assert!(verdicts[0].reasons_not().contains(&"WA range includes 1.0".to_owned()));
        write_results(dir.path(), &scale(false), &rows, 2, &args).expect("results written");
        let csv = std::fs::read_to_string(dir.path().join("journal_separation.csv")).expect("CSV");
        assert!(csv.lines().next().is_some_and(|header| header.contains("aging_journal_wraps")), "{csv}");
        assert_eq!(csv.lines().count(), 5);
        let summary = std::fs::read_to_string(dir.path().join("summary.md")).expect("summary");
        assert!(summary.contains("0 of 1 points reproduce the claim"), "{summary}");
    }

    fn selected(set: &[&str], paper: bool) -> Result<(Selection, Scale)> {
        let set: Vec<String> = set.iter().map(|assignment| (*assignment).to_owned()).collect();
        let selection = Selection::parse(&set)?;
        let scale = selection.apply(scale(paper))?;
        Ok((selection, scale))
    }

    #[test]
    fn set_keys_choose_the_journal_size_sweep_at_paper_scale() {
        let (selection, scale) =
            selected(&["points=fio fsync=1 data=ordered", "victims=greedy", "capture_writes=4"], true).expect("valid");
        let journals: Vec<Option<u32>> = scale.points.iter().map(|point| point.journal_mib).collect();
        assert_eq!(journals, [None, Some(16), Some(64), Some(256)]);
        assert!(scale.points.iter().all(|point| point.load == Load::Fio { fsync: 1, libaio: false }));
        assert_eq!(scale.device_writes, 4);
        assert!(selection.takes(&GREEDY) && !selection.takes(&COST_BENEFIT) && !selection.takes(&GREEDY_LOG_AWARE));
        let (everything, full) = selected(&[], true).expect("no keys");
        assert_eq!(full.points.len(), 18);
        assert_eq!(full.device_writes, 10);
        assert!(everything.takes(&GREEDY_LOG_AWARE));
        let (_, two) = selected(&["points=varmail, j=64MiB"], true).expect("two parts");
        assert_eq!(two.points.len(), 4, "varmail and the 64 MiB journal, in both modes");
    }

    #[test]
    fn bad_set_values_are_refused_naming_the_key() {
        for (assignment, expected) in [
            ("points=fio fsync=7", "points"),
            ("victims=lru", "lru"),
            ("capture_writes=0", "capture_writes"),
            ("capture_writes=101", "capture_writes"),
            ("capture_writes=four", "capture_writes"),
            ("journal=16", "points, victims, capture_writes"),
        ] {
            let error = selected(&[assignment], false).err().expect(assignment).to_string();
            assert!(error.contains(expected), "{assignment}: {error}");
        }
        // The quick scale has no journal sweep.
        assert!(selected(&["points=j=16MiB"], false).is_err());
    }

    #[test]
    fn traces_of_different_scales_and_lengths_have_different_names() {
        let point = scale(false).points[0];
        let (_, short) = selected(&["capture_writes=2"], false).expect("valid");
        let names =
            [scale(false).trace_name(&point, 0), scale(true).trace_name(&point, 0), short.trace_name(&point, 0)];
        assert_eq!(names[0], "fio-fsync-1-data-ordered-j-default-256M-4x-0.nlt");
        assert!(names[0] != names[1] && names[0] != names[2] && names[1] != names[2], "{names:?}");
    }

    #[test]
    fn classifier_tags_writes_into_the_journal_as_journal_and_the_rest_as_data() {
        let Some((scratch, report)) = capture_small("classify") else { return };
        let journal = journal_sectors(&report.header.journal, &report.header);
        assert!(!journal.is_empty(), "capture located the ext4 journal");
        let mut classifier = Classifier::from_kind(ClassifierKind::Journal, &journal, None).expect("two classes");
        let journal_class = classifier.class_named("journal").expect("journal class");
        let trace = nandlab_trace::open(&scratch.trace, None, &ReadOptions::default()).expect("trace reads");
        let header = trace.header().clone();
        let (mut journal_writes, mut data_writes) = (0, 0);
        let mut tracker = JournalTracker::new(&header);
        for record in trace {
            let record = record.expect("record decodes");
            let event = host_event(&record, &header, &mut tracker);
            if record.op != Op::Write {
                continue;
            }
            let class = classifier.classify(&WriteInfo {
                sectors: event.sectors,
                journal_thread: event.journal_thread,
                flags: event.flags,
            });
            // jbd2 also writes ordered data of other inodes under data=ordered: data, by where it lands.
            if header.is_journal(record.start, record.len) {
                journal_writes += 1;
                assert_eq!(class, journal_class, "write into the journal at sector {} is journal", record.start.0);
            } else {
                data_writes += 1;
                assert_ne!(
                    class,
                    journal_class,
                    "write at sector {} by {} is data",
                    record.start.0,
                    record.process.as_str()
                );
            }
        }
        assert!(journal_writes > 0, "the fsync workload makes jbd2 write");
        assert!(data_writes > 0, "and the files' data reach the device");
    }

    #[test]
    fn with_separation_no_line_holds_journal_and_data() {
        let Some((scratch, _)) = capture_small("lines") else { return };
        let mixed = replay_fresh(&scratch.trace, small_config(false));
        let separated = replay_fresh(&scratch.trace, small_config(true));
        let (mixed_lines, separated_lines) =
            (mixed.open_channel.as_ref().expect("pblk"), separated.open_channel.as_ref().expect("pblk"));
        assert!(mixed_lines.pblk.lines_closed > 2 && separated_lines.pblk.lines_closed > 2, "the trace fills lines");
        assert!(
            mixed_lines.pblk.mixed_lines_closed + mixed_lines.mixed_lines_open as u64 > 0,
            "without separation journal and data share lines"
        );
        assert_eq!(separated_lines.pblk.mixed_lines_closed, 0);
        assert_eq!(separated_lines.mixed_lines_open, 0);
        assert_eq!(mixed.measured.counters.host_pages_written, separated.measured.counters.host_pages_written);
    }
}
