//! The `nandlab` command line as a library: the `nandlab` binary and the
//! Python package's `nandlab` console script both run [`run_command_line`].
//! Glue only: every command parses its arguments and calls into the library
//! crates, where the work lives.

mod commands;
mod output;
mod shared;

use clap::{Parser, Subcommand};

/// nandlab — a fast, deterministic NAND flash SSD simulator and emulator.
///
/// Start with `nandlab run`: it simulates a preconditioned random-write
/// workload on the `femu-32g` preset and prints a summary. `nandlab presets`
/// lists the embedded device set-ups; `docs/configuration.md` documents every
/// configuration key.
#[derive(Parser)]
#[command(name = "nandlab", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a workload on a device (default: preconditioned random writes on femu-32g).
    Run(commands::run::RunArgs),
    /// List the embedded presets, or print one as TOML.
    Presets(commands::presets::PresetsArgs),
    /// Benchmark the simulator's write path (host page writes per second, memory per page).
    Bench(commands::bench::BenchArgs),
    /// Durable hybrid RAM disk (DHRD): serve a RAM disk mirrored to a durable file over FUSE.
    Dhrd(commands::dhrd::DhrdArgs),
    /// A live emulated SSD: mount it (DIR/disk) or export it over NBD, run real software on it,
    /// watch its statistics (`emulate status DIR`), get the replay report at stop.
    Emulate(commands::emulate::EmulateArgs),
    /// How long a device lasts at W GB/day with a workload, forecast from a short run.
    Lifetime(commands::lifetime::LifetimeArgs),
    /// Telomere admission control: admit or reject a periodic task set.
    Admit(commands::admit::AdmitArgs),
    /// Replay a block trace on the simulated SSD under a DISCARD policy.
    Replay(commands::replay::ReplayArgs),
    /// Which mechanism saves this trace's flash? Every DISCARD policy, streams, journal
    /// separation and priority cleaning that apply, replayed and ranked by years of life.
    Advise(commands::advise::AdviseArgs),
    /// Reproduce a paper experiment into an output folder (data, plots, summary).
    Reproduce(commands::reproduce::ReproduceArgs),
    /// Inspect and convert block I/O traces.
    Trace(commands::trace::TraceArgs),
    /// Capture a block trace of a real Linux file system on a loop device.
    Capture(commands::capture::CaptureArgs),
    /// File-system workloads to run under `capture` (UAV scenarios, Postmark, Filebench-like).
    Fsload(commands::fsload::FsloadArgs),
}

/// Runs the command line `args` (the program name first) and returns the
/// process exit status: 0 on success, [`REFUSED_INPUT`] for input refused
/// before running (clap's usage errors included), 1 for any other failure.
/// Help, version and errors are printed here; nothing calls
/// `std::process::exit` on the way, so a host process (Python) keeps running.
pub fn run_command_line<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    output::end_quietly_on_failed_printing();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            // Printing help or an error to a closed pipe has nothing left to tell.
            let _ = error.print();
            return u8::try_from(error.exit_code()).unwrap_or(REFUSED_INPUT);
        }
    };
    let result = match cli.command {
        Command::Run(args) => commands::run::run(args),
        Command::Presets(args) => commands::presets::run(args),
        Command::Bench(args) => commands::bench::run(args),
        Command::Dhrd(args) => commands::dhrd::run(args),
        Command::Emulate(args) => commands::emulate::run(args),
        Command::Lifetime(args) => commands::lifetime::run(args),
        Command::Admit(args) => commands::admit::run(args),
        Command::Replay(args) => commands::replay::run(args),
        Command::Advise(args) => commands::advise::run(args),
        Command::Reproduce(args) => commands::reproduce::run(args),
        Command::Trace(args) => commands::trace::run(args),
        Command::Capture(args) => commands::capture::run(args),
        Command::Fsload(args) => commands::fsload::run(args),
    };
    match result {
        Ok(()) => 0,
        Err(error) if output::is_broken_pipe(&error) => 0,
        Err(error) => {
            eprintln!("error: {}", nandlab_quote::error_message(error.as_ref()));
            if is_refused_input(&error) {
                REFUSED_INPUT
            } else {
                1
            }
        }
    }
}

/// Exit status of input refused before (or instead of) running: a
/// configuration key out of its range, a replay that would take no
/// request. clap's usage errors exit with the same status.
pub const REFUSED_INPUT: u8 = 2;

/// Whether `error` refuses the input: a configuration key (named in the
/// message), or input the command cannot use.
fn is_refused_input(error: &anyhow::Error) -> bool {
    use nandlab_core::SimError;
    use nandlab_lab::Error;
    error.chain().any(|cause| {
        cause.is::<nandlab_core::ConfigError>()
            || cause.is::<nandlab_core::config::fio::FioError>()
            || matches!(cause.downcast_ref::<SimError>(), Some(SimError::Config(_)))
            || matches!(
                cause.downcast_ref::<Error>(),
                Some(Error::Config(_) | Error::Invalid(_) | Error::Simulation(SimError::Config(_)))
            )
    })
}
