//! `run_threads`: a static-allocation counting run on several threads gives
//! the single-threaded run's report, field for field (the WAF series and the
//! steady-state aging included), and a run whose units are not independent
//! FTLs is refused, naming the key.

use nandlab_core::config::{ConfigBuilder, ConfigError};
use nandlab_core::sim::{check_threads, run_threads};
use nandlab_core::Config;

fn config(assignments: &[&str]) -> Result<Config, ConfigError> {
    let mut builder = ConfigBuilder::new();
    builder.merge_preset("small")?;
    for assignment in ["ftl.allocation=static", "precondition.max_device_writes=3"].iter().chain(assignments) {
        builder.set(assignment)?;
    }
    Ok(builder.build()?.0)
}

/// The report as JSON, the whole of what a run tells.
fn report(config: &Config, threads: usize) -> serde_json::Value {
    let report = run_threads(config, threads, &mut |_| {}).expect("runs");
    serde_json::to_value(&report).expect("serializes")
}

/// Multi-page requests span units, trims and reads go to every partition
/// they touch, the logical space ends mid-round of units, and the aging
/// stops by the steady-state rule: the reports are the same at 1, 2 and 4
/// threads. A different seed gives a different report, so the comparison
/// sees what the run did.
#[test]
fn threads_give_the_single_threaded_report() {
    let mixes: [&[&str]; 3] = [
        &[],
        &["workload.request_pages=5", "workload.read_fraction=0.2", "workload.trim_fraction=0.1"],
        &["device.logical_pages=13001", "ftl.gc_policy=fifo", "ftl.free_block_order=least-worn"],
    ];
    for mix in mixes {
        let config = config(mix).expect("valid");
        let one = report(&config, 1);
        assert!(one["waf_series"].as_array().is_some_and(|series| series.len() > 10), "a WAF series: {mix:?}");
        assert!(one["measured"]["erases"].as_u64().is_some_and(|erases| erases > 0), "GC ran: {mix:?}");
        for threads in [2, 4] {
            assert_eq!(report(&config, threads), one, "{threads} threads, {mix:?}");
        }
        let reseeded = Config { seed: config.seed + 1, ..config.clone() };
        assert_ne!(report(&reseeded, 2)["measured"], one["measured"], "another seed, {mix:?}");
    }
}

/// Whatever couples the units, or threads the units cannot be dealt to.
#[test]
fn runs_whose_units_share_state_are_refused_naming_the_key() {
    let cases: [(&[&str], usize, &str); 9] = [
        (&["ftl.allocation=round-robin"], 2, "ftl.allocation"),
        (&["ftl.gc_policy=d-choices"], 2, "ftl.gc_policy"),
        (&["ftl.gc_policy=random"], 2, "ftl.gc_policy"),
        (&["ftl.gc_policy=cost-benefit"], 2, "ftl.gc_policy"),
        (&["ftl.discard=dftl"], 2, "ftl.discard"),
        (&["ftl.kind=open-channel"], 2, "ftl.kind"),
        (&["job=name=a,requests=10"], 2, "job"),
        (&[], 3, "--threads"),
        (&[], 0, "--threads"),
    ];
    for (assignments, threads, key) in cases {
        let config = config(assignments).expect("a valid configuration");
        let error = check_threads(&config, threads).expect_err("refused");
        assert_eq!(error.key, key, "{assignments:?} on {threads} threads: {error}");
        assert!(run_threads(&config, threads, &mut |_| {}).is_err(), "{assignments:?} does not run");
        // One thread is the single-threaded run, whatever the configuration.
        assert!(check_threads(&config, 1).is_ok());
    }
}
