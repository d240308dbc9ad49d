//! Single-threaded equivalents of three Filebench personalities (Filebench
//! is not packaged for Debian): the same file operations in the same order
//! per iteration as the `.f` workload files, with Filebench's default sizes.
//! Filebench draws sizes from a gamma distribution around the mean; here
//! they are uniform in `[mean/2, 3 mean/2]` (same mean, seeded).
//!
//! * **fileserver** (`fileserver.f`, 10,000 files of 128 KiB): create and
//!   write a whole file, append 16 KiB to another, read a whole file,
//!   delete a file, stat a file;
//! * **varmail** (`varmail.f`, 1,000 files of 16 KiB, a mail server):
//!   delete, create + append + fsync, open + read + append + fsync, read;
//! * **webserver** (`webserver.f`, 1,000 files of 16 KiB): read 10 whole
//!   files, append 16 KiB to a log.

use super::{report_every_tenth, FileOps, Progress};
use std::io;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Personality {
    Fileserver,
    Varmail,
    Webserver,
}

impl Personality {
    pub fn name(self) -> &'static str {
        match self {
            Personality::Fileserver => "fileserver",
            Personality::Varmail => "varmail",
            Personality::Webserver => "webserver",
        }
    }

    /// Filebench's defaults: (files, mean file size).
    pub fn default_files_and_size(self) -> (u64, u64) {
        match self {
            Personality::Fileserver => (10_000, 128 << 10),
            Personality::Varmail | Personality::Webserver => (1_000, 16 << 10),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilebenchConfig {
    pub personality: Personality,
    pub files: u64,
    pub mean_file_bytes: u64,
    /// Appends are this large on average (Filebench: 16 KiB).
    pub mean_append_bytes: u64,
    /// Loop iterations of the personality's flow.
    pub iterations: u64,
}

impl FilebenchConfig {
    pub fn new(personality: Personality, iterations: u64) -> FilebenchConfig {
        let (files, mean_file_bytes) = personality.default_files_and_size();
        FilebenchConfig { personality, files, mean_file_bytes, mean_append_bytes: 16 << 10, iterations }
    }
}

fn around(ops: &mut FileOps, mean: u64) -> u64 {
    ops.uniform(mean / 2, mean + mean / 2)
}

fn file_name(index: u64) -> String {
    format!("bigfileset/f{index:07}")
}

pub fn run(ops: &mut FileOps, config: &FilebenchConfig, progress: Progress<'_>) -> io::Result<()> {
    ops.mkdir("bigfileset")?;
    let files = config.files.max(2);
    let mut present = vec![true; files as usize];
    for index in 0..files {
        let size = around(ops, config.mean_file_bytes);
        ops.create(&file_name(index), size)?;
    }
    ops.sync_all();
    progress(&format!("{}: {files} files preallocated", config.personality.name()));
    for iteration in 0..config.iterations {
        match config.personality {
            Personality::Fileserver => fileserver_flow(ops, config, &mut present)?,
            Personality::Varmail => varmail_flow(ops, config, &mut present)?,
            Personality::Webserver => webserver_flow(ops, config, &present)?,
        }
        report_every_tenth(progress, config.personality.name(), iteration + 1, config.iterations);
    }
    Ok(())
}

/// A random index whose file exists (`want = true`) or does not.
fn pick(ops: &mut FileOps, present: &[bool], want: bool) -> Option<u64> {
    let len = present.len() as u64;
    let start = ops.uniform(0, len - 1);
    (0..len).map(|offset| (start + offset) % len).find(|&index| present[index as usize] == want)
}

fn fileserver_flow(ops: &mut FileOps, config: &FilebenchConfig, present: &mut [bool]) -> io::Result<()> {
    if let Some(index) = pick(ops, present, false) {
        let size = around(ops, config.mean_file_bytes);
        ops.create(&file_name(index), size)?;
        present[index as usize] = true;
    }
    if let Some(index) = pick(ops, present, true) {
        let size = around(ops, config.mean_append_bytes);
        ops.append(&file_name(index), size)?;
    }
    if let Some(index) = pick(ops, present, true) {
        ops.read_whole(&file_name(index), 1 << 20)?;
    }
    if let Some(index) = pick(ops, present, true) {
        ops.delete(&file_name(index))?;
        present[index as usize] = false;
    }
    if let Some(index) = pick(ops, present, true) {
        ops.stat(&file_name(index))?;
    }
    Ok(())
}

fn varmail_flow(ops: &mut FileOps, config: &FilebenchConfig, present: &mut [bool]) -> io::Result<()> {
    let fsync = std::mem::replace(&mut ops.fsync, true);
    let result = (|| {
        if let Some(index) = pick(ops, present, true) {
            ops.delete(&file_name(index))?;
            present[index as usize] = false;
        }
        if let Some(index) = pick(ops, present, false) {
            let size = around(ops, config.mean_append_bytes);
            ops.append(&file_name(index), size)?;
            present[index as usize] = true;
        }
        if let Some(index) = pick(ops, present, true) {
            ops.read_whole(&file_name(index), 1 << 20)?;
            let size = around(ops, config.mean_append_bytes);
            ops.append(&file_name(index), size)?;
        }
        if let Some(index) = pick(ops, present, true) {
            ops.read_whole(&file_name(index), 1 << 20)?;
        }
        Ok(())
    })();
    ops.fsync = fsync;
    result
}

fn webserver_flow(ops: &mut FileOps, config: &FilebenchConfig, present: &[bool]) -> io::Result<()> {
    for _ in 0..10 {
        if let Some(index) = pick(ops, present, true) {
            ops.read_whole(&file_name(index), 1 << 20)?;
        }
    }
    let size = around(ops, config.mean_append_bytes);
    ops.append("logfile", size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsload::tests::scratch;

    #[test]
    fn every_personality_runs_its_flow() {
        for personality in [Personality::Fileserver, Personality::Varmail, Personality::Webserver] {
            let root = scratch(personality.name());
            let mut ops = FileOps::new(&root, 3, false);
            let config = FilebenchConfig { files: 20, mean_file_bytes: 8192, ..FilebenchConfig::new(personality, 30) };
            run(&mut ops, &config, &mut |_| {}).expect("runs");
            let _ = std::fs::remove_dir_all(root);
        }
    }
}
