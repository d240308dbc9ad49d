//! Issue 14's checks of the journal classifier and of separation against
//! the ground truth, on raw tracefs captures made without the nandlab
//! header (echo to /sys/kernel/tracing; scripts/capture-raw-uav.sh), each
//! stored with what `dumpe2fs -h` and `debugfs -R "stat <8>"` said about
//! the journal right after:
//! - `crates/trace/tests/data/ext4-loop-discard-fsync.*`: 1 GiB ext4, 2,500
//!   fsynced 64 KiB files;
//! - `tests/data/uav-single-ext4-1g-discard.*`: 1 GiB ext4, Delay-D's UAV
//!   single-erase scenario.
//!
//! The classifier sees what a replay of such a trace sees: the journal
//! region inferred from the trace as it streams by (no header names it).
//! The truth is the journal inode's extents.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::journal_facts;
use nandlab_core::config::ConfigBuilder;
use nandlab_core::device::Geometry;
use nandlab_core::host::classify::{ClassId, Classifier, ClassifierKind, WriteInfo};
use nandlab_core::host::event::{HostEvent, HostOp};
use nandlab_core::host::pblk::{Pblk, PblkConfig};
use nandlab_core::units::Lpn;
use nandlab_trace::host::host_event;
use nandlab_trace::journal::{infer_region, JournalTracker};
use nandlab_trace::{open, ReadOptions, SectorRange};
use std::path::{Path, PathBuf};

/// 512-byte sectors per 4 KiB page.
const PAGE_SECTORS: u64 = 8;

struct Capture {
    trace: PathBuf,
    facts: PathBuf,
}

fn captures() -> [Capture; 2] {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let trace_data = root.join("../trace/tests/data");
    let lab_data = root.join("tests/data");
    [
        Capture {
            trace: trace_data.join("ext4-loop-discard-fsync.tracefs.gz"),
            facts: trace_data.join("ext4-loop-discard-fsync.journal.txt"),
        },
        Capture {
            trace: lab_data.join("uav-single-ext4-1g-discard.tracefs.gz"),
            facts: lab_data.join("uav-single-ext4-1g-discard.journal.txt"),
        },
    ]
}

/// Every request of a raw capture as a replay sees it, with the journal
/// classifier's label (journal region estimated as the trace streams by).
fn classified_events(trace: &Path) -> (Vec<(HostEvent, ClassId)>, ClassId) {
    let records = open(trace, None, &ReadOptions::default()).unwrap();
    let header = records.header().clone();
    assert!(header.journal.is_empty(), "{}: no header names the journal", trace.display());
    let mut tracker = JournalTracker::new(&header);
    let mut classifier = Classifier::from_kind(ClassifierKind::Journal, &[], None).unwrap();
    let journal = classifier.class_named("journal").unwrap();
    let events = records
        .map(|record| {
            let event = host_event(&record.unwrap(), &header, &mut tracker);
            let label = classifier.classify(&WriteInfo {
                sectors: event.sectors,
                journal_thread: event.journal_thread,
                flags: event.flags,
            });
            (event, label)
        })
        .collect();
    (events, journal)
}

fn in_journal(extents: &[SectorRange], sector: u64) -> bool {
    extents.iter().any(|range| (range.start.0..range.start.0 + range.len).contains(&sector))
}

#[test]
fn the_journal_region_inferred_from_each_trace_is_what_dumpe2fs_and_debugfs_say() {
    for capture in captures() {
        let facts = journal_facts(&capture.facts);
        let (region, wraps) = infer_region(open(&capture.trace, None, &ReadOptions::default()).unwrap()).unwrap();
        assert_eq!(region, facts.extents, "{}", capture.trace.display());
        assert_eq!(region.iter().map(|range| range.len).sum::<u64>(), facts.total_sectors, "dumpe2fs's journal size");
        assert!(wraps >= 1, "{}: the log wrapped, so the region is whole", capture.trace.display());
    }
}

#[test]
fn the_journal_classifier_tags_99_percent_of_the_journal_regions_pages_and_1_percent_at_most_elsewhere() {
    for capture in captures() {
        let facts = journal_facts(&capture.facts);
        let (events, journal) = classified_events(&capture.trace);
        let (mut region, mut region_tagged, mut other, mut other_tagged) = (0_u64, 0_u64, 0_u64, 0_u64);
        for (event, label) in events.iter().filter(|(event, _)| event.op == HostOp::Write) {
            let tagged = u64::from(*label == journal);
            for sector in (event.sectors.start..event.sectors.end).step_by(PAGE_SECTORS as usize) {
                if in_journal(&facts.extents, sector) {
                    region += 1;
                    region_tagged += tagged;
                } else {
                    other += 1;
                    other_tagged += tagged;
                }
            }
        }
        let name = capture.trace.display();
        eprintln!(
            "{name}: journal region {region_tagged} of {region} pages tagged; elsewhere {other_tagged} of {other}"
        );
        assert!(region > 1000, "{name}: the capture writes its journal");
        assert!(region_tagged * 100 >= region * 99, "{name}: {region_tagged} of {region} journal pages tagged");
        assert!(other_tagged * 100 <= other, "{name}: {other_tagged} of {other} other pages tagged journal");
    }
}

/// A pblk on a 1 GiB device (the captures' size), lines of 64-page chunks.
fn pblk(separate: bool) -> (Pblk, ClassId) {
    let mut builder = ConfigBuilder::preset("small").unwrap();
    builder.set("device.pages_per_block=64").unwrap();
    builder.set("pblk.write_buffer_pages=256").unwrap();
    let config = builder.build().unwrap().0;
    let geometry = Geometry::from_config(&config.device.fitted_to(1 << 30).unwrap()).unwrap();
    let pblk_config = PblkConfig { separate, write_buffer_pages: 256, ..PblkConfig::default() };
    pblk_config.validate(&geometry).unwrap();
    let journal = ClassId(1);
    (Pblk::new(&geometry, &pblk_config, 2).unwrap().with_log_class(Some(journal)), journal)
}

/// Lines whose valid pages lie both inside and outside the journal inode's extents.
fn lines_mixing_journal_and_data(pblk: &Pblk, extents: &[SectorRange]) -> Vec<u32> {
    (0..pblk.line_count())
        .filter(|&line| {
            let mut truths =
                pblk.valid_pages_of_line(line).map(|lpn| in_journal(extents, u64::from(lpn.0) * PAGE_SECTORS));
            truths.next().is_some_and(|first| truths.any(|truth| truth != first))
        })
        .collect()
}

/// Replays the capture's requests on `pblk` with the classifier's labels;
/// `check` sees it every `every` writes and at the end.
fn replay(pblk: &mut Pblk, events: &[(HostEvent, ClassId)], every: u64, check: &mut dyn FnMut(&Pblk, u64)) {
    let mut writes = 0;
    for (event, label) in events {
        let (first, end) = (event.sectors.start / PAGE_SECTORS, event.sectors.end.div_ceil(PAGE_SECTORS));
        if event.flags.preflush {
            pblk.flush().unwrap();
        }
        match event.op {
            HostOp::Write => {
                for lpn in first..end {
                    pblk.write(Lpn(u32::try_from(lpn).unwrap()), *label).unwrap();
                    writes += 1;
                    if writes % every == 0 {
                        check(pblk, writes);
                    }
                }
            }
            HostOp::Discard => {
                // Whole pages only, as pblk's discard does.
                let (whole_first, whole_end) =
                    (event.sectors.start.div_ceil(PAGE_SECTORS), event.sectors.end / PAGE_SECTORS);
                if whole_end > whole_first {
                    let pages = u32::try_from(whole_end - whole_first).unwrap();
                    pblk.trim(Lpn(u32::try_from(whole_first).unwrap()), pages).unwrap();
                }
            }
            HostOp::Flush => pblk.flush().unwrap(),
            HostOp::Read => {}
        }
        if event.flags.fua {
            pblk.flush().unwrap();
        }
    }
    pblk.flush().unwrap();
    check(pblk, writes);
}

#[test]
fn with_separation_no_line_ever_holds_valid_journal_and_data_pages_by_the_file_systems_own_extents() {
    for capture in captures() {
        let facts = journal_facts(&capture.facts);
        let (events, journal) = classified_events(&capture.trace);
        let name = capture.trace.display();
        let (mut separated, journal_class) = pblk(true);
        assert_eq!(journal_class, journal);
        replay(&mut separated, &events, 499, &mut |pblk, writes| {
            assert_eq!(
                lines_mixing_journal_and_data(pblk, &facts.extents),
                Vec::<u32>::new(),
                "{name} after {writes} page writes"
            );
        });
        assert!(separated.stats().lines_closed > 4, "{name}: the capture fills lines");
        let (mut mixed, _) = pblk(false);
        let mut ever_mixed = false;
        replay(&mut mixed, &events, 499, &mut |pblk, _| {
            ever_mixed |= !lines_mixing_journal_and_data(pblk, &facts.extents).is_empty();
        });
        assert!(ever_mixed, "{name}: the check can fail: stock pblk puts journal and data pages in one line");
    }
}
