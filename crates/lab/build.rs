//! Records the git commit nandlab is built from (`NANDLAB_GIT_COMMIT`, with
//! `-dirty` for uncommitted changes; `unknown` outside a git checkout), for
//! the provenance of every report.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|status| !status.is_empty());
    println!("cargo:rustc-env=NANDLAB_GIT_COMMIT={commit}{}", if dirty { "-dirty" } else { "" });
    for path in ["HEAD", "index"] {
        if let Some(file) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
}
