//! Running the system tools capture relies on (util-linux, e2fsprogs, the
//! file systems' mkfs), with errors that name the tool, the package that
//! ships it and what it printed.

use crate::error::CaptureError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where a tool lives on `PATH` (plus the sbin directories, which a
/// non-login root shell may lack).
pub(crate) fn find_tool(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|directory| directory.join(tool))
        .find(|candidate| candidate.is_file())
}

pub(crate) fn require_tool(tool: &str, package: Option<&'static str>) -> Result<PathBuf, CaptureError> {
    find_tool(tool).ok_or_else(|| CaptureError::MissingTool { tool: tool.to_owned(), package })
}

/// Runs a tool to completion; its stdout on success.
pub(crate) fn run_tool(step: &'static str, program: &Path, args: &[&str]) -> Result<String, CaptureError> {
    let command_line = || {
        std::iter::once(program.display().to_string())
            .chain(args.iter().map(|arg| (*arg).to_owned()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let output = Command::new(program).args(args).output().map_err(|error| CaptureError::Tool {
        step,
        command: command_line(),
        status: "could not start".into(),
        stderr: error.to_string(),
    })?;
    if !output.status.success() {
        return Err(CaptureError::Tool {
            step,
            command: command_line(),
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
