//! `[[job]]` tables: several workloads in one run, each credited with what
//! its requests cost, and runs without jobs unchanged.

use nandlab_convert::f64_of;
use nandlab_core::config::ConfigBuilder;
use nandlab_core::Config;

fn config(assignments: &[&str]) -> Result<Config, nandlab_core::config::ConfigError> {
    let mut builder = ConfigBuilder::new();
    builder.merge_preset("small")?;
    for assignment in ["workload.requests=3000", "precondition.max_device_writes=2"].iter().chain(assignments) {
        builder.set(assignment)?;
    }
    Ok(builder.build()?.0)
}

#[test]
fn two_jobs_add_up_to_the_device() {
    let config = config(&[
        "job=name=logger,pattern=sequential,range_end=0.1,priority=true,requests=4000",
        "job=name=bulk,range_start=0.1,request_pages=4,queue_depth=4,read_fraction=0.2,trim_fraction=0.05,requests=12000",
    ])
    .expect("valid jobs");
    let report = nandlab_core::run(&config, &mut |_| {}).expect("runs");
    let [logger, bulk] = report.jobs.as_slice() else { panic!("two job reports, got {:?}", report.jobs) };
    assert_eq!((logger.name.as_str(), bulk.name.as_str()), ("logger", "bulk"));
    assert_eq!((logger.requests, bulk.requests), (4000, 12000));
    let measured = &report.measured.counters;
    let sum = |pick: fn(&nandlab_core::workload::jobs::JobReport) -> u64| pick(logger) + pick(bulk);
    assert_eq!(sum(|job| job.requests), measured.requests);
    assert_eq!(sum(|job| job.host_pages_written), measured.host_pages_written);
    assert_eq!(sum(|job| job.host_pages_read), measured.host_pages_read);
    assert_eq!(sum(|job| job.host_pages_trimmed), measured.host_pages_trimmed);
    assert_eq!(sum(|job| job.flash_pages_programmed), measured.flash_pages_programmed);
    assert_eq!(sum(|job| job.gc_page_copies), measured.gc_page_copies);
    assert_eq!(sum(|job| job.erases), measured.erases);
    assert!(bulk.host_pages_read > 0 && bulk.host_pages_trimmed > 0 && logger.host_pages_read == 0);
    assert!((logger.flash_write_share + bulk.flash_write_share - 1.0).abs() < 1e-9);
    assert!(bulk.gc_page_copies > 0 && bulk.gc_share > logger.gc_share);
    // Deterministic: the same configuration gives the same per-job results.
    assert_eq!(nandlab_core::run(&config, &mut |_| {}).expect("runs again").jobs, report.jobs);
}

/// Two closed jobs at depth 1 alternate, so with round-robin allocation each
/// job's writes land in every other parallel unit: the sequential job's in
/// one half, the random job's in the other. Valid data then piles up in one
/// half beyond what its blocks hold, and the device must not get full.
#[test]
fn interleaved_jobs_never_fill_a_device_with_spare_space() {
    for order in [["a", "b"], ["b", "a"]] {
        let job = |name: &str| match name {
            "a" => "job=name=a,pattern=sequential,requests=20000",
            _ => "job=name=b,requests=30000",
        };
        let config = config(&[job(order[0]), job(order[1])]).expect("valid jobs");
        let report = nandlab_core::run(&config, &mut |_| {}).expect("the device has spare space");
        assert_eq!(report.jobs.iter().map(|job| job.requests).sum::<u64>(), 50_000);
    }
}

/// Every stream written holds an open block in every unit: jobs writing
/// more streams than the spare blocks hold are refused before the run, by key.
#[test]
fn jobs_writing_more_streams_than_the_spare_blocks_hold_are_refused() {
    let jobs: Vec<String> = (0..8).map(|stream| format!("job=name=j{stream},stream={stream},requests=2000")).collect();
    let mut assignments: Vec<&str> = jobs.iter().map(String::as_str).collect();
    assert!(nandlab_core::run(&config(&assignments).expect("valid"), &mut |_| {}).is_ok());
    assignments.push("device.over_provisioning=0.15");
    let error = nandlab_core::run(&config(&assignments).expect("valid keys"), &mut |_| {}).expect_err("refused");
    let message = error.to_string();
    assert!(message.contains("device.over_provisioning") && message.contains("8 host streams"), "{message}");
}

/// A timed run of two jobs whose requests add up to the device's, having
/// issued `requests` each, each rated over its own active time.
fn two_timed_jobs(jobs: [&str; 2], requests: (u64, u64)) -> nandlab_core::timing::TimedReport {
    let config = config(&jobs).expect("valid jobs");
    let report = nandlab_core::sim::run_timed(&config, &mut |_| {}).expect("runs");
    let timed = report.timed.clone().expect("a timed report");
    let [first, second] = timed.jobs.as_slice() else { panic!("two job results, got {:?}", timed.jobs) };
    assert_eq!((first.requests, second.requests), requests);
    assert_eq!(first.requests + second.requests, timed.requests);
    // Jobs are charged with what their requests made the layer do; the
    // engine's background GC is nobody's, so the device did at least as much,
    // and at least the host pages the jobs wrote.
    let device = &report.measured.counters;
    let charged = first.flash_pages_programmed + second.flash_pages_programmed;
    assert!(device.host_pages_written <= charged && charged <= device.flash_pages_programmed, "{timed:?}");
    assert!(first.gc_page_copies + second.gc_page_copies <= device.gc_page_copies, "{timed:?}");
    assert!(first.erases + second.erases <= device.erases, "{timed:?}");
    let close = |part: f64, whole: f64| (part - whole).abs() <= 1e-9 * whole.max(1.0);
    let charged_share = f64_of(charged) / f64_of(device.flash_pages_programmed);
    assert!(close(first.flash_write_share + second.flash_write_share, charged_share), "{timed:?}");
    for job in [first, second] {
        let requests = f64_of(job.requests);
        assert!(job.active_s > 0.0 && job.active_s <= timed.simulated_s, "{job:?} in {}", timed.simulated_s);
        assert!(close(job.iops * job.active_s, requests), "{job:?}");
    }
    // Over the whole run the jobs' rates add up to the device's; over their
    // own (shorter) active times to at least that.
    assert!(first.iops + second.iops >= timed.iops * (1.0 - 1e-9), "{timed:?}");
    let over_run = |job: &nandlab_core::timing::JobTiming| job.write_mb_s * job.active_s / timed.simulated_s;
    assert!(close(over_run(first) + over_run(second), timed.write_mb_s), "{timed:?}");
    let again = nandlab_core::sim::run_timed(&config, &mut |_| {}).expect("runs again").timed;
    assert_eq!(again.as_ref(), Some(&timed), "the same configuration gives the same run");
    timed
}

/// The same in timed mode: the jobs' requests, IOPS and MB/s add up to the
/// device's.
#[test]
fn two_timed_jobs_add_up_to_the_device() {
    let timed = two_timed_jobs(
        [
            "job=name=logger,pattern=sequential,range_end=0.1,priority=true,rate_iops=500,requests=2000",
            "job=name=bulk,range_start=0.1,request_pages=4,rate_iops=1500,read_fraction=0.3,requests=6000",
        ],
        (2000, 6000),
    );
    let [logger, bulk] = timed.jobs.as_slice() else { unreachable!("checked") };
    assert!(logger.read_mb_s == 0.0 && bulk.read_mb_s > 0.0);
    // The bulk job writes 8.4x the logger's pages, at random: far more programs and GC are its.
    assert!(bulk.flash_write_share > 4.0 * logger.flash_write_share && bulk.gc_share > logger.gc_share, "{timed:?}");
}

#[test]
fn a_closed_job_issues_in_proportion_to_its_queue_depth() {
    let config = config(&[
        "job=name=deep,range_end=0.5,queue_depth=3,requests=3000",
        "job=name=shallow,range_start=0.5,queue_depth=1,requests=3000",
    ])
    .expect("valid jobs");
    let mut source = nandlab_core::workload::jobs::JobsSource::new(&config.jobs, &config.validate().expect("ok"), 1);
    let first: Vec<u16> = (0..400)
        .map(|_| nandlab_core::workload::EventSource::next_event(&mut source).expect("ok").expect("event").job)
        .collect();
    let deep = first.iter().filter(|&&job| job == 0).count();
    assert_eq!(deep, 300, "3 of every 4 requests come from the job at depth 3");
}

#[test]
fn a_run_without_jobs_serializes_as_before() {
    let report = nandlab_core::run(&config(&[]).expect("valid"), &mut |_| {}).expect("runs");
    let json = serde_json::to_value(&report).expect("json");
    let object = json.as_object().expect("an object");
    assert!(!object.contains_key("jobs"), "no jobs field without jobs");
    assert!(!object["config"].as_object().expect("config").contains_key("job"), "no job key in the config");
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut before = [
        "nandlab_version",
        "seed",
        "config",
        "device",
        "precondition",
        "host",
        "discard",
        "classes",
        "measured",
        "erase_counts",
        "waf_series",
        "memory_bytes_per_physical_page",
        // The lifetime forecast came in with the emulator, not with jobs.
        "lifetime",
    ];
    before.sort_unstable();
    assert_eq!(keys, before, "the report's fields are those of a run before jobs existed");
}

/// A single-workload run's JSON, byte for byte, against the one committed in
/// `tests/golden/single_workload.json`: jobs (and whatever comes next) must
/// leave it alone. A change that is meant to alter the numbers regenerates
/// it with `NANDLAB_BLESS=1 cargo test -p nandlab-core --test jobs` and says
/// why in its commit.
#[test]
fn a_single_workload_run_gives_the_committed_json() {
    let config = config(&["workload.requests=2000", "metrics.window_pages=4096"]).expect("valid");
    let report = nandlab_core::run(&config, &mut |_| {}).expect("runs");
    let mut json = serde_json::to_string_pretty(&report).expect("json");
    json.push('\n');
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/single_workload.json");
    if std::env::var_os("NANDLAB_BLESS").is_some() {
        std::fs::create_dir_all(golden.parent().expect("folder")).expect("creates tests/golden");
        std::fs::write(&golden, &json).expect("writes the golden file");
    }
    let expected =
        std::fs::read_to_string(&golden).expect("tests/golden/single_workload.json (NANDLAB_BLESS=1 writes it)");
    if json != expected {
        let line = json.lines().zip(expected.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "the JSON of a single-workload run changed at line {}: {:?} (committed: {:?})",
            line + 1,
            json.lines().nth(line),
            expected.lines().nth(line)
        );
    }
}

#[test]
fn bad_jobs_are_refused_by_key() {
    let error = |assignments: &[&str]| config(assignments).expect_err("refused").to_string();
    assert!(error(&["job=name=a,bogus=1"]).contains("job.a.bogus"));
    assert!(error(&["job=name=a,range_start=0.5,range_end=0.5"]).contains("job.a.range_end"));
    assert!(error(&["job=name=a,read_fraction=2"]).contains("job.a.read_fraction"));
    assert!(error(&["job=name=a", "job=name=a"]).contains("two jobs have this name"));
    let mixed = config(&["job=name=a,rate_iops=100,requests=10", "job=name=b,requests=10"]).expect("valid");
    let counting = nandlab_core::sim::run(&mixed, &mut |_| {}).expect_err("counting mode has no time").to_string();
    assert!(counting.contains("job.rate_iops") && counting.contains("counting mode"), "{counting}");
    assert!(error(&["job=pattern=random"]).contains("name"));
    assert!(error(&["job=name=a", "job.b.rate_iops=5"]).contains("no job is named \"b\" (jobs: a)"));
    assert!(error(&["job=name=a", "job.a.burst_len=4"]).contains("job.a.burst_len"), "bursts need a rate");
    let set = config(&["job=name=a,rate_iops=100", "job=name=b,rate_iops=100", "job.b.rate_iops=300"]).expect("valid");
    assert_eq!((set.jobs[0].rate_iops, set.jobs[1].rate_iops), (Some(100), Some(300)));
    let closed = config(&["job=name=a,requests=10", "timing.interface=\"sata\""]).expect("valid in counting mode");
    let error = nandlab_core::sim::run_timed(&closed, &mut |_| {}).expect_err("SATA has one queue").to_string();
    assert!(error.contains("timing.interface"), "{error}");
}

/// Closed-loop jobs in timed mode, each on its own host queue at its own
/// depth: the jobs add up to the device, no job has more than its depth
/// outstanding on average over the run (Little's law: its latencies add up
/// to at most depth x run time), and the deep job keeps more outstanding.
#[test]
fn two_closed_timed_jobs_keep_their_depths() {
    let timed = two_timed_jobs(
        [
            "job=name=deep,range_end=0.5,queue_depth=8,read_fraction=0.5,requests=8000",
            "job=name=shallow,range_start=0.5,queue_depth=1,read_fraction=0.5,requests=1000",
        ],
        (8000, 1000),
    );
    let [deep, shallow] = timed.jobs.as_slice() else { unreachable!("checked") };
    let outstanding = |latency: Option<&nandlab_core::timing::LatencySummary>| {
        let latency = latency.expect("latencies");
        let total_us = latency.mean_us * f64_of(latency.count);
        total_us / (timed.simulated_s * 1e6)
    };
    let (deep_outstanding, shallow_outstanding) =
        (outstanding(deep.latency.as_ref()), outstanding(shallow.latency.as_ref()));
    eprintln!("mean outstanding: deep {deep_outstanding}, shallow {shallow_outstanding}");
    assert!(deep_outstanding <= 8.0 * 1.01 && shallow_outstanding <= 1.01);
    assert!(deep_outstanding > 2.0 * shallow_outstanding, "{deep_outstanding} vs {shallow_outstanding}");
}

/// Issue 26: a job that finishes early was rated over the whole run (1,047
/// IOPS where depth / latency gives 1,611). Rated over its own active time,
/// a closed job's IOPS is its depth over its mean latency (Little's law),
/// within 1 % (the ramp at its end, when fewer than its depth remain, and
/// the histogram's rounding) — far from what the run's time would give.
#[test]
fn a_job_that_finishes_early_is_rated_over_its_own_active_time() {
    let timed = two_timed_jobs(
        [
            "job=name=short,range_end=0.5,queue_depth=4,read_fraction=0.5,requests=3000",
            "job=name=long,range_start=0.5,queue_depth=4,read_fraction=0.5,requests=12000",
        ],
        (3000, 12000),
    );
    let [short, long] = timed.jobs.as_slice() else { unreachable!("checked") };
    assert!(short.active_s < 0.6 * timed.simulated_s, "the short job ends early: {short:?}");
    for job in [short, long] {
        assert_eq!(job.offered_iops, None, "a closed job has no offered rate");
        let latency_s = job.latency.as_ref().expect("latencies").mean_us / 1e6;
        let littles_law = 4.0 / latency_s;
        eprintln!("{}: {:.0} IOPS over {:.3} s, depth / latency {littles_law:.0}", job.name, job.iops, job.active_s);
        assert!((job.iops / littles_law - 1.0).abs() < 0.01, "{job:?}: Little's law gives {littles_law}");
    }
    let over_the_run = f64_of(short.requests) / timed.simulated_s;
    assert!(over_the_run < 0.7 * short.iops, "the run's time would rate it at {over_the_run}");
}

/// An open job's offered rate is its `rate_iops`, less the time bursts
/// spend in their gaps: 300 IOPS in bursts of 4, 100 us apart, are 75
/// bursts a second of 1/75 s + 300 us each.
#[test]
fn an_open_job_offers_its_rate_and_achieves_it_when_the_device_keeps_up() {
    let config = config(&[
        "job=name=steady,range_end=0.5,rate_iops=400,requests=2000",
        "job=name=bursty,range_start=0.5,rate_iops=300,burst_len=4,burst_gap_us=100,requests=2000",
    ])
    .expect("valid jobs");
    let report = nandlab_core::sim::run_timed(&config, &mut |_| {}).expect("runs");
    let timed = report.timed.expect("a timed report");
    let [steady, bursty] = timed.jobs.as_slice() else { panic!("two jobs: {:?}", timed.jobs) };
    assert_eq!(steady.offered_iops, Some(400.0));
    let cycle_s = 1.0 / 75.0 + 3.0 * 100e-6;
    assert!((bursty.offered_iops.expect("open") - 4.0 / cycle_s).abs() < 1e-9, "{bursty:?}");
    for job in [steady, bursty] {
        let offered = job.offered_iops.expect("open");
        // The active time is a sum of exponential gaps: 2,000 of them (2.2 % standard error) for
        // the steady job, 500 (one per burst, 4.5 %) for the bursty one; 15 % is over three of those.
        assert!((job.iops / offered - 1.0).abs() < 0.15, "{}: offered {offered}, achieved {}", job.name, job.iops);
    }
}

/// Rajimwale et al., slide 19, as two jobs: a priority logger beside a bulk
/// writer on one device, the same 4 KiB random requests with 60 % writes,
/// the logger's in bursts of 4 (100 us apart) as an application's run of
/// synchronous writes. With priority-aware cleaning the device starts no GC
/// while a priority request is outstanding, so the rest of a burst finds
/// its die free: the logger's p99 falls below what it is without, and below
/// the bulk writer's. Without the mechanism both jobs see the same device.
#[test]
fn a_priority_job_waits_less_than_a_bulk_job_under_priority_aware_cleaning() {
    let jobs = [
        "job=name=logger,priority=true,rate_iops=300,burst_len=4,burst_gap_us=100,read_fraction=0.4,requests=3000",
        "job=name=bulk,rate_iops=2700,read_fraction=0.4,requests=27000",
    ];
    let p99s = |aware: bool| {
        let aware = format!("timing.priority_aware_gc={aware}");
        let config = config(&[jobs[0], jobs[1], "timing.gc_low_blocks=8", &aware]).expect("valid");
        let report = nandlab_core::sim::run_timed(&config, &mut |_| {}).expect("runs");
        let timed = report.timed.expect("a timed report");
        let p99 = |index: usize| timed.jobs[index].latency.as_ref().expect("latencies").p99_us;
        assert_eq!(timed.jobs.iter().map(|job| job.requests).sum::<u64>(), timed.requests);
        assert_eq!((timed.jobs[0].name.as_str(), timed.jobs[1].name.as_str()), ("logger", "bulk"));
        assert!(timed.gc_die_time_share > 0.1, "the device is cleaning ({})", timed.gc_die_time_share);
        (p99(0), p99(1))
    };
    let (logger_unaware, bulk_unaware) = p99s(false);
    let (logger_aware, bulk_aware) = p99s(true);
    eprintln!(
        "p99 us: unaware logger {logger_unaware} bulk {bulk_unaware}; aware logger {logger_aware} bulk {bulk_aware}"
    );
    assert!(
        logger_aware < logger_unaware,
        "aware cleaning lowers the logger's p99: {logger_aware} vs {logger_unaware} us"
    );
    assert!(logger_aware < bulk_aware, "priority p99 {logger_aware} us, bulk p99 {bulk_aware} us");
}

/// Issue 26: a rate job beside a closed-loop job runs in timed mode. The
/// rate job's requests arrive by their Poisson schedule on the shared
/// queues, the closed job keeps its depth on its own queue, and each is
/// rated apart. At 1,000 IOPS, well below what the device serves, the rate
/// job achieves its offered rate: its active time is the sum of 90,000
/// exponential gaps (0.33 % standard error) plus one request's latency,
/// so 1 % is three standard errors. The closed job's IOPS is its depth over
/// its mean latency (Little's law), within 2 % (the ramp at its end).
#[test]
fn a_rate_job_beside_a_closed_job_runs_in_timed_mode() {
    let config = config(&[
        "job=name=paced,range_end=0.5,rate_iops=1000,read_fraction=0.5,requests=90000",
        "job=name=closed,range_start=0.5,queue_depth=4,read_fraction=0.7,requests=800000",
    ])
    .expect("open and closed jobs are valid together");
    let report = nandlab_core::sim::run_timed(&config, &mut |_| {}).expect("runs");
    let timed = report.timed.expect("a timed report");
    let [paced, closed] = timed.jobs.as_slice() else { panic!("two jobs: {:?}", timed.jobs) };
    assert_eq!((paced.requests, closed.requests), (90_000, 800_000));
    assert_eq!((paced.offered_iops, closed.offered_iops), (Some(1000.0), None));
    eprintln!(
        "paced: {:.1} IOPS over {:.2} s; closed: {:.1} IOPS over {:.2} s",
        paced.iops, paced.active_s, closed.iops, closed.active_s
    );
    assert!((paced.iops / 1000.0 - 1.0).abs() < 0.01, "offered 1000, achieved {}", paced.iops);
    // Both run at once: the closed job lasts through most of the paced one.
    assert!(closed.active_s > 0.5 * paced.active_s, "{closed:?} beside {paced:?}");
    let latency_s = closed.latency.as_ref().expect("latencies").mean_us / 1e6;
    let littles_law = 4.0 / latency_s;
    assert!((closed.iops / littles_law - 1.0).abs() < 0.02, "{closed:?}: depth / latency gives {littles_law}");
    let again = nandlab_core::sim::run_timed(&config, &mut |_| {}).expect("runs again").timed;
    assert_eq!(again.as_ref().map(|timed| &timed.jobs), Some(&timed.jobs), "the same configuration gives the same run");
}
