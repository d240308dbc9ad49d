//! `nandlab-dhrd-fuse`: the DHRD FUSE daemon on its own (same flags as `nandlab dhrd serve`); the
//! crash test kills it with SIGKILL.

use clap::Parser;

#[derive(Parser)]
#[command(name = "nandlab-dhrd-fuse", about = "Serve a DHRD (durable hybrid RAM disk) over FUSE")]
struct Cli {
    #[command(flatten)]
    serve: nandlab_fuse::ServeArgs,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match nandlab_fuse::serve(&cli.serve) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("nandlab-dhrd-fuse: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}
