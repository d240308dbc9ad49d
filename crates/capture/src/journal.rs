//! Where ext3/ext4 keep their journal: the extents of the journal inode
//! (inode 8), read with `debugfs -R "stat <8>"` and converted to 512-byte
//! sectors for the trace header (issue 6's journal/data separation and
//! Delay-D's commit detection both need it).

use crate::error::CaptureError;
use crate::system::{require_tool, run_tool};
use nandlab_trace::{Sector, SectorRange, LINUX_SECTOR_BYTES};

const JOURNAL_INODE: &str = "stat <8>";

/// The journal's sector ranges and the file-system block size, or `None`
/// for a file system without an ext journal.
pub(crate) fn ext_journal(file_system: &str, device: &str) -> Result<Option<(Vec<SectorRange>, u32)>, CaptureError> {
    if !matches!(file_system, "ext3" | "ext4") {
        return Ok(None);
    }
    let dumpe2fs = require_tool("dumpe2fs", Some("e2fsprogs"))?;
    let debugfs = require_tool("debugfs", Some("e2fsprogs"))?;
    let superblock = run_tool("reading the superblock", &dumpe2fs, &["-h", device])?;
    let block_size = superblock
        .lines()
        .find_map(|line| line.strip_prefix("Block size:"))
        .and_then(|value| value.trim().parse::<u32>().ok())
        .ok_or_else(|| CaptureError::Argument(format!("dumpe2fs -h {device} printed no `Block size:`")))?;
    let inode = run_tool("locating the journal", &debugfs, &["-R", JOURNAL_INODE, device])?;
    let extents = parse_extents(&inode).map_err(CaptureError::Argument)?;
    let sectors_per_block = u64::from(block_size / LINUX_SECTOR_BYTES);
    let ranges = extents
        .into_iter()
        .map(|(first, count)| SectorRange { start: Sector(first * sectors_per_block), len: count * sectors_per_block })
        .collect();
    Ok(Some((ranges, block_size)))
}

/// Physical extents `(first block, block count)` from debugfs' `EXTENTS:`
/// section: `(0-8191):131072-139263, (8192):200000`, skipping the extent
/// tree's own index blocks (`(ETB0):…`), merging physically adjacent ones.
fn parse_extents(stat: &str) -> Result<Vec<(u64, u64)>, String> {
    let section = stat
        .split_once("EXTENTS:")
        .map(|(_, rest)| rest)
        .ok_or("debugfs printed no EXTENTS: section for the journal inode")?;
    let mut extents: Vec<(u64, u64)> = Vec::new();
    for item in section.split([',', '\n']).map(str::trim).filter(|item| !item.is_empty()) {
        let Some((logical, physical)) = item.split_once("):") else {
            return Err(format!("unexpected extent `{item}`"));
        };
        if logical.starts_with("(ETB") {
            continue;
        }
        let number = |text: &str| text.trim().parse::<u64>().map_err(|_| format!("unexpected extent `{item}`"));
        let (first, last) = match physical.split_once('-') {
            Some((first, last)) => (number(first)?, number(last)?),
            None => (number(physical)?, number(physical)?),
        };
        match extents.last_mut() {
            Some((previous_first, previous_count)) if *previous_first + *previous_count == first => {
                *previous_count += last - first + 1
            }
            _ => extents.push((first, last - first + 1)),
        }
    }
    if extents.is_empty() {
        return Err("the journal inode has no extents".into());
    }
    Ok(extents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debugfs_extents_parse_and_merge() {
        let stat = "Inode: 8   Type: regular\nSize of extra inode fields: 32\nEXTENTS:\n(0-8191):131072-139263\n";
        assert_eq!(parse_extents(stat), Ok(vec![(131_072, 8192)]));
        let split = "EXTENTS:\n(ETB0):5000, (0-1023):6000-7023, (1024-2047):7024-8047, (2048):9000\n";
        assert_eq!(parse_extents(split), Ok(vec![(6000, 2048), (9000, 1)]));
        assert!(parse_extents("Inode: 8\n").is_err());
        assert!(parse_extents("EXTENTS:\n(0-1):x-y\n").is_err());
    }
}
