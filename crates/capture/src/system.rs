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
    let command_line = || std::iter::once(program.display().to_string()).chain(args.iter().map(|arg| (*arg).to_owned())).collect::<Vec<_>>().join(" ");
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

/// `4G`, `512M`, `100k`, `4096`: binary multiples, as `truncate` reads them.
pub fn parse_size(text: &str) -> Result<u64, CaptureError> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, suffix) = text.split_at(split);
    let shift = match suffix.trim_end_matches(['B', 'b']).trim_end_matches(['i']) {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        "t" | "T" => 40,
        _ => return Err(CaptureError::Argument(format!("size `{text}`: unknown unit `{suffix}` (use K, M, G or T)"))),
    };
    let value: u64 = digits.parse().map_err(|_| CaptureError::Argument(format!("size `{text}` does not start with a number")))?;
    value.checked_mul(1 << shift).ok_or_else(|| CaptureError::Argument(format!("size `{text}` is too large")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_truncate() {
        assert_eq!(parse_size("4G").ok(), Some(4 << 30));
        assert_eq!(parse_size("512MiB").ok(), Some(512 << 20));
        assert_eq!(parse_size("4096").ok(), Some(4096));
        assert!(parse_size("4Q").is_err());
        assert!(parse_size("G").is_err());
    }
}
