//! Postmark (J. Katcher, NetApp TR-3022): many small files created, deleted,
//! read and appended in transactions — the workload of the informed-cleaning
//! experiment (slides 21-24 report pages moved at 5K-8K transactions).
//!
//! Debian ships Postmark 1.53 (`postmark`); with [`Engine::Auto`] it is used
//! when installed, configured through a command file. [`run_builtin`] is an
//! equivalent for machines without it, following Postmark's algorithm:
//!
//! 1. create `files` files, sizes uniform in `[min_size, max_size]`, spread
//!    over `subdirectories`;
//! 2. `transactions` times: read a random file whole (probability
//!    `bias_read`/10) or append a random amount in the size range to one;
//!    then create a new file (probability `bias_create`/10) or delete a
//!    random one;
//! 3. delete every remaining file.
//!
//! Postmark itself never calls fsync; neither does the equivalent.

use super::{report_every_tenth, FileOps, Progress};
use std::io;
use std::path::Path;
use std::process::Command;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Debian's `postmark` if on PATH, else the built-in equivalent.
    Auto,
    Debian,
    Builtin,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostmarkConfig {
    pub files: u64,
    pub transactions: u64,
    pub min_size: u64,
    pub max_size: u64,
    pub read_block: u64,
    pub write_block: u64,
    pub subdirectories: u64,
    /// Out of 10: share of reads among read/append.
    pub bias_read: u64,
    /// Out of 10: share of creates among create/delete.
    pub bias_create: u64,
    pub seed: u64,
}

impl Default for PostmarkConfig {
    /// Postmark's own defaults (500 B - 9.77 KiB files, 512 B blocks, even
    /// biases) with the transaction count of the slides' largest point.
    fn default() -> PostmarkConfig {
        PostmarkConfig {
            files: 2000,
            transactions: 8000,
            min_size: 500,
            max_size: 10_000,
            read_block: 512,
            write_block: 512,
            subdirectories: 10,
            bias_read: 5,
            bias_create: 5,
            seed: 42,
        }
    }
}

/// Runs Postmark in `root`; returns which engine ran.
pub fn run(root: &Path, config: &PostmarkConfig, engine: Engine, progress: Progress<'_>) -> io::Result<&'static str> {
    let debian = crate::system::find_tool("postmark");
    match (engine, debian) {
        (Engine::Debian | Engine::Auto, Some(binary)) => {
            run_debian(&binary, root, config)?;
            Ok("postmark (Debian)")
        }
        (Engine::Debian, None) => {
            Err(io::Error::new(io::ErrorKind::NotFound, "postmark is not installed (apt-get install postmark)"))
        }
        (Engine::Auto | Engine::Builtin, _) => {
            run_builtin(&mut FileOps::new(root, config.seed, false), config, progress)?;
            Ok("built-in Postmark equivalent")
        }
    }
}

fn run_debian(binary: &Path, root: &Path, config: &PostmarkConfig) -> io::Result<()> {
    // The command file lives outside the traced file system.
    let script_path = std::env::temp_dir().join(format!("nandlab-postmark-{}.pmrc", std::process::id()));
    let script = format!(
        "set location {}\nset number {}\nset transactions {}\nset size {} {}\nset read {}\nset write {}\nset subdirectories {}\nset bias read {}\nset bias create {}\nset seed {}\nset buffering false\nrun\nquit\n",
        root.display(),
        config.files,
        config.transactions,
        config.min_size,
        config.max_size,
        config.read_block,
        config.write_block,
        config.subdirectories,
        config.bias_read,
        config.bias_create,
        config.seed
    );
    std::fs::write(&script_path, script)?;
    let status = Command::new(binary).arg(&script_path).current_dir(root).status();
    let _ = std::fs::remove_file(&script_path);
    let status = status?;
    if !status.success() {
        return Err(io::Error::other(format!("{} exited with {status}", binary.display())));
    }
    Ok(())
}

pub fn run_builtin(ops: &mut FileOps, config: &PostmarkConfig, progress: Progress<'_>) -> io::Result<()> {
    let subdirectories = config.subdirectories.max(1);
    for directory in 0..subdirectories {
        ops.mkdir(&format!("s{directory}"))?;
    }
    let mut live: Vec<String> = Vec::with_capacity(config.files as usize);
    let mut serial = 0u64;
    let mut create = |ops: &mut FileOps, live: &mut Vec<String>| -> io::Result<()> {
        let name = format!("s{}/pm{serial}", ops.uniform(0, subdirectories - 1));
        serial += 1;
        let size = ops.uniform(config.min_size, config.max_size);
        ops.create(&name, size)?;
        live.push(name);
        Ok(())
    };
    for _ in 0..config.files {
        create(ops, &mut live)?;
    }
    progress(&format!("postmark: {} files created", config.files));
    for transaction in 0..config.transactions {
        if !live.is_empty() {
            let target = live[ops.uniform(0, live.len() as u64 - 1) as usize].clone();
            if ops.uniform(0, 9) < config.bias_read {
                ops.read_whole(&target, config.read_block as usize)?;
            } else {
                let bytes = ops.uniform(config.min_size, config.max_size);
                ops.append(&target, bytes)?;
            }
        }
        if live.is_empty() || ops.uniform(0, 9) < config.bias_create {
            create(ops, &mut live)?;
        } else {
            let victim = ops.uniform(0, live.len() as u64 - 1) as usize;
            ops.delete(&live.swap_remove(victim))?;
        }
        report_every_tenth(progress, "postmark transactions", transaction + 1, config.transactions);
    }
    for name in live.drain(..) {
        ops.delete(&name)?;
    }
    for directory in 0..subdirectories {
        let path = ops.path(&format!("s{directory}"));
        std::fs::remove_dir(&path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsload::tests::scratch;

    #[test]
    fn the_builtin_engine_leaves_the_directory_as_it_found_it() {
        let root = scratch("postmark");
        let config = PostmarkConfig { files: 50, transactions: 200, ..PostmarkConfig::default() };
        run(&root, &config, Engine::Builtin, &mut |_| {}).expect("runs");
        assert_eq!(std::fs::read_dir(&root).expect("dir").count(), 0);
        let _ = std::fs::remove_dir_all(root);
    }
}
