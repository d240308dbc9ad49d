//! Throughput admission control (Section 5): EDF with a non-preemptive block
//! erasure, eq. (17)-(20), with Telomere's costs (eq. 18-19) or WAO-GC's
//! (eq. 25-26); and bank reservation, the average-rate test used for
//! MultiLog-Oracle in Section 6.1.6.

use crate::{DeviceParams, Task};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The paper's time unit: periods in Table 3 and Section 4.2 are milliseconds.
pub const TIME_QUANTUM_DEFAULT: Duration = Duration::from_millis(1);

/// Which write and GC capacities enter eq. (20).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteCost {
    /// Eq. (18)-(19): C^w = ⌈w/S_chips⌉·t_w plus a GC task erasing one block.
    Telomere,
    /// Eq. (25)-(26): every page write may carry one partial GC step,
    /// C^w = ⌈w/S_chips⌉·(t_w + max(t_e, t_r + t_w)), and C^g = 0.
    WaoGc,
}

/// Utilization terms of eq. (20), each a fraction of one EDF "processor".
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct EdfUtilization {
    /// t_e / min(T): blocking by one non-preemptive erasure (Baker's SRP).
    pub blocking: f64,
    /// Σ C^r/T^r, Σ C^w/T^w, Σ C^g/T^g.
    pub read: f64,
    pub write: f64,
    pub gc: f64,
}

impl EdfUtilization {
    /// Left-hand side of eq. (20).
    #[must_use]
    pub fn total(&self) -> f64 {
        self.blocking + self.read + self.write + self.gc
    }

    /// Eq. (20): total ≤ 1.
    #[must_use]
    pub fn schedulable(&self) -> bool {
        self.total() <= 1.0 + 1e-12
    }
}

/// The device figures eq. (17)-(20) need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThroughputModel {
    /// Read stripe width: g capped at S_chips (a read of g pages on g chips).
    pub stripe_width: u64,
    pub chips: u64,
    pub pages_per_block: u64,
    pub read: Duration,
    pub write: Duration,
    pub erase: Duration,
    pub cost: WriteCost,
    /// Time unit in which eq. (19)'s C^g = ⌈t_e / S_chips⌉ is rounded up. The
    /// paper states periods in milliseconds; rounding to 1 ms gives
    /// C^g = 1 ms on the 1 TB drive, and only with it does eq. (20) reproduce
    /// both Telomere's 83 % and WAO-GC's 38 % (see docs/telomere.md). 1 ns
    /// makes C^g the exact t_e / S_chips.
    pub time_quantum: Duration,
}

impl ThroughputModel {
    #[must_use]
    pub fn new(device: &DeviceParams, granularity: u64, cost: WriteCost) -> Self {
        Self {
            stripe_width: granularity.clamp(1, device.chips()),
            chips: device.chips(),
            pages_per_block: device.pages_per_block,
            read: device.read,
            write: device.write,
            erase: device.erase,
            cost,
            time_quantum: TIME_QUANTUM_DEFAULT,
        }
    }

    /// C^r, eq. (17): ⌈r / g⌉·t_r.
    #[must_use]
    pub fn read_capacity(&self, pages: u64) -> Duration {
        scale(self.read, pages.div_ceil(self.stripe_width))
    }

    /// C^w, eq. (18) or (25).
    #[must_use]
    pub fn write_capacity(&self, pages: u64) -> Duration {
        let rounds = pages.div_ceil(self.chips);
        match self.cost {
            WriteCost::Telomere => scale(self.write, rounds),
            WriteCost::WaoGc => scale(self.write + self.erase.max(self.read + self.write), rounds),
        }
    }

    /// The GC task of a writing task, eq. (19): (C^g, T^g), or `None` under
    /// eq. (26). C^g = ⌈t_e / S_chips⌉, the ceiling taken in nanoseconds: one
    /// erasure's time shared by the chips. T^g = T^w / ⌈w/P⌉ when w > P (the
    /// task fills ⌈w/P⌉ blocks a period), else T^w·⌊P/w⌋ (one block fills
    /// every ⌊P/w⌋ periods). The ceiling is taken in [`Self::time_quantum`]s.
    #[must_use]
    pub fn gc_task(&self, write_pages: u64, write_period: Duration) -> Option<(Duration, Duration)> {
        if self.cost == WriteCost::WaoGc || write_pages == 0 {
            return None;
        }
        let quantum_ns = self.time_quantum.as_nanos().max(1);
        let quanta = self.erase.as_nanos().div_ceil(u128::from(self.chips) * quantum_ns);
        let capacity = Duration::from_nanos(u64::try_from(quanta * quantum_ns).unwrap_or(u64::MAX));
        let period = if write_pages > self.pages_per_block {
            let blocks = u32::try_from(write_pages.div_ceil(self.pages_per_block)).unwrap_or(u32::MAX);
            write_period / blocks
        } else {
            scale(write_period, self.pages_per_block / write_pages)
        };
        Some((capacity, period))
    }

    /// The terms of eq. (20) for a task set; min(T) runs over every T^r, T^w, T^g.
    #[must_use]
    pub fn edf(&self, tasks: &[Task]) -> EdfUtilization {
        let mut utilization = EdfUtilization::default();
        let mut shortest_period = Duration::MAX;
        for task in tasks {
            if let Some(read) = task.read {
                utilization.read += ratio(self.read_capacity(read.pages), read.period);
                shortest_period = shortest_period.min(read.period);
            }
            if let Some(write) = task.write {
                utilization.write += ratio(self.write_capacity(write.pages), write.period);
                shortest_period = shortest_period.min(write.period);
                if let Some((capacity, period)) = self.gc_task(write.pages, write.period) {
                    utilization.gc += ratio(capacity, period);
                    shortest_period = shortest_period.min(period);
                }
            }
        }
        if shortest_period != Duration::MAX {
            utilization.blocking = ratio(self.erase, shortest_period);
        }
        utilization
    }
}

/// Bank reservation (Huang and Chang, TODAES 2018, the paper's [16]) for a
/// drive with an average write amplification `waf`: the task set is admitted
/// when, on average, the chips ("banks") can serve the host reads, the host
/// writes with their WAF − 1 GC copies (one read and one program each) and
/// the erasures of the WAF·w/P blocks they fill. Returns the fraction of the
/// chips' time needed; admitted when ≤ 1. Average only: no deadline guarantee.
#[must_use]
pub fn bank_reservation_load(device: &DeviceParams, tasks: &[Task], waf: f64) -> f64 {
    let (read, write, erase) = (device.read.as_secs_f64(), device.write.as_secs_f64(), device.erase.as_secs_f64());
    #[allow(clippy::cast_precision_loss)]
    let pages_per_block = device.pages_per_block as f64;
    let busy_seconds_per_second: f64 = tasks
        .iter()
        .map(|task| {
            let flash_writes = task.write_pages_per_second() * waf;
            let gc_copies = task.write_pages_per_second() * (waf - 1.0).max(0.0);
            task.read_pages_per_second() * read
                + flash_writes * write
                + gc_copies * read
                + flash_writes / pages_per_block * erase
        })
        .sum();
    #[allow(clippy::cast_precision_loss)]
    let chips = device.chips() as f64;
    busy_seconds_per_second / chips
}

fn scale(duration: Duration, factor: u64) -> Duration {
    u32::try_from(factor).ok().and_then(|factor| duration.checked_mul(factor)).unwrap_or(Duration::MAX)
}

fn ratio(capacity: Duration, period: Duration) -> f64 {
    capacity.as_secs_f64() / period.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Periodic;

    fn task(read: u64, read_ms: u64, write: u64, write_ms: u64) -> Task {
        Task {
            name: "t".to_owned(),
            read: Some(Periodic { pages: read, period: Duration::from_millis(read_ms) }),
            write: Some(Periodic { pages: write, period: Duration::from_millis(write_ms) }),
            lifetime_periods: 10,
        }
    }

    #[test]
    fn eq_17_to_20_on_one_striped_task() {
        let device = DeviceParams::telomere_1tb();
        let mut model = ThroughputModel::new(&device, 64, WriteCost::Telomere);
        let utilization = model.edf(&[task(64, 10, 64, 20)]);
        // C^g = ⌈2.7 ms / 64⌉ = 1 ms in the paper's millisecond unit, every T^g = 20 ms·⌊128/64⌋.
        assert!((utilization.gc - 1.0 / 40.0).abs() < 1e-12);
        model.time_quantum = Duration::from_nanos(1);
        let utilization = model.edf(&[task(64, 10, 64, 20)]);
        // C^r = ⌈64/64⌉·0.2 ms over 10 ms; C^w = ⌈64/64⌉·0.7 ms over 20 ms.
        assert!((utilization.read - 0.02).abs() < 1e-12);
        assert!((utilization.write - 0.035).abs() < 1e-12);
        // C^g = ⌈2.7 ms / 64⌉ = 42,188 ns every T^g = 20 ms·⌊128/64⌋ = 40 ms.
        assert!((utilization.gc - 42_188e-9 / 0.040).abs() < 1e-12);
        // The shortest period is the 10 ms read period.
        assert!((utilization.blocking - 0.27).abs() < 1e-12);
        assert!(utilization.schedulable());
    }

    #[test]
    fn wao_gc_pays_a_partial_gc_step_per_write_and_has_no_gc_task() {
        let device = DeviceParams::telomere_1tb();
        let model = ThroughputModel::new(&device, 64, WriteCost::WaoGc);
        assert_eq!(model.write_capacity(65), Duration::from_micros(2 * (700 + 2700)));
        assert_eq!(model.gc_task(64, Duration::from_millis(20)), None);
    }

    #[test]
    fn gc_period_follows_eq_19() {
        let model = ThroughputModel::new(&DeviceParams::telomere_1tb(), 64, WriteCost::Telomere);
        let period = Duration::from_millis(30);
        assert_eq!(model.gc_task(300, period).map(|gc| gc.1), Some(Duration::from_millis(10)));
        assert_eq!(model.gc_task(50, period).map(|gc| gc.1), Some(Duration::from_millis(60)));
    }
}
