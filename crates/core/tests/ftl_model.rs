//! Property tests: random write/trim/read sequences against an obviously
//! correct reference model (a set of mapped logical pages), with the FTL's
//! own consistency checker run after every operation.

mod common;

use nandlab_core::ftl::{PageFtl, VictimPolicy};
use nandlab_core::units::{Lpn, StreamId};
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

fn tiny_ftl(policy: VictimPolicy) -> PageFtl {
    let policy = serde_json::to_string(&policy).expect("serializable");
    let (config, geometry) = common::config(
        "small",
        &[
            "device.channels=1",
            "device.chips_per_channel=2",
            "device.blocks_per_plane=16",
            "device.pages_per_block=8",
            "device.logical_pages=96",
            &format!("ftl.gc_policy={policy}"),
            "ftl.streams=2",
        ],
    );
    PageFtl::new(&geometry, &config.ftl, 7).expect("valid FTL")
}

fn check_against_model(policy: VictimPolicy, ops: &[Operation]) -> Result<(), TestCaseError> {
    let mut ftl = tiny_ftl(policy);
    let mut mapped = BTreeSet::new();
    for op in ops {
        match *op {
            Operation::Write { lpn, stream } => {
                ftl.write(Lpn(lpn), StreamId(stream)).map_err(|e| TestCaseError::fail(e.to_string()))?;
                mapped.insert(lpn);
            }
            Operation::Trim { lpn, pages } => {
                ftl.trim(Lpn(lpn), pages).map_err(|e| TestCaseError::fail(e.to_string()))?;
                for trimmed in lpn..lpn + pages {
                    mapped.remove(&trimmed);
                }
            }
            Operation::Read { lpn } => {
                let found = ftl.read(Lpn(lpn)).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(found.is_some(), mapped.contains(&lpn), "read of {}", lpn);
            }
        }
        ftl.check_consistency().map_err(TestCaseError::fail)?;
        prop_assert_eq!(ftl.mapped_pages(), mapped.len());
    }
    for lpn in 0..96 {
        prop_assert_eq!(ftl.lookup(Lpn(lpn)).is_some(), mapped.contains(&lpn));
    }
    let counters = ftl.counters();
    prop_assert_eq!(counters.flash_pages_programmed, counters.host_pages_written + counters.gc_page_copies);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn greedy_matches_reference(ops in operations(96)) {
        check_against_model(VictimPolicy::Greedy, &ops)?;
    }

    #[test]
    fn cost_benefit_matches_reference(ops in operations(96)) {
        check_against_model(VictimPolicy::CostBenefit, &ops)?;
    }

    #[test]
    fn fifo_matches_reference(ops in operations(96)) {
        check_against_model(VictimPolicy::Fifo, &ops)?;
    }

    #[test]
    fn random_and_d_choices_match_reference(ops in operations(96)) {
        check_against_model(VictimPolicy::Random, &ops)?;
        check_against_model(VictimPolicy::DChoices, &ops)?;
    }
}
