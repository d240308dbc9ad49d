//! `nandlab emulate mark DIR`: starts a new measured phase on the emulated SSD served on DIR, so
//! what came before (e.g. `mkfs`) is reported apart from the session's workload (issue 26). The
//! command signals the daemon (SIGUSR1 to the pid in DIR/stats, which only its user may send) and
//! waits until DIR/stats shows the mark; the daemon's side is [`mark_requests`] and
//! [`print_before_marks`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use nandlab_emulate::MarkedPhase;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The signal that asks a running `nandlab emulate` for a mark.
const MARK_SIGNAL: Signal = Signal::SIGUSR1;

/// How often the command looks at DIR/stats while it waits for the mark.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

#[derive(clap::Args, Debug)]
pub struct MarkArgs {
    /// The mount point the device is served on (its --mount DIR).
    dir: PathBuf,
    /// Give up waiting for the daemon after this many seconds.
    #[arg(long, default_value_t = 10)]
    wait_s: u64,
}

/// Asks the daemon serving `args.dir` for a mark and prints the phase it ended.
pub fn run(args: &MarkArgs) -> anyhow::Result<()> {
    let stats = read_stats(&args.dir)?;
    let Some(marks) = stats["before_marks"].as_array().map(Vec::len) else {
        anyhow::bail!("{} is not served by `nandlab emulate` (its stats have no marks)", args.dir.display());
    };
    if stats["daemon_stop_requested"].as_bool() == Some(true) {
        anyhow::bail!("the emulated SSD on {} is stopping: no mark", args.dir.display());
    }
    let pid = stats["daemon_pid"]
        .as_i64()
        .and_then(|pid| i32::try_from(pid).ok())
        .with_context(|| format!("{}: no daemon pid", args.dir.display()))?;
    kill(Pid::from_raw(pid), MARK_SIGNAL).with_context(|| format!("signalling daemon {pid}"))?;
    let started = Instant::now();
    loop {
        let stats = read_stats(&args.dir)?;
        if let Some(phase) = stats["before_marks"].as_array().and_then(|marks_now| marks_now.get(marks)) {
            let phase: MarkedPhaseText = serde_json::from_value(phase.clone())?;
            println!("emulate mark: mark {} after {} requests; before it: {}", marks + 1, phase.requests, phase);
            return Ok(());
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(args.wait_s),
            "daemon {pid} did not take the mark within {} s",
            args.wait_s
        );
        std::thread::sleep(POLL_INTERVAL);
    }
}

fn read_stats(dir: &Path) -> anyhow::Result<serde_json::Value> {
    let path = dir.join(nandlab_fuse::STATS_FILE_NAME);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!("reading {} (is `nandlab emulate --mount {}` running?)", path.display(), dir.display())
    })?;
    serde_json::from_str(&text).with_context(|| format!("{} is not an emulated SSD's statistics", path.display()))
}

/// The counts of a marked phase as DIR/stats shows them.
#[derive(serde::Deserialize)]
struct MarkedPhaseText {
    requests: u64,
    measured: PhaseCounts,
}

#[derive(serde::Deserialize)]
struct PhaseCounts {
    host_pages_written: u64,
    flash_pages_programmed: u64,
    gc_page_copies: u64,
    erases: u64,
    waf: Option<f64>,
}

impl std::fmt::Display for MarkedPhaseText {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let phase = &self.measured;
        write!(
            out,
            "{} host pages written, {} flash pages programmed, {} GC copies, {} erases, WAF {}",
            phase.host_pages_written,
            phase.flash_pages_programmed,
            phase.gc_page_copies,
            phase.erases,
            phase.waf.map_or_else(|| "-".to_owned(), |waf| format!("{waf:.3}"))
        )
    }
}

/// The daemon's side: a flag set when a mark is asked for (SIGUSR1); the serving loop takes it.
pub fn mark_requests() -> anyhow::Result<Arc<AtomicBool>> {
    let requested = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(MARK_SIGNAL as i32, Arc::clone(&requested)).context("registering SIGUSR1")?;
    Ok(requested)
}

/// The stop report's lines for the phases the marks ended, before the summary of the phase
/// after the last mark.
pub fn print_before_marks(marks: &[MarkedPhase]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for (index, phase) in marks.iter().enumerate() {
        let text = MarkedPhaseText {
            requests: phase.requests,
            measured: PhaseCounts {
                host_pages_written: phase.measured.counters.host_pages_written,
                flash_pages_programmed: phase.measured.counters.flash_pages_programmed,
                gc_page_copies: phase.measured.counters.gc_page_copies,
                erases: phase.measured.counters.erases,
                waf: phase.measured.waf,
            },
        };
        writeln!(out, "before mark {} (at request {}): {text}", index + 1, phase.requests)?;
    }
    Ok(())
}
