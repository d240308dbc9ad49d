//! Closed-form and mechanism tests of the timing model.

use super::*;
use crate::config::ConfigBuilder;
use crate::device::Geometry;
use crate::ftl::{PageFtl, TranslationLayer};
use crate::host::pblk::{Pblk, PblkConfig};
use crate::host::{submit, Op, Request};
use crate::sim::{Timed, Workload};
use crate::units::{Lpn, SimNs, StreamId};
use crate::Config;
use nandlab_convert::f64_of;

/// Open-loop backlogs waiting in the request source.
mod backlog;

/// Requests replayed from a list.
struct Script(std::vec::IntoIter<TimedRequest>);

impl RequestSource for Script {
    fn next_request(&mut self) -> Option<TimedRequest> {
        self.0.next()
    }
}

fn script(requests: Vec<TimedRequest>) -> Script {
    Script(requests.into_iter())
}

fn at(ns: u64, op: Op, start: u32, pages: u32) -> TimedRequest {
    TimedRequest {
        request: Request { op, start: Lpn(start), pages, stream: StreamId(0) },
        arrival: SimNs(ns),
        priority: false,
        deadline: None,
        job: None,
    }
}

fn config(overrides: &[&str]) -> (Config, Geometry) {
    let mut builder = ConfigBuilder::preset("small").expect("preset");
    for assignment in overrides {
        builder.set(assignment).expect("override");
    }
    builder.build().expect("valid configuration")
}

fn run<T: TranslationLayer>(
    config: &Config,
    geometry: &Geometry,
    ftl: &mut T,
    source: &mut dyn RequestSource,
    requests: u64,
) -> TimedReport {
    Engine::new(geometry, &config.timing, &config.ftl).run(ftl, source, requests, &mut |_| {}).expect("timed run")
}

fn within(actual: f64, expected: f64, tolerance: f64) -> bool {
    (actual - expected).abs() <= tolerance * expected
}

/// The open-channel host FTL over the `small` device, with a buffer that fits.
fn pblk(geometry: &Geometry) -> Pblk {
    Pblk::new(geometry, &PblkConfig { write_buffer_pages: 64, ..PblkConfig::default() }, 1).expect("device builds")
}

/// 64 pages written and made durable, then read one at a time.
fn one_outstanding_read<T: TranslationLayer>(config: &Config, geometry: &Geometry, layer: &mut T) {
    for lpn in 0..64 {
        layer.write(Lpn(lpn), StreamId(0)).expect("write");
    }
    layer.flush().expect("flush");
    let reads = (0..64).map(|page| at(0, Op::Read, page, 1)).collect();
    let report = run(config, geometry, layer, &mut script(reads), 64);
    let transfer_ns = (4096 * 1_000_000_000u64).div_ceil(400_000_000);
    let expected_us = f64_of(config.timing.read_ns + transfer_ns) / 1e3;
    let read = report.latency.read.expect("reads completed");
    assert_eq!(read.count, 64);
    assert!(within(read.p50_us, expected_us, 0.001), "p50 {} us, expected {expected_us} us", read.p50_us);
    assert!(within(read.max_us, expected_us, 0.001), "max {} us, expected {expected_us} us", read.max_us);
    assert!(within(report.simulated_s * 1e6, 64.0 * expected_us, 0.001));
}

#[test]
fn timing_one_outstanding_read_costs_read_plus_transfer() {
    let (config, geometry) = config(&["timing.queue_depth=1", "timing.channel_bytes_per_s=400000000"]);
    one_outstanding_read(&config, &geometry, &mut PageFtl::new(&geometry, &config.ftl, 1).expect("ftl"));
    one_outstanding_read(&config, &geometry, &mut pblk(&geometry));
}

/// Sequential 32 KiB writes at queue depth 64 on a fresh device (no GC).
fn sequential_write_mb_s(channel_bytes_per_s: u64) -> (f64, f64) {
    sequential_write_mb_s_with(channel_bytes_per_s, &[])
}

/// Like [`sequential_write_mb_s`], with more overrides; the die bound
/// counts planes when multi-plane operations are on.
fn sequential_write_mb_s_with(channel_bytes_per_s: u64, overrides: &[&str]) -> (f64, f64) {
    let (config, geometry) = sequential_config(channel_bytes_per_s, overrides);
    let mut ftl = PageFtl::new(&geometry, &config.ftl, 1).expect("ftl");
    let writes = (0..1200).map(|i| at(0, Op::Write, i * 8, 8)).collect();
    let report = run(&config, &geometry, &mut ftl, &mut script(writes), 1200);
    assert_eq!(report.gc_die_time_share, 0.0, "the device must not need GC");
    let mut interval_start_s = 0.0;
    let mut series_requests = 0.0;
    for point in &report.throughput_series {
        series_requests += point.iops * (point.time_s - interval_start_s);
        interval_start_s = point.time_s;
    }
    assert!(within(interval_start_s, report.simulated_s, 1e-9), "the series ends at the last completion");
    assert!(within(series_requests, 1200.0, 1e-9), "the series accounts for every request: {series_requests}");
    (report.write_mb_s, write_bound_mb_s(&config, &geometry, channel_bytes_per_s))
}

fn sequential_config(channel_bytes_per_s: u64, overrides: &[&str]) -> (Config, Geometry) {
    let rate = format!("timing.channel_bytes_per_s={channel_bytes_per_s}");
    let mut all = vec!["timing.queue_depth=64", rate.as_str()];
    all.extend_from_slice(overrides);
    config(&all)
}

/// min(channels x bus rate, dies (or planes) x page size / t_program), MB/s.
fn write_bound_mb_s(config: &Config, geometry: &Geometry, channel_bytes_per_s: u64) -> f64 {
    let page = f64::from(geometry.page_size);
    let parallel = if config.timing.multi_plane { geometry.units() } else { geometry.dies() };
    let dies_bound = f64::from(parallel) * page / (config.timing.program_ns as f64 / 1e9);
    let channels_bound = f64::from(geometry.channels) * f64_of(channel_bytes_per_s);
    dies_bound.min(channels_bound) / 1e6
}

/// The open-channel layer in the same engine: pblk's programs, padding and
/// line metadata together keep every die (or channel) busy, so the flash
/// bandwidth meets the same bound.
fn open_channel_flash_mb_s(channel_bytes_per_s: u64) -> (f64, f64) {
    let (config, geometry) = sequential_config(channel_bytes_per_s, &[]);
    let mut layer = pblk(&geometry);
    let writes = (0..1000).map(|i| at(0, Op::Write, i * 8, 8)).collect();
    let report = run(&config, &geometry, &mut layer, &mut script(writes), 1000);
    assert_eq!(layer.stats().gc_lines, 0, "the device must not need GC");
    let programmed = f64_of(layer.counters().flash_pages_programmed) * f64::from(geometry.page_size);
    (programmed / report.drained_s / 1e6, write_bound_mb_s(&config, &geometry, channel_bytes_per_s))
}

#[test]
fn timing_sequential_writes_reach_the_die_bound() {
    let (measured, expected) = sequential_write_mb_s(1_000_000_000);
    assert!(within(measured, expected, 0.02), "{measured:.3} MB/s, closed form {expected:.3} MB/s");
}

#[test]
fn timing_sequential_writes_reach_the_channel_bound() {
    let (measured, expected) = sequential_write_mb_s(20_000_000);
    assert!(within(measured, expected, 0.02), "{measured:.3} MB/s, closed form {expected:.3} MB/s");
}

#[test]
fn timing_open_channel_sequential_writes_reach_the_die_and_channel_bounds() {
    for channel_bytes_per_s in [1_000_000_000, 20_000_000] {
        let (measured, expected) = open_channel_flash_mb_s(channel_bytes_per_s);
        assert!(within(measured, expected, 0.02), "{measured:.3} MB/s, closed form {expected:.3} MB/s");
    }
}

/// A flush completes only once the writes the device buffer acknowledged
/// before it are on flash.
#[test]
fn timing_a_flush_waits_for_the_buffered_writes_before_it() {
    let (config, geometry) = config(&["timing.queue_depth=32", "timing.write_buffer_pages=256"]);
    let mut ftl = PageFtl::new(&geometry, &config.ftl, 1).expect("ftl");
    let mut requests: Vec<_> = (0..16).map(|i| at(0, Op::Write, i * 8, 8)).collect();
    requests.push(at(0, Op::Flush, 0, 0));
    let report = run(&config, &geometry, &mut ftl, &mut script(requests), 17);
    let write = report.latency.write.expect("writes");
    let flush = report.latency.flush.expect("flush");
    // 128 pages on 4 dies: at least 32 programs in a row on one die.
    let programs_us = 32.0 * f64_of(config.timing.program_ns) / 1e3;
    assert!(write.max_us < programs_us, "buffered writes are acknowledged early: {} us", write.max_us);
    assert!(flush.max_us >= programs_us, "the flush waits for the programs: {} us < {programs_us} us", flush.max_us);
    // Latencies are kept to three significant digits.
    assert!(
        flush.max_us <= report.drained_s * 1e6 * 1.001,
        "flush {} us, drained {} s",
        flush.max_us,
        report.drained_s
    );
}

#[test]
fn timing_read_behind_an_erase_on_its_die_waits_for_it() {
    // One die; fill it, overwrite until GC runs, then trim everything so the
    // sealed blocks hold no valid page: background GC is then a bare erase.
    let base = ["device.channels=1", "device.chips_per_channel=1", "timing.arrival=\"open\""];
    let read_latency_us = |erase_first: bool| {
        let low = if erase_first { "timing.gc_low_blocks=40" } else { "timing.gc_low_blocks=2" };
        let (config, geometry) = config(&[base[0], base[1], base[2], low]);
        let mut ftl = PageFtl::new(&geometry, &config.ftl, 1).expect("ftl");
        let logical = geometry.logical_pages;
        for round in 0..2 {
            let _ = round;
            submit(&mut ftl, &Request { op: Op::Write, start: Lpn(0), pages: logical, stream: StreamId(0) })
                .expect("fill");
        }
        submit(&mut ftl, &Request { op: Op::Trim, start: Lpn(0), pages: logical, stream: StreamId(0) }).expect("trim");
        submit(&mut ftl, &Request { op: Op::Write, start: Lpn(7), pages: 1, stream: StreamId(0) }).expect("write");
        let report = run(&config, &geometry, &mut ftl, &mut script(vec![at(1_000, Op::Read, 7, 1)]), 1);
        (report.latency.read.expect("read").max_us, config.timing)
    };
    let (alone_us, timing) = read_latency_us(false);
    let (behind_us, _) = read_latency_us(true);
    let transfer_ns = timing.page_transfer_ns(4096);
    let alone_expected = f64_of(timing.read_ns + transfer_ns) / 1e3;
    let behind_expected = f64_of(timing.erase_ns - 1_000 + timing.read_ns + transfer_ns) / 1e3;
    assert!(within(alone_us, alone_expected, 0.001), "alone {alone_us} us, expected {alone_expected} us");
    assert!(within(behind_us, behind_expected, 0.001), "behind {behind_us} us, expected {behind_expected} us");
}

/// A preconditioned `small` device with the given overrides.
fn preconditioned(overrides: &[&str]) -> crate::Simulation {
    let (config, _) = config(overrides);
    let mut simulation = crate::Simulation::new(&config).expect("simulation");
    simulation.precondition(&mut |_| {}).expect("precondition");
    simulation
}

/// Sequential 4-page writes on 16-page stripes: (RMW pages, merged stripes).
fn sequential_substripe_writes(flush: &str) -> (u64, u64, f64) {
    let mut simulation = preconditioned(&[
        "timing.stripe_pages=16",
        "timing.write_buffer_pages=64",
        &format!("timing.flush=\"{flush}\""),
        "timing.queue_depth=4",
    ]);
    let geometry = *simulation.geometry();
    let mut source = SequentialMix::new(&geometry, 4, 1.0, 1.0, Arrivals::new(None, 0.0, 3), 4);
    let report = simulation.run_phase(Workload::Requests(&mut source, 2000), Timed, &mut |_| {}).expect("timed run");
    (report.rmw_pages_rewritten, report.stripes_merged, report.write_mb_s)
}

#[test]
fn timing_substripe_writes_cost_read_modify_writes_and_merging_removes_them() {
    let (eager_rmw, eager_merged, eager_mb_s) = sequential_substripe_writes("eager");
    let (merge_rmw, merge_merged, merge_mb_s) = sequential_substripe_writes("stripe-merge");
    assert_eq!(eager_rmw, 2000 * 12, "every 4-page write rewrites the other 12 pages of its stripe");
    assert_eq!(eager_merged, 0);
    assert_eq!(merge_rmw, 0, "sequential writes complete their stripes in the buffer");
    assert!(merge_merged >= 2000 / 4 - 4, "{merge_merged} stripes merged");
    assert!(merge_mb_s > 2.0 * eager_mb_s, "merging: {merge_mb_s:.2} MB/s, eager: {eager_mb_s:.2} MB/s");
}

/// Mean latency (us) of a light open-loop load, 30 requests/s of 4-page
/// requests on 16-page stripes (70 % writes, half continuing the previous
/// request), far below what the device serves even with a stripe RMW per
/// write; and the report.
fn light_substripe_load(overrides: &[&str]) -> (f64, TimedReport) {
    let mut all = vec!["timing.stripe_pages=16", "timing.write_buffer_pages=64", "timing.arrival=\"open\""];
    all.extend_from_slice(overrides);
    let mut simulation = preconditioned(&all);
    let geometry = *simulation.geometry();
    let mut source = SequentialMix::new(&geometry, 4, 0.5, 0.7, Arrivals::new(Some(30), 0.0, 3), 4);
    let report =
        simulation.run_phase(Workload::Requests(&mut source, 1500), Timed, &mut |_| {}).expect("timed run").clone();
    let mean_us = report.latency.all.as_ref().expect("requests completed").mean_us;
    (mean_us, report)
}

#[test]
fn timing_stripe_merging_costs_nothing_at_a_light_load_because_idle_devices_write_partial_stripes() {
    let (eager_us, eager) = light_substripe_load(&["timing.flush=\"eager\""]);
    let (merge_us, merge) = light_substripe_load(&["timing.flush=\"stripe-merge\""]);
    assert!(eager.die_utilization < 0.2, "a light load: dies {:.1} % busy", 100.0 * eager.die_utilization);
    assert!(merge.stripes_flushed_idle > 0, "an idle device writes its partial stripes");
    assert!(merge_us <= 1.1 * eager_us, "merging {merge_us:.0} us against eager {eager_us:.0} us at a light load");
    // Without the idle flush, partial stripes fill the buffer and every write
    // that finds it full waits for an RMW the eager device did in idle time.
    let (held_us, held) =
        light_substripe_load(&["timing.flush=\"stripe-merge\"", "timing.partial_stripe_flush=\"buffer-full\""]);
    assert_eq!(held.stripes_flushed_idle, 0);
    assert!(held_us > 2.0 * eager_us, "held partial stripes: {held_us:.0} us against eager {eager_us:.0} us");
}

/// A host flush writes the partial stripes the merge buffer acknowledged.
#[test]
fn timing_a_host_flush_writes_held_partial_stripes() {
    let (config, geometry) = config(&[
        "timing.stripe_pages=16",
        "timing.write_buffer_pages=64",
        "timing.flush=\"stripe-merge\"",
        "timing.partial_stripe_flush=\"buffer-full\"",
        "timing.queue_depth=1",
        "precondition.max_device_writes=0",
    ]);
    let mut ftl = PageFtl::new(&geometry, &config.ftl, 1).expect("ftl");
    let mut requests = script(vec![at(0, Op::Write, 0, 4), at(0, Op::Write, 16, 4), at(0, Op::Flush, 0, 0)]);
    let report = run(&config, &geometry, &mut ftl, &mut requests, 3);
    assert_eq!(ftl.counters().flash_pages_programmed, 8, "both partial stripes reached the flash");
    let flush = report.latency.flush.as_ref().expect("the flush completed");
    assert!(flush.mean_us >= 200.0, "the flush waited for the programs: {:.0} us", flush.mean_us);
}

/// Priority and normal latency summaries of a random 4 KiB mix, 60 % writes,
/// open loop, background GC active; priority requests come in bursts of
/// `BURST`, `BURST_GAP_NS` apart.
fn priority_latencies(aware: bool, arrival_iops: u64) -> (LatencySummary, LatencySummary) {
    const BURST: u32 = 4;
    const BURST_GAP_NS: u64 = 100_000;
    let (config, geometry) = config(&[
        "timing.arrival=\"open\"",
        "timing.gc_low_blocks=8",
        &format!("timing.priority_aware_gc={aware}"),
        "workload.read_fraction=0.4",
    ]);
    let mut simulation = crate::Simulation::new(&config).expect("simulation");
    simulation.precondition(&mut |_| {}).expect("precondition");
    let mut workload = crate::workload::Synthetic::new(&config.workload, &geometry, 5);
    let arrivals = Arrivals::new(Some(arrival_iops), 0.05, 6).with_priority_bursts(BURST, BURST_GAP_NS);
    let mut source = SyntheticSource::new(&mut workload, arrivals);
    let report = simulation.run_phase(Workload::Requests(&mut source, 40_000), Timed, &mut |_| {}).expect("timed run");
    assert!(report.gc_die_time_share > 0.2, "GC must be active: {}", report.gc_die_time_share);
    let priority = report.latency.priority.clone().expect("priority requests");
    let normal = report.latency.normal.clone().expect("normal requests");
    (priority, normal)
}

#[test]
fn timing_priority_aware_cleaning_lowers_priority_p99() {
    for iops in [3000, 5000] {
        let (unaware, _) = priority_latencies(false, iops);
        let (aware, _) = priority_latencies(true, iops);
        assert!(
            aware.p99_us < unaware.p99_us,
            "priority p99: aware {:.1} us, unaware {:.1} us",
            aware.p99_us,
            unaware.p99_us
        );
    }
}

/// Latency (us) of a read that arrives right after a DISCARD, behind four
/// reads, on a one-die device.
fn read_after_discard_us(interface: &str) -> f64 {
    let (config, geometry) = config(&[
        "device.channels=1",
        "device.chips_per_channel=1",
        "timing.arrival=\"open\"",
        "timing.discard_command_ns=200000",
        &format!("timing.interface=\"{interface}\""),
    ]);
    let mut ftl = PageFtl::new(&geometry, &config.ftl, 1).expect("ftl");
    submit(&mut ftl, &Request { op: Op::Write, start: Lpn(0), pages: 64, stream: StreamId(0) }).expect("fill");
    let mut requests: Vec<_> = (0..4).map(|page| at(0, Op::Read, page, 1)).collect();
    requests.push(at(1_000, Op::Trim, 32, 8));
    requests.push(at(2_000, Op::Read, 10, 1));
    let report = run(&config, &geometry, &mut ftl, &mut script(requests), 6);
    report.latency.read.expect("reads").max_us
}

#[test]
fn timing_sata_discard_waits_for_the_queue_and_blocks_what_follows() {
    // Each read holds the die for sensing (40 us) and its transfer (20 us).
    let read_us = 40.0 + 20.0;
    let nvme = read_after_discard_us("nvme");
    let sata = read_after_discard_us("sata");
    assert!(within(nvme, 5.0 * read_us - 2.0, 0.001), "NVMe: the read queues only behind the 4 reads: {nvme} us");
    let expected = 4.0 * read_us + 200.0 + read_us - 2.0;
    assert!(within(sata, expected, 0.001), "SATA: drain, DISCARD, then the read: {sata} us, expected {expected} us");
}

/// Write latency summary of sparse open-loop 4 KiB writes.
fn sparse_write_latency(buffer_pages: u32) -> LatencySummary {
    let (config, geometry) = config(&["timing.arrival=\"open\"", &format!("timing.write_buffer_pages={buffer_pages}")]);
    let mut ftl = PageFtl::new(&geometry, &config.ftl, 1).expect("ftl");
    let writes = (0..100).map(|i| at(u64::from(i) * 1_000_000, Op::Write, i, 1)).collect();
    run(&config, &geometry, &mut ftl, &mut script(writes), 100).latency.write.expect("writes")
}

#[test]
fn timing_write_buffer_acknowledges_before_the_program() {
    let through = sparse_write_latency(0);
    let buffered = sparse_write_latency(64);
    // Write-through: transfer (20 us) then program (200 us).
    assert!(within(through.p50_us, 220.0, 0.001), "write-through {} us", through.p50_us);
    assert!(buffered.max_us < 1.0, "buffered writes complete on admission: {} us", buffered.max_us);
}

#[test]
fn timing_config_errors_name_the_key() {
    let error = |overrides: &[&str]| {
        let mut builder = ConfigBuilder::preset("small").expect("preset");
        for assignment in overrides {
            builder.set(assignment).expect("override");
        }
        builder.build().expect_err("invalid configuration")
    };
    assert_eq!(error(&["timing.interface=\"sata\"", "timing.queue_depth=64"]).key, "timing.queue_depth");
    assert_eq!(error(&["timing.program_ns=0"]).key, "timing.program_ns");
    assert_eq!(error(&["timing.gc_low_blocks=1"]).key, "timing.gc_low_blocks");
    assert_eq!(error(&["timing.flush=\"stripe-merge\"", "timing.stripe_pages=16"]).key, "timing.write_buffer_pages");
    assert_eq!(error(&["ftl.map_cache_fraction=0"]).key, "ftl.map_cache_fraction");
    assert!(error(&["timing.read_us=40"]).reason.contains("read_us"), "unknown keys are refused");
}

#[test]
fn timing_queues_share_the_outstanding_requests() {
    // Closed loop: 4 queues of depth 8 keep as many requests outstanding as
    // one queue of depth 32, so one-die random reads see the same service.
    let mean_us = |queues: &str, depth: &str| {
        let (config, geometry) = config(&["device.channels=1", "device.chips_per_channel=1", queues, depth]);
        let mut ftl = PageFtl::new(&geometry, &config.ftl, 1).expect("ftl");
        submit(&mut ftl, &Request { op: Op::Write, start: Lpn(0), pages: 64, stream: StreamId(0) }).expect("fill");
        let reads = (0..640).map(|i| at(0, Op::Read, i % 64, 1)).collect();
        run(&config, &geometry, &mut ftl, &mut script(reads), 640).latency.read.expect("reads").mean_us
    };
    let one = mean_us("timing.queues=1", "timing.queue_depth=32");
    let four = mean_us("timing.queues=4", "timing.queue_depth=8");
    // Little's law on one die: 32 outstanding x 60 us per read.
    assert!(within(one, 32.0 * 60.0, 0.05), "one queue: {one} us");
    assert!(within(four, one, 0.001), "four queues: {four} us, one queue: {one} us");
}

#[test]
fn timing_runs_are_deterministic() {
    let report = || {
        let (config, _) = config(&[
            "timing.arrival=\"open\"",
            "timing.arrival_iops=4000",
            "timing.priority_fraction=0.2",
            "timing.priority_aware_gc=true",
            "timing.write_buffer_pages=32",
            "workload.read_fraction=0.3",
            "workload.trim_fraction=0.05",
        ]);
        let mut simulation = crate::Simulation::new(&config).expect("simulation");
        simulation.precondition(&mut |_| {}).expect("precondition");
        simulation.run_phase(Workload::Synthetic(20_000), Timed, &mut |_| {}).expect("timed run").clone()
    };
    let first = report();
    assert_eq!(first.requests, 20_000);
    assert_eq!(first, report(), "the same configuration and seed give the same run");
}

#[test]
fn timing_multi_plane_programs_double_the_die_bound() {
    let two_planes = ["device.planes_per_die=2"];
    let (alone, alone_expected) = sequential_write_mb_s_with(1_000_000_000, &two_planes);
    let (together, together_expected) =
        sequential_write_mb_s_with(1_000_000_000, &["device.planes_per_die=2", "timing.multi_plane=true"]);
    assert!(within(alone, alone_expected, 0.02), "planes take turns: {alone:.2} MB/s, bound {alone_expected:.2}");
    assert!(within(together, together_expected, 0.02), "multi-plane: {together:.2} MB/s, bound {together_expected:.2}");
    assert!(within(together_expected, 2.0 * alone_expected, 1e-9));
}

/// Delay-D Section 3.2: DISCARDs issued in order of start LBA find their
/// mapping pages cached; the same DISCARDs in scattered order load one per
/// command. The one mapping-cache model (`ftl.discard = "dftl"`,
/// `ftl.map_cache_fraction`): a miss reads the translation page on its die,
/// and the DISCARD waits for it.
#[test]
fn timing_sorted_discards_hit_the_mapping_cache_scattered_ones_miss() {
    // Translation pages of 1,024 entries, 2 of them cached.
    let (_, geometry) = config(&[]);
    let map_pages = geometry.logical_pages.div_ceil(1024);
    let (config, geometry) = config(&[
        "timing.queue_depth=1",
        "timing.discard_command_ns=1000",
        "ftl.discard=\"dftl\"",
        &format!("ftl.map_cache_fraction={}", 1.5 / f64::from(map_pages)),
    ]);
    assert_eq!(crate::ftl::map_cache_pages(&geometry, &config.ftl), 2, "{map_pages} translation pages");
    let trims = |starts: &[u32]| starts.iter().map(|&start| at(0, Op::Trim, start, 8)).collect::<Vec<_>>();
    let run_trims = |requests: Vec<TimedRequest>| {
        let mut ftl = PageFtl::new(&geometry, &config.ftl, 1).expect("ftl");
        // Every page written once, so the translation pages are on flash.
        for lpn in 0..geometry.logical_pages {
            ftl.write(Lpn(lpn), StreamId(0)).expect("fill");
        }
        let before = ftl.counters().clone();
        let count = requests.len() as u64;
        let report = run(&config, &geometry, &mut ftl, &mut script(requests), count);
        (report, ftl.counters().since(&before))
    };
    // 16 trims of 8 pages: in order they stay within translation page 0.
    let sorted: Vec<u32> = (0..16).map(|i| i * 8).collect();
    let (sorted_report, sorted_counts) = run_trims(trims(&sorted));
    assert_eq!(sorted_counts.map_cache_misses, 1);
    // One trim in each translation page, in an order the 2-page cache
    // cannot hold (each trim's own pages: a trimmed page is not looked up again).
    let scattered: Vec<u32> = (0..16).map(|i| (i * 5 % map_pages) * 1024 + i * 8).collect();
    let (scattered_report, scattered_counts) = run_trims(trims(&scattered));
    assert_eq!(scattered_counts.map_cache_misses, 16, "{map_pages} translation pages");
    assert!(scattered_counts.translation_pages_read >= 14, "{scattered_counts:?}");
    // One request at a time: each further miss costs at least a flash read.
    let extra_s = scattered_report.simulated_s - sorted_report.simulated_s;
    let reads_s = (scattered_counts.translation_pages_read - sorted_counts.translation_pages_read) as f64
        * config.timing.read_ns as f64
        / 1e9;
    assert!(extra_s >= reads_s, "the scattered DISCARDs wait {extra_s} s more, their reads take {reads_s} s");
    let (exact, _) = self::config(&["timing.queue_depth=1"]);
    let mut ftl = PageFtl::new(&geometry, &exact.ftl, 1).expect("ftl");
    Engine::new(&geometry, &exact.timing, &exact.ftl)
        .run(&mut ftl, &mut script(trims(&scattered)), 16, &mut |_| {})
        .expect("timed run");
    assert_eq!(ftl.counters().map_cache_misses, 0, "exact: the map is in RAM");
}

/// Closed-loop jobs: each job's requests from its own list, and the order in
/// which the engine asked for them (one ask per completion of that job).
struct JobScript {
    jobs: Vec<std::collections::VecDeque<TimedRequest>>,
    asks: Vec<u16>,
}

impl RequestSource for JobScript {
    fn next_request(&mut self) -> Option<TimedRequest> {
        None
    }

    fn next_request_of(&mut self, job: u16) -> Option<TimedRequest> {
        self.asks.push(job);
        self.jobs.get_mut(usize::from(job))?.pop_front()
    }
}

#[test]
fn timing_closed_jobs_keep_their_own_depths() {
    // One die serves both jobs' random reads in order: with 4 + 1 requests
    // outstanding, 4 of every 5 completions (and so of the engine's asks
    // for a next request) are the deep job's.
    let (config, geometry) = config(&["device.channels=1", "device.chips_per_channel=1"]);
    let mut ftl = PageFtl::new(&geometry, &config.ftl, 1).expect("ftl");
    submit(&mut ftl, &Request { op: Op::Write, start: Lpn(0), pages: 64, stream: StreamId(0) }).expect("fill");
    let reads = |job: u16| {
        (0..400u32)
            .map(|i| TimedRequest { job: Some(job), ..at(0, Op::Read, (i * 7 + u32::from(job)) % 64, 1) })
            .collect()
    };
    let depths = [4, 1];
    let mut source = JobScript { jobs: vec![reads(0), reads(1)], asks: Vec::new() };
    let report = Engine::new(&geometry, &config.timing, &config.ftl)
        .with_job_queues(&[(0, depths[0]), (1, depths[1])])
        .run(&mut ftl, &mut source, 800, &mut |_| {})
        .expect("timed run");
    assert_eq!(report.requests, 800);
    let [deep, shallow] = report.jobs.as_slice() else { panic!("two jobs, got {:?}", report.jobs) };
    assert_eq!((deep.requests, shallow.requests), (400, 400));
    // The initial fill asks each job for its depth.
    assert_eq!(source.asks[..5], [0, 0, 0, 0, 1]);
    let while_both_run = &source.asks[5..305];
    let deep_share = while_both_run.iter().filter(|&&job| job == 0).count() as f64 / while_both_run.len() as f64;
    assert!(within(deep_share, 0.8, 0.05), "the deep job's share of completions: {deep_share}");
    // Little's law: a job's latencies add up to its mean outstanding count
    // times the run's length, which its depth bounds.
    for (job, depth) in report.jobs.iter().zip(depths) {
        let latency = job.latency.as_ref().expect("latencies");
        let outstanding = latency.mean_us * latency.count as f64 / (report.simulated_s * 1e6);
        assert!(outstanding <= f64::from(depth) * 1.01, "{outstanding} outstanding at depth {depth}");
        assert!(outstanding > f64::from(depth) * 0.3, "{outstanding} outstanding at depth {depth}");
    }
}

/// A `small` device (with `overrides`) aged by random overwrites, so GC runs
/// at once, then `requests` requests of its random workload through the
/// engine as configured and through the engine event by event: both
/// reports (events aside) and both layers' counters, and the two event
/// counts.
fn early_reads_against_event_by_event(overrides: &[&str], requests: u64) -> (TimedReport, TimedReport) {
    let (config, geometry) = config(overrides);
    let mut aged = PageFtl::new(&geometry, &config.ftl, 1).expect("ftl");
    let logical = u64::from(geometry.logical_pages);
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    for _ in 0..3 * logical {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let lpn = ((state >> 33) % logical) as u32;
        aged.write(Lpn(lpn), StreamId(0)).expect("ageing write");
    }
    let run = |engine: Engine| {
        let mut ftl = aged.clone();
        let mut workload = crate::workload::Synthetic::new(&config.workload, &geometry, 5);
        let iops = (config.timing.arrival == Arrival::Open).then_some(config.timing.arrival_iops);
        let mut source = SyntheticSource::new(&mut workload, Arrivals::new(iops, 0.1, 6));
        let report = engine.run(&mut ftl, &mut source, requests, &mut |_| {}).expect("timed run");
        (report, ftl.counters().clone())
    };
    let engine = || Engine::new(&geometry, &config.timing, &config.ftl);
    let (early, early_counters) = run(engine());
    let (reference, reference_counters) = run(engine().event_by_event());
    assert_eq!(early_counters, reference_counters, "the layer saw the same operations");
    assert_eq!(TimedReport { events: 0, ..early.clone() }, TimedReport { events: 0, ..reference.clone() });
    assert!(reference.requests == requests && reference.gc_die_time_share > 0.1, "GC ran: {reference:?}");
    (early, reference)
}

#[test]
fn timing_early_reads_give_the_event_by_event_run() {
    let random = ["workload.pattern=\"random\"", "workload.request_pages=1"];
    let cases: [&[&str]; 5] = [
        // Closed loop, writes: GC copies, each a read after a program.
        &["timing.queue_depth=32", "workload.read_fraction=0"],
        // Host reads and background cleaning compete for the dies.
        &["timing.queue_depth=8", "timing.gc_low_blocks=8", "workload.read_fraction=0.5"],
        // Open loop: arrivals between a skipped event and its turn take reads back.
        &[
            "timing.arrival=\"open\"",
            "timing.arrival_iops=3000",
            "timing.gc_low_blocks=8",
            "workload.read_fraction=0.3",
            "workload.trim_fraction=0.05",
        ],
        // A write buffer and several host queues.
        &["timing.write_buffer_pages=32", "timing.queues=4", "timing.queue_depth=4", "workload.read_fraction=0.3"],
        // Multi-page requests across dies.
        &["timing.queue_depth=16", "workload.request_pages=4", "workload.read_fraction=0.4"],
    ];
    for overrides in cases {
        let all: Vec<&str> = random.iter().chain(overrides).copied().collect();
        let (early, reference) = early_reads_against_event_by_event(&all, 20_000);
        assert!(early.events < reference.events, "{overrides:?}: {} against {} events", early.events, reference.events);
    }
}
