//! Throughput admission control (Section 5): EDF with a non-preemptive block
//! erasure, eq. (17)-(20), with Telomere's costs (eq. 18-19) or WAO-GC's
//! (eq. 25-26); and bank reservation, the average-rate test used for
//! MultiLog-Oracle in Section 6.1.6.

use crate::{DeviceParams, Task};
use nandlab_convert::f64_of;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which write and GC capacities enter eq. (20).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteCost {
    /// Eq. (18)-(19): C^w = ⌈w/chips⌉·t_w plus a GC task erasing one block,
    /// "chips" as chosen by [`WriteSpread`].
    Telomere,
    /// Eq. (25)-(26): every page write may carry one partial GC step,
    /// C^w = ⌈w/S_chips⌉·(t_w + max(t_e, t_r + t_w)), and C^g = 0. WAO-GC is a
    /// page-mapped FTL that stripes every write over all chips.
    WaoGc,
}

/// Over how many chips a Telomere job's writes and its GC task's erasures are
/// spread in eq. (18)-(19).
///
/// The paper charges ⌈w/S_chips⌉·t_w and ⌈t_e/S_chips⌉, as if every job were
/// spread over all chips, while its placement (Section 4) writes a partition
/// into one stripe of g open blocks on g chips. Admission must charge what the
/// placement does: at g = 1 a job of w pages occupies one chip for w·t_w.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum WriteSpread {
    /// Over the partition's stripe of min(g, S_chips) chips:
    /// C^w = ⌈w/min(g, S_chips)⌉·t_w and C^g = ⌈t_e/min(g, S_chips)⌉. What
    /// nandlab's placement FTL does.
    #[default]
    Stripe,
    /// Over all S_chips chips, eq. (18)-(19) as printed. Sound only for an FTL
    /// that spreads every job over every chip; equal to `Stripe` at g ≥ S_chips.
    AllChips,
}

/// The unit in which eq. (19)'s C^g is rounded up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum GcRounding {
    /// C^g exact (to the nanosecond): 42,188 ns for t_e = 2.7 ms on 64 chips.
    #[default]
    Exact,
    /// C^g rounded up to whole milliseconds, the paper's time unit (Table 3,
    /// Section 4.2): 1 ms on the 1 TB drive. Only with it does Figure 9's
    /// Telomere throughput come out near the paper's 83 % (docs/telomere.md).
    Millisecond,
}

impl GcRounding {
    /// The rounding unit.
    #[must_use]
    pub fn quantum(self) -> Duration {
        match self {
            Self::Exact => Duration::from_nanos(1),
            Self::Millisecond => Duration::from_millis(1),
        }
    }
}

/// The modelling choices of eq. (18)-(19) an [`crate::policy::AdmissionContext`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ThroughputOptions {
    pub write_spread: WriteSpread,
    pub gc_rounding: GcRounding,
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
    /// Stripe width: g capped at S_chips (a read or write of g pages on g chips).
    pub stripe_width: u64,
    pub chips: u64,
    pub pages_per_block: u64,
    pub read: Duration,
    pub write: Duration,
    pub erase: Duration,
    pub cost: WriteCost,
    pub options: ThroughputOptions,
}

impl ThroughputModel {
    #[must_use]
    pub fn new(device: &DeviceParams, granularity: u64, cost: WriteCost, options: ThroughputOptions) -> Self {
        Self {
            stripe_width: granularity.clamp(1, device.chips().max(1)),
            chips: device.chips().max(1),
            pages_per_block: device.pages_per_block.max(1),
            read: device.read,
            write: device.write,
            erase: device.erase,
            cost,
            options,
        }
    }

    /// Chips a Telomere job's writes and its GC erasures are spread over.
    #[must_use]
    pub fn write_chips(&self) -> u64 {
        match self.options.write_spread {
            WriteSpread::Stripe => self.stripe_width,
            WriteSpread::AllChips => self.chips,
        }
    }

    /// C^r, eq. (17): ⌈r / g⌉·t_r.
    #[must_use]
    pub fn read_capacity(&self, pages: u64) -> Duration {
        scale(self.read, pages.div_ceil(self.stripe_width))
    }

    /// C^w, eq. (18) with [`Self::write_chips`], or eq. (25) over all chips.
    #[must_use]
    pub fn write_capacity(&self, pages: u64) -> Duration {
        match self.cost {
            WriteCost::Telomere => scale(self.write, pages.div_ceil(self.write_chips())),
            WriteCost::WaoGc => scale(self.write + self.erase.max(self.read + self.write), pages.div_ceil(self.chips)),
        }
    }

    /// The GC task of a writing task, eq. (19): (C^g, T^g), or `None` under
    /// eq. (26). C^g = ⌈t_e / chips⌉ with [`Self::write_chips`], rounded up
    /// as [`ThroughputOptions::gc_rounding`] says: one erasure's time shared
    /// by the chips the task's blocks lie on. T^g = T^w / ⌈w/P⌉ when w > P
    /// (the task fills ⌈w/P⌉ blocks a period), else T^w·⌊P/w⌋ (one block
    /// fills every ⌊P/w⌋ periods).
    #[must_use]
    pub fn gc_task(&self, write_pages: u64, write_period: Duration) -> Option<(Duration, Duration)> {
        if self.cost == WriteCost::WaoGc || write_pages == 0 {
            return None;
        }
        let quantum_ns = self.options.gc_rounding.quantum().as_nanos();
        let quanta = self.erase.as_nanos().div_ceil(u128::from(self.write_chips()) * quantum_ns);
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
        let mut sums = EdfSums::default();
        for task in tasks {
            sums.add(self, task);
        }
        sums.utilization(self)
    }
}

/// Eq. (20)'s sums over tasks added one at a time, so that incremental
/// admission checks a candidate in O(1); [`ThroughputModel::edf`] adds them
/// the same way, so both give the same numbers to the bit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EdfSums {
    read: f64,
    write: f64,
    gc: f64,
    shortest_period: Duration,
}

impl Default for EdfSums {
    fn default() -> Self {
        Self { read: 0.0, write: 0.0, gc: 0.0, shortest_period: Duration::MAX }
    }
}

impl EdfSums {
    pub(crate) fn add(&mut self, model: &ThroughputModel, task: &Task) {
        if let Some(read) = task.read {
            self.read += ratio(model.read_capacity(read.pages), read.period);
            self.shortest_period = self.shortest_period.min(read.period);
        }
        if let Some(write) = task.write {
            self.write += ratio(model.write_capacity(write.pages), write.period);
            self.shortest_period = self.shortest_period.min(write.period);
            if let Some((capacity, period)) = model.gc_task(write.pages, write.period) {
                self.gc += ratio(capacity, period);
                self.shortest_period = self.shortest_period.min(period);
            }
        }
    }

    pub(crate) fn utilization(&self, model: &ThroughputModel) -> EdfUtilization {
        let blocking =
            if self.shortest_period == Duration::MAX { 0.0 } else { ratio(model.erase, self.shortest_period) };
        EdfUtilization { blocking, read: self.read, write: self.write, gc: self.gc }
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
    let mut busy = BankBusy::default();
    for task in tasks {
        busy.add(device, task, waf);
    }
    busy.load(device)
}

/// Bank reservation's busy time summed over tasks added one at a time (for
/// incremental admission; [`bank_reservation_load`] adds them the same way).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BankBusy {
    seconds_per_second: f64,
}

impl BankBusy {
    pub(crate) fn add(&mut self, device: &DeviceParams, task: &Task, waf: f64) {
        let (read, write, erase) = (device.read.as_secs_f64(), device.write.as_secs_f64(), device.erase.as_secs_f64());
        let pages_per_block = f64_of(device.pages_per_block);
        let flash_writes = task.write_pages_per_second() * waf;
        let gc_copies = task.write_pages_per_second() * (waf - 1.0).max(0.0);
        self.seconds_per_second += task.read_pages_per_second() * read
            + flash_writes * write
            + gc_copies * read
            + flash_writes / pages_per_block * erase;
    }

    pub(crate) fn load(&self, device: &DeviceParams) -> f64 {
        self.seconds_per_second / f64_of(device.chips())
    }
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
        let mut model = ThroughputModel::new(&device, 64, WriteCost::Telomere, ThroughputOptions::default());
        model.options.gc_rounding = GcRounding::Millisecond;
        let utilization = model.edf(&[task(64, 10, 64, 20)]);
        // C^g = ⌈2.7 ms / 64⌉ = 1 ms in the paper's millisecond unit, every T^g = 20 ms·⌊128/64⌋.
        assert!((utilization.gc - 1.0 / 40.0).abs() < 1e-12);
        model.options.gc_rounding = GcRounding::Exact;
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
        let model = ThroughputModel::new(&device, 8, WriteCost::WaoGc, ThroughputOptions::default());
        assert_eq!(model.write_capacity(65), Duration::from_micros(2 * (700 + 2700)));
        assert_eq!(model.gc_task(64, Duration::from_millis(20)), None);
    }

    #[test]
    fn gc_period_follows_eq_19() {
        let model =
            ThroughputModel::new(&DeviceParams::telomere_1tb(), 64, WriteCost::Telomere, ThroughputOptions::default());
        let period = Duration::from_millis(30);
        assert_eq!(model.gc_task(300, period).map(|gc| gc.1), Some(Duration::from_millis(10)));
        assert_eq!(model.gc_task(50, period).map(|gc| gc.1), Some(Duration::from_millis(60)));
    }

    /// Issue 15: on `cosmos` a task writing 32 pages every 10 ms at g = 1 was
    /// admitted with load 0.353 and then missed every deadline, because its
    /// partition lies on one chip and 32 programs there take 22.4 ms.
    #[test]
    fn a_job_is_charged_on_its_stripe_not_on_all_chips() {
        let device = DeviceParams::cosmos();
        let writer = Task::writer("w", 32, Duration::from_millis(10), 20);
        let mut model = ThroughputModel::new(&device, 1, WriteCost::Telomere, ThroughputOptions::default());
        assert_eq!(model.write_capacity(32), Duration::from_micros(32 * 700));
        assert_eq!(model.gc_task(32, Duration::from_millis(10)).map(|gc| gc.0), Some(device.erase));
        assert!(!model.edf(std::slice::from_ref(&writer)).schedulable());
        model.options.write_spread = WriteSpread::AllChips;
        assert_eq!(model.write_capacity(32), Duration::from_micros(700));
        assert!(model.edf(&[writer]).schedulable(), "the printed eq. (18) admits it");
        // At g = S_chips both readings agree.
        let striped = ThroughputModel::new(&device, 32, WriteCost::Telomere, ThroughputOptions::default());
        assert_eq!(striped.write_capacity(32), model.write_capacity(32));
        assert_eq!(striped.gc_task(32, Duration::from_millis(10)), model.gc_task(32, Duration::from_millis(10)));
    }
}
