//! The UAV image-store scenarios of Delay-D (§2.2 and §4.1): the device is
//! first filled to 50 % with dummy files; then
//!
//! * **batch-erase**: N files of 1 MiB are created one by one, then all
//!   deleted at once (images backed up after a flight); repeated R times;
//! * **single-erase**: N files are created, then K times the oldest file is
//!   deleted and a new one created (a full store during flight).
//!
//! The paper uses N = 10,000, R = 50 and K = 500,000 on a 32 GB device
//! ([`UavConfig::paper`]). [`UavConfig::scaled`] keeps the paper's ratio of
//! image data to device size (10,000 MiB / 32 GB) on a smaller file system
//! and shortens R and K so a capture takes minutes. Each image is written
//! and fsync'ed, as a camera application storing durably does.

use super::{report_every_tenth, FileOps, Progress};
use std::collections::VecDeque;
use std::io;

const PAPER_FILES: u64 = 10_000;
const PAPER_DEVICE_BYTES: u64 = 32_000_000_000;
const PREFILL_FILE_BYTES: u64 = 64 << 20;
const DUMMY_DIR: &str = "dummy";
const IMAGE_DIR: &str = "images";

#[derive(Clone, Debug, PartialEq)]
pub struct UavConfig {
    /// N: images per round (batch) or kept on the store (single).
    pub files: u64,
    pub file_bytes: u64,
    /// R: batch-erase rounds.
    pub rounds: u64,
    /// K: single-erase replacements.
    pub replacements: u64,
    /// Fill the file system to this fraction with dummy files first.
    pub prefill_fraction: f64,
}

impl UavConfig {
    /// The paper's sizes (§4.1), meant for a 32 GB file system.
    pub fn paper() -> UavConfig {
        UavConfig { files: PAPER_FILES, file_bytes: 1 << 20, rounds: 50, replacements: 500_000, prefill_fraction: 0.5 }
    }

    /// The paper's proportions on a file system of `total_bytes`: N scaled
    /// with the size (at least 16), R = 5 and K = 5 N (a tenth of the
    /// paper's R = 50 and K = 50 N).
    pub fn scaled(total_bytes: u64) -> UavConfig {
        let files = (u128::from(PAPER_FILES) * u128::from(total_bytes) / u128::from(PAPER_DEVICE_BYTES)) as u64;
        let files = files.max(16);
        UavConfig { files, file_bytes: 1 << 20, rounds: 5, replacements: 5 * files, prefill_fraction: 0.5 }
    }

    /// The paper's proportions in full on a file system of `total_bytes`: N
    /// scaled as in [`UavConfig::scaled`], the paper's R = 50 and K = 50 N
    /// (the paper's 500,000 replacements overwrite its device about 17 times;
    /// so do these, whatever the size).
    pub fn paper_proportions(total_bytes: u64) -> UavConfig {
        let scaled = UavConfig::scaled(total_bytes);
        UavConfig { rounds: 50, replacements: 50 * scaled.files, ..scaled }
    }
}

/// Writes dummy files until the file system is `fraction` full, then syncs.
pub fn prefill(ops: &FileOps, fraction: f64, progress: Progress<'_>) -> io::Result<u64> {
    if fraction <= 0.0 {
        return Ok(0);
    }
    ops.mkdir(DUMMY_DIR)?;
    let (total, mut used) = ops.usage()?;
    let target = (total as f64 * fraction.min(0.95)) as u64;
    let mut files = 0u64;
    while used < target {
        let bytes = PREFILL_FILE_BYTES.min(target - used).max(4096);
        ops.create(&format!("{DUMMY_DIR}/{files:06}"), bytes)?;
        files += 1;
        used = ops.usage()?.1;
    }
    ops.sync_all();
    progress(&format!(
        "prefill: {files} dummy files, {:.0} % of {} MiB used",
        used as f64 * 100.0 / total as f64,
        total >> 20
    ));
    Ok(files)
}

fn image_name(serial: u64) -> String {
    format!("{IMAGE_DIR}/img{serial:08}.jpg")
}

pub fn batch_erase(ops: &FileOps, config: &UavConfig, progress: Progress<'_>) -> io::Result<()> {
    prefill(ops, config.prefill_fraction, progress)?;
    ops.mkdir(IMAGE_DIR)?;
    for round in 0..config.rounds {
        for index in 0..config.files {
            ops.create(&image_name(index), config.file_bytes)?;
        }
        for index in 0..config.files {
            ops.delete(&image_name(index))?;
        }
        report_every_tenth(progress, "batch-erase rounds", round + 1, config.rounds);
    }
    ops.sync_all();
    Ok(())
}

pub fn single_erase(ops: &FileOps, config: &UavConfig, progress: Progress<'_>) -> io::Result<()> {
    prefill(ops, config.prefill_fraction, progress)?;
    ops.mkdir(IMAGE_DIR)?;
    let mut stored = VecDeque::with_capacity(config.files as usize);
    for serial in 0..config.files {
        ops.create(&image_name(serial), config.file_bytes)?;
        stored.push_back(serial);
    }
    progress(&format!("single-erase: {} images stored", config.files));
    for replacement in 0..config.replacements {
        if let Some(oldest) = stored.pop_front() {
            ops.delete(&image_name(oldest))?;
        }
        let serial = config.files + replacement;
        ops.create(&image_name(serial), config.file_bytes)?;
        stored.push_back(serial);
        report_every_tenth(progress, "single-erase replacements", replacement + 1, config.replacements);
    }
    ops.sync_all();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsload::tests::scratch;

    #[test]
    fn scaled_sizes_keep_the_papers_proportion() {
        assert_eq!(UavConfig::scaled(32_000_000_000).files, 10_000);
        let small = UavConfig::scaled(4 << 30);
        assert_eq!(small.files, 1342);
        assert_eq!(small.replacements, 5 * 1342);
        assert_eq!(UavConfig::scaled(1 << 20).files, 16);
        let full = UavConfig::paper_proportions(4 << 30);
        assert_eq!((full.files, full.rounds, full.replacements), (1342, 50, 50 * 1342));
    }

    #[test]
    fn single_erase_keeps_the_newest_n_images() {
        let root = scratch("single");
        let ops = FileOps::new(&root, 1, false);
        let config = UavConfig { files: 4, file_bytes: 4096, rounds: 1, replacements: 6, prefill_fraction: 0.0 };
        single_erase(&ops, &config, &mut |_| {}).expect("runs");
        let mut names: Vec<String> = std::fs::read_dir(root.join(IMAGE_DIR))
            .expect("dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["img00000006.jpg", "img00000007.jpg", "img00000008.jpg", "img00000009.jpg"]);
        batch_erase(&ops, &UavConfig { files: 3, ..config }, &mut |_| {}).expect("runs");
        let _ = std::fs::remove_dir_all(root);
    }
}
