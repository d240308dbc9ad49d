//! What a timed run measures: per-operation and per-priority latency
//! histograms (HdrHistogram), throughput overall and as a time series, die
//! time spent on GC, and the cost of stripe read-modify-writes. Observes the
//! engine, never steers it.

use crate::host::Op;
use crate::metrics::Counters;
use crate::timing::latency::LatencyCounts;
use hdrhistogram::Histogram;
use nandlab_convert::f64_of;
use serde::Serialize;

/// Summary of one latency distribution, in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl LatencySummary {
    /// Summarizes a histogram of latencies in nanoseconds; `None` when empty.
    pub fn from_histogram(histogram: &Histogram<u64>) -> Option<Self> {
        let us = |ns: u64| f64_of(ns) / 1e3;
        (!histogram.is_empty()).then(|| Self {
            count: histogram.len(),
            mean_us: histogram.mean() / 1e3,
            p50_us: us(histogram.value_at_quantile(0.50)),
            p99_us: us(histogram.value_at_quantile(0.99)),
            p999_us: us(histogram.value_at_quantile(0.999)),
            max_us: us(histogram.max()),
        })
    }
}

/// One point of the throughput series: what completed inside one interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThroughputPoint {
    /// End of the interval, seconds of simulated time.
    pub time_s: f64,
    pub iops: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
}

/// Latency summaries by operation and by priority class.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyReport {
    pub all: Option<LatencySummary>,
    pub read: Option<LatencySummary>,
    pub write: Option<LatencySummary>,
    pub trim: Option<LatencySummary>,
    pub flush: Option<LatencySummary>,
    pub priority: Option<LatencySummary>,
    pub normal: Option<LatencySummary>,
}

/// How requests with a deadline (real-time jobs) fared.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeadlineReport {
    pub requests: u64,
    /// Requests that completed after their deadline.
    pub misses: u64,
    /// The latest completion after a deadline; 0 when none was missed.
    pub worst_lateness_ms: f64,
}

/// Everything a timed run measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimedReport {
    /// Simulated time from the start to the last completion.
    pub simulated_s: f64,
    /// Simulated time until the flash finished the work requests left
    /// behind (buffered writes, programs after an early acknowledgement);
    /// at least `simulated_s`. Die utilization is taken over this span.
    pub drained_s: f64,
    pub requests: u64,
    pub iops: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub latency: LatencyReport,
    /// Busy array time of all dies over (dies x simulated time).
    pub die_utilization: f64,
    /// Share of the dies' busy time spent on garbage collection.
    pub gc_die_time_share: f64,
    /// Host pages written (before stripe read-modify-writes).
    pub host_pages_written: u64,
    /// Pages read and rewritten by stripe read-modify-writes.
    pub rmw_pages_read: u64,
    pub rmw_pages_rewritten: u64,
    /// Stripes written whole from the merge buffer (no read-modify-write).
    pub stripes_merged: u64,
    /// Partial stripes written because the device had been idle for
    /// `timing.merge_idle_ns` (with a read-modify-write).
    pub stripes_flushed_idle: u64,
    /// Pages read that held no data (never written or trimmed): answered
    /// with zeros by the controller, no flash read, and not counted in
    /// `read_mb_s` (`ftl.unmapped_reads`).
    pub unmapped_read_pages: u64,
    /// Present when requests carried deadlines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadlines: Option<DeadlineReport>,
    pub throughput_series: Vec<ThroughputPoint>,
    /// Per-job results of a run with `[[job]]` tables, by job index (absent without).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobTiming>,
    /// Events the engine processed: a measure of the simulator's own work
    /// (`nandlab bench --timing` prints it per request), not of the device,
    /// so it stays out of the JSON.
    #[serde(skip)]
    pub events: u64,
}

/// What one job's requests saw in a timed run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobTiming {
    /// The job's name (filled in by the driver, which knows the `[[job]]` tables).
    pub name: String,
    pub requests: u64,
    /// The job's active time: from its first request's arrival (a closed
    /// job's first submission) to its last completion. The rates below are
    /// over it, not over the run, so a job that finishes early is rated by
    /// its own time.
    pub active_s: f64,
    /// The mean arrival rate the job asked for (`rate_iops`, less what the
    /// gaps inside bursts take); `None` for a closed loop, whose rate is
    /// its depth over its latency.
    pub offered_iops: Option<f64>,
    /// Requests completed per second of active time: the achieved rate.
    pub iops: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub latency: Option<LatencySummary>,
    /// Flash programs, GC copies and erases the layer made while the job's
    /// requests started (GC a write triggers is its job's, as in counting
    /// mode); background GC steps, buffer flushes started by a completion
    /// and Telomere's expiry erases are no job's.
    pub flash_pages_programmed: u64,
    pub gc_page_copies: u64,
    pub erases: u64,
    /// The job's share of the device's flash programs over the run (the
    /// jobs' shares leave out what is no job's, so they may sum below 1).
    pub flash_write_share: f64,
    /// The job's share of the device's GC page copies over the run.
    pub gc_share: f64,
}

/// What the layer did to flash, the part of [`Counters`] a job is charged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlashCost {
    pub programmed: u64,
    pub gc_copies: u64,
    pub erases: u64,
}

impl FlashCost {
    pub fn of(counters: &Counters) -> Self {
        Self {
            programmed: counters.flash_pages_programmed,
            gc_copies: counters.gc_page_copies,
            erases: counters.erases,
        }
    }

    /// What was done between `before` and `self` (counters only grow).
    #[must_use]
    pub fn since(self, before: Self) -> Self {
        Self {
            programmed: self.programmed.saturating_sub(before.programmed),
            gc_copies: self.gc_copies.saturating_sub(before.gc_copies),
            erases: self.erases.saturating_sub(before.erases),
        }
    }
}

/// One job's running measurements.
#[derive(Clone, Debug)]
struct JobStats {
    latency: LatencyCounts,
    pages_read: u64,
    pages_written: u64,
    cost: FlashCost,
    /// The job's active time: its earliest arrival and latest completion.
    first_arrival_ns: u64,
    last_done_ns: u64,
}

impl JobStats {
    /// Seconds from the first arrival to the last completion (0 before any).
    fn active_s(&self) -> f64 {
        let active_ns = f64_of(self.last_done_ns.saturating_sub(self.first_arrival_ns));
        active_ns / 1e9
    }
}

/// `count` per second over `seconds`; 0 over no time.
fn rate(count: u64, seconds: f64) -> f64 {
    let count = f64_of(count);
    if seconds > 0.0 {
        count / seconds
    } else {
        0.0
    }
}

/// Running measurements of the engine.
#[derive(Clone, Debug)]
pub struct Stats {
    page_size: u64,
    /// Latencies by operation and class, `[op][priority]`: one record per
    /// request. The report's views (all, by operation, by class) are sums
    /// of these cells, which HdrHistogram adds exactly (same bounds).
    latency: [[LatencyCounts; 2]; 4],
    completed: u64,
    pages_read: u64,
    pages_written: u64,
    pub die_busy_ns: u64,
    pub gc_die_busy_ns: u64,
    pub rmw_pages_read: u64,
    pub rmw_pages_rewritten: u64,
    pub stripes_merged: u64,
    pub stripes_flushed_idle: u64,
    pub unmapped_read_pages: u64,
    pub host_pages_written: u64,
    /// Events processed (see [`TimedReport::events`]).
    pub events: u64,
    deadlines: DeadlineReport,
    worst_lateness_ns: u64,
    series: Series,
    last_completion_ns: u64,
    last_busy_ns: u64,
    jobs: Vec<JobStats>,
}

fn op_index(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write => 1,
        Op::Trim => 2,
        Op::Flush => 3,
    }
}

impl Stats {
    pub fn new(page_size: u32, series_interval_ns: u64) -> Self {
        Self {
            page_size: u64::from(page_size),
            latency: Default::default(),
            completed: 0,
            pages_read: 0,
            pages_written: 0,
            die_busy_ns: 0,
            gc_die_busy_ns: 0,
            rmw_pages_read: 0,
            rmw_pages_rewritten: 0,
            stripes_merged: 0,
            stripes_flushed_idle: 0,
            unmapped_read_pages: 0,
            host_pages_written: 0,
            events: 0,
            deadlines: DeadlineReport::default(),
            worst_lateness_ns: 0,
            series: Series::new(series_interval_ns),
            last_completion_ns: 0,
            last_busy_ns: 0,
            jobs: Vec::new(),
        }
    }

    /// Records a request of job `job` (`None`: a run without jobs) that
    /// arrived at `arrival_ns` and completed at `done_ns`; `pages` are the
    /// pages it moved to or from flash.
    pub fn complete(&mut self, op: Op, pages: u32, priority: bool, job: Option<u16>, arrival_ns: u64, done_ns: u64) {
        let latency = done_ns.saturating_sub(arrival_ns).max(1);
        if let Some(job) = job {
            let stats = self.job(job);
            stats.latency.record(latency);
            stats.first_arrival_ns = stats.first_arrival_ns.min(arrival_ns);
            stats.last_done_ns = stats.last_done_ns.max(done_ns);
            match op {
                Op::Read => stats.pages_read += u64::from(pages),
                Op::Write => stats.pages_written += u64::from(pages),
                Op::Trim | Op::Flush => {}
            }
        }
        self.latency[op_index(op)][usize::from(priority)].record(latency);
        self.completed += 1;
        let pages = u64::from(pages);
        match op {
            Op::Read => self.pages_read += pages,
            Op::Write => self.pages_written += pages,
            Op::Trim | Op::Flush => {}
        }
        self.series.complete(done_ns, op, pages * self.page_size);
        self.last_completion_ns = self.last_completion_ns.max(done_ns);
    }

    /// Charges job `job` with what the layer did while one of its requests started.
    pub fn charge(&mut self, job: u16, cost: FlashCost) {
        let charged = &mut self.job(job).cost;
        charged.programmed += cost.programmed;
        charged.gc_copies += cost.gc_copies;
        charged.erases += cost.erases;
    }

    fn job(&mut self, job: u16) -> &mut JobStats {
        let job = usize::from(job);
        if self.jobs.len() <= job {
            self.jobs.resize_with(job + 1, || JobStats {
                latency: LatencyCounts::default(),
                pages_read: 0,
                pages_written: 0,
                cost: FlashCost::default(),
                first_arrival_ns: u64::MAX,
                last_done_ns: 0,
            });
        }
        &mut self.jobs[job]
    }

    /// A request due at `deadline_ns` completed at `done_ns`.
    pub fn deadline(&mut self, deadline_ns: u64, done_ns: u64) {
        self.deadlines.requests += 1;
        if done_ns > deadline_ns {
            self.deadlines.misses += 1;
            self.worst_lateness_ns = self.worst_lateness_ns.max(done_ns - deadline_ns);
        }
    }

    /// A die stays busy until `ns`.
    pub fn busy_until(&mut self, ns: u64) {
        self.last_busy_ns = self.last_busy_ns.max(ns);
    }

    pub fn completed(&self) -> u64 {
        self.completed
    }

    /// The sum of the latency cells `select` picks by (op index, priority);
    /// `None` when they are empty.
    fn latency_sum(&self, select: impl Fn(usize, bool) -> bool) -> Option<Histogram<u64>> {
        let mut sum = LatencyCounts::default();
        for (op, by_class) in self.latency.iter().enumerate() {
            for (class, cell) in by_class.iter().enumerate() {
                if select(op, class == 1) {
                    sum.add(cell);
                }
            }
        }
        (!sum.is_empty()).then(|| sum.histogram())
    }

    fn latency_report(&self) -> LatencyReport {
        let summary = |select: &dyn Fn(usize, bool) -> bool| {
            self.latency_sum(select).and_then(|sum| LatencySummary::from_histogram(&sum))
        };
        let of_op = |op: Op| move |index: usize, _| index == op_index(op);
        LatencyReport {
            all: summary(&|_, _| true),
            read: summary(&of_op(Op::Read)),
            write: summary(&of_op(Op::Write)),
            trim: summary(&of_op(Op::Trim)),
            flush: summary(&of_op(Op::Flush)),
            priority: summary(&|_, priority| priority),
            normal: summary(&|_, priority| !priority),
        }
    }

    /// The report; `device` is what the layer did over the run, of which
    /// each job's shares are taken.
    pub fn report(mut self, dies: u32, device: FlashCost) -> TimedReport {
        let seconds = f64_of(self.last_completion_ns) / 1e9;
        let per_second = |count: u64| rate(count, seconds);
        let megabytes_per_second = |pages: u64| per_second(pages * self.page_size) / 1e6;
        let share = |part: u64, whole: u64| if whole == 0 { 0.0 } else { f64_of(part) / f64_of(whole) };
        let drained_ns = self.last_completion_ns.max(self.last_busy_ns);
        let die_utilization =
            if drained_ns == 0 { 0.0 } else { f64_of(self.die_busy_ns) / (f64::from(dies) * f64_of(drained_ns)) };
        let gc_die_time_share =
            if self.die_busy_ns == 0 { 0.0 } else { f64_of(self.gc_die_busy_ns) / f64_of(self.die_busy_ns) };
        self.series.close(self.last_completion_ns);
        let deadlines = (self.deadlines.requests > 0).then(|| DeadlineReport {
            worst_lateness_ms: f64_of(self.worst_lateness_ns) / 1e6,
            ..self.deadlines.clone()
        });
        TimedReport {
            simulated_s: seconds,
            drained_s: f64_of(drained_ns) / 1e9,
            requests: self.completed,
            iops: per_second(self.completed),
            read_mb_s: megabytes_per_second(self.pages_read),
            write_mb_s: megabytes_per_second(self.pages_written),
            latency: self.latency_report(),
            die_utilization,
            gc_die_time_share,
            host_pages_written: self.host_pages_written,
            rmw_pages_read: self.rmw_pages_read,
            rmw_pages_rewritten: self.rmw_pages_rewritten,
            stripes_merged: self.stripes_merged,
            stripes_flushed_idle: self.stripes_flushed_idle,
            unmapped_read_pages: self.unmapped_read_pages,
            deadlines,
            throughput_series: self.series.points,
            jobs: self
                .jobs
                .iter()
                .map(|job| (job, job.latency.histogram()))
                .map(|(job, latency)| (job, latency, job.active_s()))
                .map(|(job, latency, active_s)| JobTiming {
                    name: String::new(),
                    requests: latency.len(),
                    active_s,
                    offered_iops: None,
                    iops: rate(latency.len(), active_s),
                    read_mb_s: rate(job.pages_read * self.page_size, active_s) / 1e6,
                    write_mb_s: rate(job.pages_written * self.page_size, active_s) / 1e6,
                    latency: LatencySummary::from_histogram(&latency),
                    flash_pages_programmed: job.cost.programmed,
                    gc_page_copies: job.cost.gc_copies,
                    erases: job.cost.erases,
                    flash_write_share: share(job.cost.programmed, device.programmed),
                    gc_share: share(job.cost.gc_copies, device.gc_copies),
                })
                .collect(),
            events: self.events,
        }
    }
}

/// Most points the throughput series keeps. A run longer than this many
/// intervals doubles the interval (merging pairs of points) instead, so the
/// series costs bounded memory and work whatever the simulated time.
pub const SERIES_POINTS_MAX: usize = 100_000;

/// What completed inside one interval.
#[derive(Clone, Copy, Debug, Default)]
struct Bin {
    requests: u64,
    read_bytes: u64,
    write_bytes: u64,
}

impl Bin {
    fn merged(self, other: Bin) -> Bin {
        Bin {
            requests: self.requests + other.requests,
            read_bytes: self.read_bytes + other.read_bytes,
            write_bytes: self.write_bytes + other.write_bytes,
        }
    }
}

/// The throughput series: `closed[i]` covers `[i, i + 1)` intervals, `open`
/// the interval after the last closed one.
#[derive(Clone, Debug)]
struct Series {
    interval_ns: u64,
    closed: Vec<Bin>,
    open: Bin,
    points: Vec<ThroughputPoint>,
}

impl Series {
    fn new(interval_ns: u64) -> Self {
        Self { interval_ns, closed: Vec::new(), open: Bin::default(), points: Vec::new() }
    }

    fn complete(&mut self, done_ns: u64, op: Op, bytes: u64) {
        while (self.closed.len() as u64) < done_ns / self.interval_ns {
            if self.closed.len() == SERIES_POINTS_MAX {
                self.coarsen();
            } else {
                self.closed.push(std::mem::take(&mut self.open));
            }
        }
        self.open.requests += 1;
        match op {
            Op::Read => self.open.read_bytes += bytes,
            Op::Write => self.open.write_bytes += bytes,
            Op::Trim | Op::Flush => {}
        }
    }

    /// Doubles the interval. With an even number of closed bins the open
    /// one falls into the first new interval after them.
    fn coarsen(&mut self) {
        debug_assert!(self.closed.len().is_multiple_of(2));
        self.interval_ns = self.interval_ns.saturating_mul(2);
        self.closed =
            self.closed.chunks(2).map(|pair| pair.iter().fold(Bin::default(), |sum, &bin| sum.merged(bin))).collect();
    }

    /// Turns the bins into points; the last interval ends at the last
    /// completion and may be shorter than the others.
    fn close(&mut self, end_ns: u64) {
        let interval = self.interval_ns;
        for (index, bin) in self.closed.iter().enumerate() {
            self.points.push(point(index as u64 * interval, interval, *bin));
        }
        let start_ns = self.closed.len() as u64 * interval;
        if end_ns > start_ns {
            self.points.push(point(start_ns, end_ns - start_ns, self.open));
        }
    }
}

fn point(start_ns: u64, length_ns: u64, bin: Bin) -> ThroughputPoint {
    let seconds = f64_of(length_ns) / 1e9;
    ThroughputPoint {
        time_s: f64_of(start_ns + length_ns) / 1e9,
        iops: f64_of(bin.requests) / seconds,
        read_mb_s: f64_of(bin.read_bytes) / 1e6 / seconds,
        write_mb_s: f64_of(bin.write_bytes) / 1e6 / seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_run_with_a_fine_interval_keeps_the_series_bounded() {
        let mut series = Series::new(1_000);
        let completions: Vec<u64> = (0..1_000u64).map(|i| i * i * 1_000_000_007).collect();
        for &done in &completions {
            series.complete(done, Op::Write, 4096);
        }
        let end = *completions.last().expect("completions");
        series.close(end);
        assert!(series.points.len() <= SERIES_POINTS_MAX + 1, "{} points", series.points.len());
        let mut start_s = 0.0;
        let mut requests = 0.0;
        for point in &series.points {
            requests += point.iops * (point.time_s - start_s);
            start_s = point.time_s;
        }
        assert!((requests - 1_000.0).abs() < 1e-3, "every completion is in the series: {requests}");
        let end_s = f64_of(end) / 1e9;
        assert!((start_s - end_s).abs() < 1e-6, "the series ends at the last completion");
    }
}
