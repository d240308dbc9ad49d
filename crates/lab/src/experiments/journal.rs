//! `nandlab reproduce journal`: journal/data separation in a host-level FTL
//! (Son and Ahn, "Optimizing Garbage Collection Overhead of Host-level Flash
//! Translation Layer for Journaling Filesystems", 2021). Fio and
//! Filebench-like workloads run on real ext4 (`data=ordered` and
//! `data=journal`) through `nandlab capture`; each trace is replayed on the
//! open-channel device under the pblk-like host FTL, mixed and separated, at
//! two over-provisioning levels. Writes a table, plots and `summary.md`.

use crate::error::{Context as _, Result};
use crate::registry::ExperimentArgs;
use crate::replay::{replay, ReplayMode, TraceSource};
use crate::shared::{capture_cached, config_from, nandlab_binary, CaptureSpec};
use crate::{Observer, Report};
use nandlab_core::ftl::LayerKind;
use nandlab_core::timing::{Arrival, LatencySummary};
use nandlab_core::Config;
use nandlab_report::{Axis, BarChart, BarReference, BarSeries, Comparison, OutputDir, Summary};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Size of the captured file system and of the simulated device's logical space.
const FS_SIZE: &str = "256M";
/// pblk's default over-provisioning (`PBLK_DEFAULT_OP`, 11 %) and a roomier device.
const OVER_PROVISIONING: [f64; 2] = [0.11, 0.25];
const DATA_MODES: [&str; 2] = ["ordered", "journal"];
/// `fresh`: the device starts erased, so blocks ext4 never wrote are spare
/// space to it. `aged`: every logical page is written once first, as a
/// drive that held data before and got no DISCARD since.
const DEVICE_STATES: [(&str, bool); 2] = [("fresh", false), ("aged", true)];
/// The paper's two classes, and the generalisations run besides (separated,
/// fresh device, first ρ only).
const CLASSIFIER: &str = "journal";
const MORE_CLASSIFIERS: [&str; 2] = ["journal-metadata", "journal-hot-cold"];

/// The experiment device: 2 groups x 4 PUs, 64-page chunks (256 KiB), so a
/// line is 2 MiB; FEMU's timing from the `femu-32g` preset.
const DEVICE: &str = "
preset = \"femu-32g\"
[device]
channels = 2
chips_per_channel = 4
pages_per_block = 64
blocks_per_plane = 64
";

struct Job {
    name: &'static str,
    /// The workload command; `{exe}` is this binary, `{fio}` the job file.
    argv: &'static [&'static str],
    /// Run `sync` every 200 ms beside it: the personality never fsyncs, and
    /// 24 GiB of page cache would otherwise keep its writes off the device.
    periodic_sync: bool,
}

const FIO_JOB: &str = "[randwrite-fsync]
filename=fiofile
size=128m
bs=4k
rw=randwrite
ioengine=psync
fsync=8
io_size=640m
randseed=1
";

const JOBS: &[Job] = &[
    Job { name: "fio-randwrite", argv: &["fio", "{fio}", "--output=/dev/null"], periodic_sync: false },
    Job {
        name: "fileserver",
        argv: &["{exe}", "fsload", "fileserver", "--iterations", "3000", "--files", "800"],
        periodic_sync: true,
    },
    Job { name: "varmail", argv: &["{exe}", "fsload", "varmail", "--iterations", "20000"], periodic_sync: false },
    Job { name: "webserver", argv: &["{exe}", "fsload", "webserver", "--iterations", "8000"], periodic_sync: true },
];

/// One replay: a trace at one over-provisioning, mixed or separated.
#[derive(Clone, Debug, Serialize)]
struct Row {
    workload: String,
    data_mode: String,
    device_state: String,
    classifier: String,
    over_provisioning: f64,
    separated: bool,
    host_pages_written: u64,
    journal_share: f64,
    flash_pages_programmed: u64,
    gc_page_copies: u64,
    gc_lines: u64,
    erases: u64,
    padded_pages: u64,
    metadata_pages: u64,
    mixed_lines_closed: u64,
    waf: f64,
    /// (host + GC copies) / host: GC's share of WAF alone.
    gc_waf: f64,
    throughput_mb_s: f64,
    p99_us: f64,
    write_p99_us: f64,
    flush_p99_us: f64,
}

pub fn run(args: &ExperimentArgs) -> Result<()> {
    let traces = args.out.join("traces");
    std::fs::create_dir_all(&traces).with_context(|| format!("creating {}", traces.display()))?;
    let mut rows = Vec::new();
    for job in JOBS {
        for mode in DATA_MODES {
            let trace = ensure_trace(job, mode, &traces, args.seed)?;
            for (state, age) in DEVICE_STATES {
                for rho in OVER_PROVISIONING {
                    for separate in [false, true] {
                        let placement = if separate { "separated" } else { "mixed" };
                        eprintln!(
                            "journal: replaying {} data={mode} on the {state} device at ρ = {rho}, {placement}",
                            job.name
                        );
                        let setting =
                            Setting { workload: job.name, mode, state, classifier: CLASSIFIER, rho, separate };
                        rows.push(replay_setting(&trace, &setting, age, args)?);
                    }
                }
            }
            for classifier in MORE_CLASSIFIERS {
                eprintln!("journal: replaying {} data={mode} on the fresh device, classes {classifier}", job.name);
                let setting = Setting {
                    workload: job.name,
                    mode,
                    state: "fresh",
                    classifier,
                    rho: OVER_PROVISIONING[0],
                    separate: true,
                };
                rows.push(replay_setting(&trace, &setting, false, args)?);
            }
        }
    }
    write_results(&args.out, &rows, args.seed)
}

fn replay_setting(trace: &Path, setting: &Setting<'_>, age: bool, args: &ExperimentArgs) -> Result<Row> {
    let config = experiment_config(setting, args.seed)?;
    row(setting, &replay_open_channel(trace, config, true, age, &mut args.watch.observer())?)
}

fn experiment_config(setting: &Setting<'_>, seed: u64) -> Result<Config> {
    let assignments = [
        format!("device.over_provisioning={}", setting.rho),
        format!("pblk.separate={}", setting.separate),
        format!("host.classifier=\"{}\"", setting.classifier),
        format!("seed={seed}"),
    ];
    config_from(DEVICE, &assignments)
}

/// Captures `job` on ext4 `data=mode` unless its trace exists already.
fn ensure_trace(job: &Job, mode: &str, traces: &Path, seed: u64) -> Result<PathBuf> {
    let name = format!("{}-{mode}.nlt", job.name);
    if traces.join(&name).exists() {
        eprintln!("journal: reusing {}", traces.join(&name).display());
        return Ok(traces.join(name));
    }
    let exe = nandlab_binary()?;
    let fio = traces.join("fio-randwrite.fio");
    std::fs::write(&fio, FIO_JOB).with_context(|| format!("writing {}", fio.display()))?;
    let mut argv: Vec<String> = job
        .argv
        .iter()
        .map(|arg| arg.replace("{exe}", &exe.display().to_string()).replace("{fio}", &fio.display().to_string()))
        .collect();
    if argv.first().is_some_and(|program| program == &exe.display().to_string()) {
        argv.extend(["--seed".to_owned(), seed.to_string()]);
    }
    if job.periodic_sync {
        let script = "\"$@\" & pid=$!; while kill -0 $pid 2>/dev/null; do sleep 0.2; sync; done; wait $pid";
        argv = ["sh", "-c", script, "sh"].iter().map(|arg| (*arg).to_owned()).chain(argv).collect();
    }
    let spec = CaptureSpec {
        name: &name,
        size: FS_SIZE,
        mount_options: &format!("data={mode}"),
        image_dir: Path::new("/dev/shm"),
        argv,
    };
    capture_cached(&spec, traces, "journal")
}

/// Replays a trace on the open-channel device under the pblk-like host FTL,
/// through the timing engine at queue depth 1 (each request issued when the
/// previous one completes, as `fio --ioengine=psync` does). `fit` scales the
/// device to the traced one; `age` fills it once first (a drive that held
/// data before and got no DISCARD since).
fn replay_open_channel(
    path: &Path,
    mut config: Config,
    fit: bool,
    age: bool,
    observer: &mut dyn Observer,
) -> Result<Report> {
    config.ftl.kind = LayerKind::OpenChannel;
    config.pblk.validate(&config.validate()?)?;
    config.timing.queue_depth = 1;
    config.timing.queues = 1;
    config.precondition.enabled = age;
    config.precondition.fill = true;
    config.precondition.overwrite = false;
    let mode = ReplayMode { policy: None, fit, timed: Some(Arrival::Closed), age_with: None };
    replay(&TraceSource::file(path), config, mode, observer)
}

/// What one replay varied.
struct Setting<'a> {
    workload: &'a str,
    mode: &'a str,
    state: &'a str,
    classifier: &'a str,
    rho: f64,
    separate: bool,
}

fn row(setting: &Setting<'_>, report: &Report) -> Result<Row> {
    let counters = &report.measured.counters;
    let pblk = &report.open_channel.as_ref().context("an open-channel replay reports its host FTL")?.pblk;
    let timed = report.timed.as_ref().context("the replay is timed")?;
    let journal = report.classes.iter().position(|class| class == "journal");
    let journal_pages = journal.and_then(|index| pblk.class_pages.get(index)).copied().unwrap_or(0);
    #[allow(clippy::cast_precision_loss)]
    let share = |part: u64, whole: u64| if whole == 0 { 0.0 } else { part as f64 / whole as f64 };
    Ok(Row {
        workload: setting.workload.to_owned(),
        data_mode: setting.mode.to_owned(),
        device_state: setting.state.to_owned(),
        classifier: setting.classifier.to_owned(),
        over_provisioning: setting.rho,
        separated: setting.separate,
        host_pages_written: counters.host_pages_written,
        journal_share: share(journal_pages, counters.host_pages_written),
        flash_pages_programmed: counters.flash_pages_programmed,
        gc_page_copies: counters.gc_page_copies,
        gc_lines: pblk.gc_lines,
        erases: counters.erases,
        padded_pages: pblk.padded_pages,
        metadata_pages: pblk.metadata_pages,
        mixed_lines_closed: pblk.mixed_lines_closed,
        waf: report.measured.waf.unwrap_or(0.0),
        gc_waf: 1.0 + share(counters.gc_page_copies, counters.host_pages_written),
        throughput_mb_s: timed.read_mb_s + timed.write_mb_s,
        p99_us: p99(timed.latency.all.as_ref()),
        write_p99_us: p99(timed.latency.write.as_ref()),
        flush_p99_us: p99(timed.latency.flush.as_ref()),
    })
}

fn p99(latency: Option<&LatencySummary>) -> f64 {
    latency.map_or(0.0, |latency| latency.p99_us)
}

/// Rows of the "more classes" table: WAF (GC copies) per placement.
fn more_classes(rows: &[Row]) -> Vec<Vec<String>> {
    let first = |row: &&Row| row.device_state == "fresh" && row.over_provisioning == OVER_PROVISIONING[0];
    let cell = |row: Option<&Row>| {
        row.map_or_else(|| "-".to_owned(), |row| format!("{:.3} ({})", row.waf, row.gc_page_copies))
    };
    rows.iter()
        .filter(first)
        .filter(|row| !row.separated)
        .map(|mixed| {
            let same = |classifier: &str| {
                rows.iter().filter(first).find(|row| {
                    row.separated
                        && row.classifier == classifier
                        && row.workload == mixed.workload
                        && row.data_mode == mixed.data_mode
                })
            };
            let mut cells =
                vec![mixed.workload.clone(), mixed.data_mode.clone(), cell(Some(mixed)), cell(same(CLASSIFIER))];
            cells.extend(MORE_CLASSIFIERS.iter().map(|classifier| cell(same(classifier))));
            cells
        })
        .collect()
}

/// Relative change of `pick` from mixed to separated, per (workload, mode, ρ).
fn changes(rows: &[Row], pick: fn(&Row) -> f64) -> Vec<(String, f64)> {
    rows.iter()
        .filter(|row| !row.separated)
        .filter_map(|mixed| {
            let separated = rows.iter().find(|row| {
                row.separated
                    && row.workload == mixed.workload
                    && row.data_mode == mixed.data_mode
                    && row.device_state == mixed.device_state
                    && row.over_provisioning == mixed.over_provisioning
            })?;
            let before = pick(mixed);
            (before > 0.0).then(|| (label(mixed, true), 100.0 * (pick(separated) / before - 1.0)))
        })
        .collect()
}

fn label(row: &Row, with_rho: bool) -> String {
    if with_rho {
        format!("{} data={} {} ρ={}", row.workload, row.data_mode, row.device_state, row.over_provisioning)
    } else {
        format!("{} {}", row.workload, row.data_mode)
    }
}

/// A plotted quantity: file stem, title, unit, how to read it off a row, and
/// the paper's claim as a factor on stock pblk's value with its legend text.
type Metric = (&'static str, &'static str, &'static str, fn(&Row) -> f64, Option<(f64, &'static str)>);

/// The abstract's claims, relative to stock pblk: WAF down by more than 33 %,
/// I/O performance up 46-50 %.
const PAPER_WAF_FACTOR: (f64, &str) = (0.67, "paper: WAF −33 % vs mixed");
const PAPER_THROUGHPUT_FACTOR: (f64, &str) = (1.46, "paper: throughput +46 % vs mixed");

fn write_results(out: &Path, all_rows: &[Row], seed: u64) -> Result<()> {
    let dir = OutputDir::create(out)?;
    dir.write_csv("journal_separation.csv", all_rows)?;
    dir.write_json("journal_separation.json", all_rows)?;
    let rows: Vec<Row> = all_rows.iter().filter(|row| row.classifier == CLASSIFIER).cloned().collect();
    let rows = rows.as_slice();
    let metrics: [Metric; 4] = [
        ("waf", "WAF", "", |row| row.waf, Some(PAPER_WAF_FACTOR)),
        ("gc_copies", "GC page copies", "pages", |row| row.gc_page_copies as f64, None),
        ("throughput", "throughput (QD1 replay)", "MB/s", |row| row.throughput_mb_s, Some(PAPER_THROUGHPUT_FACTOR)),
        ("p99", "p99 latency", "us", |row| row.p99_us, None),
    ];
    let mut summary = Summary::new("Journal separation in a host-level FTL (open-channel SSD)");
    summary.paragraph(
        "Son and Ahn 2021: pblk writes the ext4 journal and other data into different lines. Traces: ext4 on a \
         256 MiB loop device, data=ordered and data=journal, captured by `nandlab capture`. Device: open-channel, \
         2 groups x 4 PUs, 256 KiB chunks (2 MiB lines), ws_min 4 pages, FEMU timing, fresh or aged by one \
         sequential fill before the replay; greedy line GC below 4 free lines. Throughput and latency come from a closed-loop \
         queue-depth-1 replay on a per-PU clock (docs/journal-separation.md says what it models).",
    );
    for ((state, _), rho) in DEVICE_STATES.iter().flat_map(|state| OVER_PROVISIONING.map(|rho| (*state, rho))) {
        let at: Vec<&Row> =
            rows.iter().filter(|row| row.over_provisioning == rho && row.device_state == state).collect();
        let groups: Vec<String> = at.iter().filter(|row| !row.separated).map(|row| label(row, false)).collect();
        for (file, title, unit, pick, paper) in &metrics {
            let values = |separated: bool| -> Vec<f64> {
                at.iter().filter(|row| row.separated == separated).map(|row| pick(row)).collect()
            };
            let mut chart = BarChart::new(
                &format!("{title}, {state} device, ρ = {rho}"),
                groups.clone(),
                Axis::new(title).unit(unit),
            )
            .with(BarSeries::new("mixed (stock pblk)", values(false)))
            .with(BarSeries::new("journal separated", values(true)));
            if let Some((factor, legend)) = paper {
                let expected = values(false).iter().map(|mixed| mixed * factor).collect();
                chart = chart.reference(BarReference::new(legend, expected).on("journal separated"));
            }
            let name = format!("{file}_{state}_op{:.0}.svg", rho * 100.0);
            dir.write_bar_chart(&name, &chart)?;
            summary.image(&format!("{title}, {state} device, ρ = {rho}"), &name);
        }
    }
    let describe = |values: &[(String, f64)]| -> String {
        let mean = values.iter().map(|(_, change)| change).sum::<f64>() / values.len().max(1) as f64;
        let best = values
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or_else(String::new, |(at, change)| format!("; min {change:+.1} % ({at})"));
        let worst = values
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map_or_else(String::new, |(at, change)| format!("; max {change:+.1} % ({at})"));
        format!("mean {mean:+.1} %{best}{worst}")
    };
    let fresh: Vec<Row> = rows.iter().filter(|row| row.device_state == "fresh").cloned().collect();
    let aged: Vec<Row> = rows.iter().filter(|row| row.device_state == "aged").cloned().collect();
    summary.comparisons(&[
        Comparison {
            quantity: "WAF, separated vs mixed, fresh device".to_owned(),
            paper: "down by more than 33 %".to_owned(),
            measured: describe(&changes(&fresh, |row| row.waf)),
            note: "WAF counts host, GC, padding and line-metadata pages.".to_owned(),
        },
        Comparison {
            quantity: "WAF, separated vs mixed, aged device".to_owned(),
            paper: "down by more than 33 %".to_owned(),
            measured: describe(&changes(&aged, |row| row.waf)),
            note: "Every logical page valid at the start: ext4's free space is live data to the device.".to_owned(),
        },
        Comparison {
            quantity: "GC page copies, separated vs mixed, fresh device".to_owned(),
            paper: "(the cause of the WAF reduction)".to_owned(),
            measured: describe(&changes(&fresh, |row| row.gc_page_copies as f64)),
            note: "Padding at flushes is not a GC copy.".to_owned(),
        },
        Comparison {
            quantity: "throughput, separated vs mixed, fresh device".to_owned(),
            paper: "up 46-50 % (fio and Filebench)".to_owned(),
            measured: describe(&changes(&fresh, |row| row.throughput_mb_s)),
            note: "Simulated QD1 replay; the paper measured fio/Filebench on QEMU OCSSD.".to_owned(),
        },
        Comparison {
            quantity: "throughput, separated vs mixed, aged device".to_owned(),
            paper: "up 46-50 % (fio and Filebench)".to_owned(),
            measured: describe(&changes(&aged, |row| row.throughput_mb_s)),
            note: String::new(),
        },
    ]);
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                row.workload.clone(),
                row.data_mode.clone(),
                row.device_state.clone(),
                format!("{}", row.over_provisioning),
                if row.separated { "separated" } else { "mixed" }.to_owned(),
                row.host_pages_written.to_string(),
                format!("{:.1}", 100.0 * row.journal_share),
                format!("{:.3}", row.waf),
                format!("{:.3}", row.gc_waf),
                row.gc_page_copies.to_string(),
                row.gc_lines.to_string(),
                row.padded_pages.to_string(),
                row.mixed_lines_closed.to_string(),
                format!("{:.1}", row.throughput_mb_s),
                format!("{:.0}", row.p99_us),
            ]
        })
        .collect();
    summary
        .table(
            &[
                "workload",
                "ext4 data=",
                "device",
                "ρ",
                "placement",
                "host pages",
                "journal %",
                "WAF",
                "GC WAF",
                "GC copies",
                "GC lines",
                "padding",
                "mixed lines",
                "MB/s",
                "p99 us",
            ],
            &table,
        )
        .heading("More classes")
        .paragraph(
            "The classifier generalised (fresh device, first ρ, separated): `journal-metadata` adds a class for \
             REQ_META writes, `journal-hot-cold` one for pages written at least 4 times (counts halved every \
             logical-capacity writes). WAF and GC page copies against the mixed and two-class runs.",
        )
        .table(
            &["workload", "ext4 data=", "mixed", "journal", "journal-metadata", "journal-hot-cold"],
            &more_classes(all_rows),
        )
        .code(
            "sh",
            &format!("nandlab reproduce journal --seed {seed} --out DIR   # as root: captures into DIR/traces first"),
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
    use crate::replay::{host_event, journal_sectors};
    use crate::Interrupt;
    use nandlab_capture::fsload::FileOps;
    use nandlab_capture::{capture, CaptureConfig, Workload};
    use nandlab_core::config::ConfigBuilder;
    use nandlab_core::host::classify::{Classifier, ClassifierKind, WriteInfo};
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

    fn small_config(separate: bool) -> Config {
        let mut builder = ConfigBuilder::preset("small").expect("preset exists");
        builder.set(&format!("pblk.separate={separate}")).expect("valid key");
        builder.set("pblk.write_buffer_pages=64").expect("valid key");
        builder.set("host.classifier=\"journal\"").expect("valid key");
        builder.build().expect("valid configuration").0
    }

    #[test]
    fn classifier_tags_jbd2_writes_in_a_captured_trace_as_journal() {
        let Some((scratch, report)) = capture_small("classify") else { return };
        let journal = journal_sectors(&report.header.journal, &report.header);
        assert!(!journal.is_empty(), "capture located the ext4 journal");
        let mut classifier = Classifier::from_kind(ClassifierKind::Journal, &journal, None).expect("two classes");
        let journal_class = classifier.class_named("journal").expect("journal class");
        let trace = nandlab_trace::open(&scratch.trace, None, &ReadOptions::default()).expect("trace reads");
        let header = trace.header().clone();
        let (mut jbd2_writes, mut data_writes) = (0, 0);
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
            let in_journal = header.is_journal(record.start, record.len);
            if record.process.as_str().starts_with("jbd2/") {
                jbd2_writes += 1;
                assert_eq!(class, journal_class, "jbd2 write at sector {} is journal", record.start.0);
            } else if !in_journal {
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
        assert!(jbd2_writes > 0, "the fsync workload makes jbd2 write");
        assert!(data_writes > 0, "and the files' data reach the device");
    }

    #[test]
    fn with_separation_no_line_holds_journal_and_data() {
        let Some((scratch, _)) = capture_small("lines") else { return };
        let mixed = replay_open_channel(&scratch.trace, small_config(false), true, false, &mut Interrupt::default())
            .expect("replays");
        let separated = replay_open_channel(&scratch.trace, small_config(true), true, false, &mut Interrupt::default())
            .expect("replays");
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
