//! `nandlab`: the command-line front end (the command line itself lives in
//! the library, `src/lib.rs`, which the Python package's console script runs too).

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(nandlab_cli::run_command_line(std::env::args_os()))
}
