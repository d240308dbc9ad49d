//! End-to-end behaviour of the FTL and the run driver on small devices.

mod common;

use nandlab_core::ftl::{FtlError, PageFtl, TranslationLayer};
use nandlab_core::units::{Lpn, StreamId};
use rand::seq::SliceRandom;
use rand::SeedableRng;

fn small_ftl(overrides: &[&str]) -> PageFtl {
    let (config, geometry) = common::config("small", overrides);
    PageFtl::new(&geometry, &config.ftl, 3).expect("valid FTL")
}

fn write_all(ftl: &mut PageFtl, order: &[u32]) {
    for &lpn in order {
        ftl.write(Lpn(lpn), StreamId(0)).expect("write succeeds");
    }
}

#[test]
fn sequential_overwrite_has_waf_one() {
    let mut ftl = small_ftl(&[]);
    let logical: Vec<u32> = (0..ftl.geometry().logical_pages).collect();
    write_all(&mut ftl, &logical);
    let before = ftl.counters().clone();
    for _ in 0..5 {
        write_all(&mut ftl, &logical);
    }
    let measured = ftl.counters().since(&before);
    assert_eq!(measured.gc_page_copies, 0);
    assert_eq!(measured.waf(), Some(1.0));
    assert!(measured.erases > 0, "the overwrites must have reclaimed blocks");
}

#[test]
fn rewrite_after_trimming_everything_copies_nothing() {
    let mut ftl = small_ftl(&[]);
    let logical_pages = ftl.geometry().logical_pages;
    let mut order: Vec<u32> = (0..logical_pages).collect();
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
    write_all(&mut ftl, &order);
    for _ in 0..3 {
        order.shuffle(&mut rng);
        write_all(&mut ftl, &order);
    }
    assert!(ftl.counters().gc_page_copies > 0, "random overwrites must have caused GC copies");
    ftl.trim(Lpn(0), logical_pages).expect("trim succeeds");
    assert_eq!(ftl.mapped_pages(), 0);
    let before = ftl.counters().clone();
    order.shuffle(&mut rng);
    write_all(&mut ftl, &order);
    let rewrite = ftl.counters().since(&before);
    assert_eq!(rewrite.gc_page_copies, 0, "trimmed pages must never be copied");
    ftl.check_invariants().expect("consistent");
}

#[test]
fn out_of_range_requests_are_errors() {
    let mut ftl = small_ftl(&[]);
    let logical_pages = ftl.geometry().logical_pages;
    assert!(matches!(ftl.write(Lpn(logical_pages), StreamId(0)), Err(FtlError::LpnOutOfRange { .. })));
    assert!(matches!(ftl.read(Lpn(u32::MAX)), Err(FtlError::LpnOutOfRange { .. })));
    assert!(matches!(ftl.trim(Lpn(logical_pages - 1), 2), Err(FtlError::LpnOutOfRange { .. })));
    assert!(matches!(ftl.write(Lpn(0), StreamId(200)), Err(FtlError::UnknownStream { .. })));
}

#[test]
fn streams_never_share_a_block() {
    let mut ftl = small_ftl(&["ftl.streams=2"]);
    let pages_per_block = ftl.geometry().pages_per_block;
    let mut owner = std::collections::HashMap::new();
    for lpn in 0..2000u32 {
        let stream = StreamId(u8::from(lpn % 3 == 0));
        let ppn = ftl.write(Lpn(lpn), stream).expect("write succeeds");
        let previous = owner.insert(ppn.0 / pages_per_block, stream);
        assert!(previous.is_none_or(|p| p == stream), "block {} holds two streams", ppn.0 / pages_per_block);
    }
    assert_eq!(ftl.counters().stream_host_pages_written.iter().sum::<u64>(), 2000);
}

#[test]
fn runs_are_deterministic_per_seed() {
    let run = |seed: u64| {
        let (config, _) = common::config("small", &[&format!("seed={seed}"), "workload.distribution=\"zipf\""]);
        serde_json::to_string(&nandlab_core::run(&config, &mut |_| {}).expect("run succeeds")).expect("serializable")
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn mixed_workload_counts_every_operation() {
    let (config, _) = common::config(
        "small",
        &[
            "workload.read_fraction=0.3",
            "workload.trim_fraction=0.1",
            "workload.request_pages=4",
            "workload.requests=20000",
        ],
    );
    let report = nandlab_core::run(&config, &mut |_| {}).expect("run succeeds");
    let measured = &report.measured.counters;
    assert_eq!(measured.requests, 20_000);
    let pages =
        measured.host_pages_written + measured.host_pages_read + measured.unmapped_reads + measured.host_pages_trimmed;
    assert_eq!(pages, 80_000);
    assert!(measured.host_pages_read > 20_000 && measured.host_pages_trimmed > 4_000);
    assert!(report.precondition.as_ref().is_some_and(|p| p.steady));
    assert!(!report.waf_series.is_empty());
}

#[test]
fn hot_cold_skew_lowers_waf_under_cost_benefit() {
    let waf = |distribution: &str| {
        let (config, _) = common::config(
            "small",
            &[
                "ftl.gc_policy=\"cost-benefit\"",
                &format!("workload.distribution=\"{distribution}\""),
                "workload.hot_cold_streams=true",
            ],
        );
        nandlab_core::run(&config, &mut |_| {}).expect("run succeeds").measured.waf.expect("pages written")
    };
    let uniform = waf("uniform");
    let skewed = waf("hot-cold");
    assert!(skewed < uniform, "hot/cold separation should lower WAF: {skewed:.3} vs {uniform:.3}");
}

/// A timed run records WAF over time as counting mode does: its windows end
/// at the measured phase's host pages and its last cumulative value is the
/// phase's WAF.
#[test]
fn a_timed_run_records_the_waf_series() {
    let (config, _) = common::config("small", &["workload.requests=20000"]);
    let report = nandlab_core::sim::run_timed(&config, &mut |_| {}).expect("timed run");
    assert!(report.waf_series.len() >= 90, "about 100 windows, got {}", report.waf_series.len());
    let last = report.waf_series.last().expect("points");
    let measured = report.measured.waf.expect("measured WAF");
    assert!((last.waf_cumulative - measured).abs() < 0.01 * measured, "{} vs {measured}", last.waf_cumulative);
}

/// Most partly programmed blocks any unit holds at once during random
/// overwrites of the whole logical space, three times over.
fn most_open_blocks_per_unit(gc_copies: &str) -> usize {
    let mut ftl = small_ftl(&[&format!("ftl.gc_copies=\"{gc_copies}\"")]);
    let geometry = *ftl.geometry();
    let mut order: Vec<u32> = (0..geometry.logical_pages).collect();
    write_all(&mut ftl, &order);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut most = 0;
    for _ in 0..3 {
        order.shuffle(&mut rng);
        for chunk in order.chunks(997) {
            write_all(&mut ftl, chunk);
            let mut open = vec![0; geometry.units() as usize];
            for block in 0..geometry.blocks() {
                let block = nandlab_core::units::BlockId(block);
                let pointer = ftl.flash().write_pointer(block);
                if pointer > 0 && !ftl.flash().is_full(block) {
                    open[geometry.unit_of_block(block).index()] += 1;
                }
            }
            most = most.max(open.into_iter().max().unwrap_or(0));
        }
    }
    assert!(ftl.counters().gc_page_copies > 0, "{gc_copies}: GC copied pages");
    most
}

/// `ftl.gc_copies = "host-block"` (Telomere Section 6.2's page-map FTL)
/// writes GC copies into the host's open block: a unit never has a second
/// block open for them, as it does with `own-block`.
#[test]
fn gc_copies_beside_host_writes_keep_one_open_block_per_unit() {
    assert_eq!(most_open_blocks_per_unit("own-block"), 2, "a GC open block beside the host's");
    assert_eq!(most_open_blocks_per_unit("host-block"), 1, "GC copies fill the host's open block");
}
