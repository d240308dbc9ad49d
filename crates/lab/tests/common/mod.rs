//! What a stored raw capture's `*.journal.txt` says about the ext4 journal:
//! `dumpe2fs -h`'s block size and journal blocks, `debugfs -R "stat <8>"`'s
//! extents of the journal inode (scripts/capture-raw-uav.sh writes them).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use nandlab_trace::{Sector, SectorRange};
use std::path::Path;

/// The journal as the file system described it after the capture.
pub struct JournalFacts {
    /// The journal inode's extents, in 512-byte sectors.
    pub extents: Vec<SectorRange>,
    /// `Total journal blocks` in 512-byte sectors.
    pub total_sectors: u64,
}

pub fn journal_facts(path: &Path) -> JournalFacts {
    let facts = std::fs::read_to_string(path).unwrap();
    let field = |name: &str| -> u64 {
        let value = facts.lines().find_map(|line| line.strip_prefix(name)).unwrap_or_else(|| panic!("{name}"));
        value.trim().parse().unwrap()
    };
    let sectors_per_block = field("Block size:") / 512;
    let extents = facts.lines().skip_while(|line| !line.starts_with("EXTENTS:")).nth(1).expect("EXTENTS:");
    let extents = extents
        .split(", ")
        .map(|extent| {
            let physical = extent.split_once("):").expect("(logical):physical").1;
            let (first, last) = physical.split_once('-').unwrap_or((physical, physical));
            let (first, last): (u64, u64) = (first.trim().parse().unwrap(), last.trim().parse().unwrap());
            SectorRange { start: Sector(first * sectors_per_block), len: (last - first + 1) * sectors_per_block }
        })
        .collect();
    JournalFacts { extents, total_sectors: field("Total journal blocks:") * sectors_per_block }
}
