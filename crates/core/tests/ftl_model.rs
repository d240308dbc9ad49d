//! Property tests: random write/trim/read sequences against an obviously
//! correct reference model (a set of mapped logical pages), on the page FTL
//! under every victim policy, pblk and WAO-GC, each layer's invariants
//! checked after every call.

mod common;

use nandlab_core::device::Geometry;
use nandlab_core::ftl::wao_gc::{WaoGcConfig, WaoGcFtl};
use nandlab_core::ftl::{CheckAfter, Checked, FtlError, PageFtl, TranslationLayer, VictimPolicy};
use nandlab_core::host::pblk::Pblk;
use nandlab_core::units::{Lpn, SimNs, StreamId};
use nandlab_core::Config;
use proptest::prelude::*;
use std::collections::BTreeSet;

#[derive(Clone, Debug)]
enum Operation {
    Write { lpn: u32, stream: u8 },
    Trim { lpn: u32, pages: u32 },
    Read { lpn: u32 },
}

fn operations(logical_pages: u32) -> impl Strategy<Value = Vec<Operation>> {
    let operation = prop_oneof![
        6 => (0..logical_pages, 0..2u8).prop_map(|(lpn, stream)| Operation::Write { lpn, stream }),
        1 => (0..logical_pages, 1..8u32).prop_map(move |(lpn, pages)| Operation::Trim { lpn, pages: pages.min(logical_pages - lpn) }),
        2 => (0..logical_pages).prop_map(|lpn| Operation::Read { lpn }),
    ];
    prop::collection::vec(operation, 1..1500)
}

/// A device of two units of 16 blocks holding 96 logical pages, in pages of `pages_per_block`.
fn tiny_config(pages_per_block: u32, overrides: &[&str]) -> (Config, Geometry) {
    let pages_per_block = format!("device.pages_per_block={pages_per_block}");
    let mut assignments = vec![
        "device.channels=1",
        "device.chips_per_channel=2",
        "device.blocks_per_plane=16",
        &pages_per_block,
        "device.logical_pages=96",
        "ftl.streams=2",
    ];
    assignments.extend_from_slice(overrides);
    common::config("small", &assignments)
}

fn tiny_ftl(policy: VictimPolicy) -> Checked<PageFtl> {
    let policy = format!("ftl.gc_policy={}", serde_json::to_string(&policy).expect("serializable"));
    let (config, geometry) = tiny_config(8, &[&policy]);
    Checked::new(PageFtl::new(&geometry, &config.ftl, 7).expect("valid FTL"), CheckAfter::EveryCall)
}

/// pblk in lines of two 16-page chunks, 4-page write units, two classes
/// (the streams), each in its own line.
fn tiny_pblk() -> Checked<Pblk> {
    let (config, geometry) = tiny_config(
        16,
        &["pblk.ws_min_pages=4", "pblk.ws_opt_pages=4", "pblk.write_buffer_pages=16", "pblk.separate=true"],
    );
    config.pblk.validate(&geometry).expect("valid pblk configuration");
    Checked::new(Pblk::new(&geometry, &config.pblk, 2).expect("valid pblk"), CheckAfter::EveryCall)
}

/// WAO-GC at half the utilization bound (its one write point takes every stream).
fn tiny_wao_gc() -> Checked<WaoGcFtl> {
    let (_, geometry) = tiny_config(16, &[]);
    let config = WaoGcConfig::from_latencies(SimNs(200_000), SimNs(700_000), SimNs(2_700_000), 2);
    Checked::new(WaoGcFtl::new(&geometry, config), CheckAfter::EveryCall)
}

/// Runs `ops` on `layer`, whose invariants [`Checked`] checks after each
/// call, against the reference model: the set of logical pages holding data.
/// `streams`: how many placement hints the layer takes (writes use stream
/// `stream % streams`).
fn check_against_model<L: TranslationLayer>(
    layer: &mut Checked<L>,
    streams: u8,
    ops: &[Operation],
) -> Result<(), TestCaseError> {
    let fail = |error: FtlError| TestCaseError::fail(error.to_string());
    let mut mapped = BTreeSet::new();
    for op in ops {
        layer.count_request();
        match *op {
            Operation::Write { lpn, stream } => {
                layer.write(Lpn(lpn), StreamId(stream % streams)).map_err(fail)?;
                mapped.insert(lpn);
            }
            Operation::Trim { lpn, pages } => {
                layer.trim(Lpn(lpn), pages).map_err(fail)?;
                for trimmed in lpn..lpn + pages {
                    mapped.remove(&trimmed);
                }
            }
            Operation::Read { lpn } => {
                let unmapped_reads = layer.counters().unmapped_reads;
                layer.read(Lpn(lpn)).map_err(fail)?;
                let found = layer.counters().unmapped_reads == unmapped_reads;
                prop_assert_eq!(found, mapped.contains(&lpn), "read of {}", lpn);
            }
        }
    }
    layer.flush().map_err(fail)?;
    let logical_pages = layer.geometry().logical_pages;
    for lpn in 0..logical_pages {
        prop_assert_eq!(layer.is_mapped(Lpn(lpn)), mapped.contains(&lpn), "logical page {}", lpn);
    }
    Ok(())
}

/// The page FTL also programs exactly the host pages and its GC copies.
fn check_page_ftl(policy: VictimPolicy, ops: &[Operation]) -> Result<(), TestCaseError> {
    let mut layer = tiny_ftl(policy);
    check_against_model(&mut layer, 2, ops)?;
    let counters = layer.counters();
    prop_assert_eq!(counters.flash_pages_programmed, counters.host_pages_written + counters.gc_page_copies);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn greedy_matches_reference(ops in operations(96)) {
        check_page_ftl(VictimPolicy::Greedy, &ops)?;
    }

    #[test]
    fn cost_benefit_matches_reference(ops in operations(96)) {
        check_page_ftl(VictimPolicy::CostBenefit, &ops)?;
    }

    #[test]
    fn fifo_matches_reference(ops in operations(96)) {
        check_page_ftl(VictimPolicy::Fifo, &ops)?;
    }

    #[test]
    fn random_and_d_choices_match_reference(ops in operations(96)) {
        check_page_ftl(VictimPolicy::Random, &ops)?;
        check_page_ftl(VictimPolicy::DChoices, &ops)?;
    }

    #[test]
    fn pblk_matches_reference(ops in operations(96)) {
        check_against_model(&mut tiny_pblk(), 2, &ops)?;
    }

    #[test]
    fn wao_gc_matches_reference(ops in operations(96)) {
        check_against_model(&mut tiny_wao_gc(), 1, &ops)?;
    }
}
