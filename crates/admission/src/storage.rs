//! Storage admission control (Section 4): how many flash blocks a task set
//! needs when every block holds only data that expires together, so that GC
//! is only a block erasure.
//!
//! - SiP (Section 4.1): each task gets its own blocks, eq. (5)-(7), or
//!   eq. (8)-(10) without the w_i < g·P assumption;
//! - SharP (Section 4.2): tasks with similar data lifetime share blocks,
//!   eq. (12)-(14) or eq. (15)-(16), partitioned by Algorithm 1;
//! - eq. (11): the task set is admitted if the blocks needed fit in S_blocks·λ.
//!
//! The result is a [`StoragePlan`]: partitions of tasks, the blocks each
//! partition needs and its data lifetime, the input an FTL placement policy
//! uses to give every partition its own blocks.

use crate::{AdmissionError, DeviceParams, Task};
use nandlab_convert::{f64_of, saturating};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Block allocation algorithm of Section 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Placement {
    /// Single Task Placement: one partition per task.
    Sip,
    /// Shared Task Placement: Algorithm 1's partitions.
    Sharp,
}

impl Placement {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Sip => "SiP",
            Self::Sharp => "SharP",
        }
    }
}

/// Which form of the block equations to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum WriteSizeModel {
    /// Assume w_i < g·P: eq. (5)-(7) and (12)-(14).
    SmallWrites,
    /// No assumption on w_i: eq. (8)-(10) and (15)-(16). Whole stripes of g
    /// blocks written in one period are counted apart (K′), the remainder
    /// w_i mod g·P is placed like a small write. Equals `SmallWrites` when
    /// w_i < g·P.
    #[default]
    General,
}

/// The pages a task writes while a block erasure is in progress, the
/// `w_i · ⌈t_e / T_i^w⌉` term of eq. (6), (7), (10), (13) and (16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EraseAllowance {
    /// ⌈w_i · t_e / T_i^w⌉: the pages written at the task's rate during one
    /// erasure. This is the form that reproduces the worked example of
    /// Section 4.2 (opt1 = 20, opt2 = 19, H([τ0, τ1]) = 11).
    #[default]
    Prorated,
    /// w_i · ⌈t_e / T_i^w⌉ as printed: a whole period's pages for every
    /// started period, the worst case when a job releases all w_i pages at
    /// once. It gives H([τ0, τ1]) = 12 and opt1 = 21, opt2 = 20 in Section
    /// 4.2's example, so the paper's numbers were not computed this way.
    #[serde(alias = "per-period")]
    #[cfg_attr(feature = "clap", value(alias = "per-period"))]
    Printed,
}

/// Parameters of the block equations: P, g, t_e, S_chips and the two modelling choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageModel {
    /// g: pages per read/write request, striped over g chips.
    pub granularity: u64,
    pub pages_per_block: u64,
    pub chips: u64,
    pub erase: Duration,
    pub write_size: WriteSizeModel,
    pub erase_allowance: EraseAllowance,
}

impl StorageModel {
    pub fn new(device: &DeviceParams, granularity: u64) -> Result<Self, AdmissionError> {
        if granularity == 0 {
            return Err(AdmissionError::InvalidParameter {
                name: "granularity",
                reason: "must be at least 1 page".to_owned(),
            });
        }
        Ok(Self {
            granularity,
            pages_per_block: device.pages_per_block,
            chips: device.chips(),
            erase: device.erase,
            write_size: WriteSizeModel::default(),
            erase_allowance: EraseAllowance::default(),
        })
    }

    /// Chips a request is striped over: g, but never more than S_chips
    /// (Section 6.1.3: "there will not be any throughput or storage cost
    /// increase for g > 64" on the 64-chip drive).
    #[must_use]
    pub fn stripe_width(&self) -> u64 {
        self.granularity.min(self.chips)
    }

    /// g·P: pages in one stripe of blocks.
    fn stripe_pages(&self) -> u64 {
        self.stripe_width() * self.pages_per_block
    }

    /// Pages per period placed in partially filled blocks: w_i, or
    /// w_i mod g·P without the w_i < g·P assumption (eq. 8, 15).
    #[must_use]
    pub fn partial_pages(&self, task: &Task) -> u64 {
        match self.write_size {
            WriteSizeModel::SmallWrites => task.write_pages(),
            WriteSizeModel::General => task.write_pages() % self.stripe_pages(),
        }
    }

    /// K(τ_i), the most valid pages the task keeps in partial blocks:
    /// eq. (5) K = w_i·(l_i^w + 1), or eq. (8) with w_i mod g·P.
    #[must_use]
    pub fn valid_pages(&self, task: &Task) -> u64 {
        self.partial_pages(task).saturating_mul(task.lifetime_periods.saturating_add(1))
    }

    /// K′(τ_i), eq. (9): blocks holding whole stripes, g·⌊w_i / g·P⌋·(l_i^w + 1).
    /// The paper prints ⌈·⌉, which would charge g·(l+1) blocks to every task
    /// with w_i < g·P and break the reduction of eq. (10) to eq. (7); a whole
    /// stripe exists only ⌊·⌋ times per period.
    #[must_use]
    pub fn full_stripe_blocks(&self, task: &Task) -> u64 {
        match self.write_size {
            WriteSizeModel::SmallWrites => 0,
            WriteSizeModel::General => {
                let stripes = task.write_pages() / self.stripe_pages();
                (self.stripe_width() * stripes).saturating_mul(task.lifetime_periods.saturating_add(1))
            }
        }
    }

    /// The erase term of eq. (6)/(7)/(10)/(13)/(16), see [`EraseAllowance`].
    #[must_use]
    pub fn erase_pages(&self, task: &Task) -> u64 {
        let Some(write) = task.write else { return 0 };
        let period_ns = write.period.as_nanos().max(1);
        let erase_ns = self.erase.as_nanos();
        let pages = match self.erase_allowance {
            EraseAllowance::Prorated => (u128::from(write.pages) * erase_ns).div_ceil(period_ns),
            EraseAllowance::Printed => u128::from(write.pages) * erase_ns.div_ceil(period_ns),
        };
        u64::try_from(pages).unwrap_or(u64::MAX)
    }

    /// H_g(τ_i): blocks a task needs on its own. Eq. (7)
    /// g·(⌈(K + erase) / g·P⌉ + 1), plus K′ in eq. (10). With g = 1 this is
    /// eq. (6). A task without partially filled blocks needs no "+1" stripe.
    #[must_use]
    pub fn task_blocks(&self, task: &Task) -> u64 {
        let full = self.full_stripe_blocks(task);
        if self.partial_pages(task) == 0 {
            return full;
        }
        let pages = self.valid_pages(task).saturating_add(self.erase_pages(task));
        self.stripe_width().saturating_mul(pages.div_ceil(self.stripe_pages()) + 1).saturating_add(full)
    }

    /// Q(τ_i, set), eq. (12) / (15): the task's share of the set's write rate
    /// into partially filled blocks.
    #[must_use]
    pub fn share(&self, task: &Task, set: &[&Task]) -> f64 {
        let total: f64 = set.iter().map(|member| self.partial_rate(member)).sum();
        if total > 0.0 {
            self.partial_rate(task) / total
        } else {
            0.0
        }
    }

    /// J(τ_j, set), eq. (13): blocks τ_j needs while sharing blocks with the
    /// set, g·(⌈(K + erase) / (g·P·Q)⌉ + 1). Eq. (16) adds K′(τ_j); see
    /// [`StorageModel::partition_blocks`] for how a partition counts K′.
    #[must_use]
    pub fn shared_task_blocks(&self, task: &Task, set: &[&Task]) -> u64 {
        let share = self.share(task, set);
        if share <= 0.0 {
            return self.full_stripe_blocks(task);
        }
        let pages = self.valid_pages(task).saturating_add(self.erase_pages(task));
        let stripes = ceil_tolerant(f64_of(pages) / (f64_of(self.stripe_pages()) * share));
        self.stripe_width().saturating_mul(stripes.saturating_add(1)).saturating_add(self.full_stripe_blocks(task))
    }

    /// H_g(set), eq. (14): max_j J(τ_j, set) for the partially filled blocks,
    /// plus the whole-stripe blocks K′ of every member (eq. 16 prints K′(τ_i)
    /// of one task; each member's whole stripes occupy their own blocks, so the
    /// partition needs all of them). For one task this is eq. (7)/(10)
    /// (footnote 2).
    #[must_use]
    pub fn partition_blocks(&self, set: &[&Task]) -> u64 {
        let mut load = PartitionLoad::default();
        for task in set {
            load.add(self, task);
        }
        load.blocks(self)
    }

    /// w_i mod g·P / T_i^w in pages per second: the rate of eq. (12)/(15).
    fn partial_rate(&self, task: &Task) -> f64 {
        task.write.map_or(0.0, |write| f64_of(self.partial_pages(task)) / write.period.as_secs_f64())
    }

    /// How long the partition must hold one unit of τ_j's write rate:
    /// (K + erase) / rate. Then J(τ_j) = g·(⌈R·residence_j / g·P⌉ + 1) with R
    /// the partition's total rate, because Q_j = rate_j / R.
    fn residence_seconds(&self, task: &Task) -> f64 {
        let rate = self.partial_rate(task);
        let pages = f64_of(self.valid_pages(task).saturating_add(self.erase_pages(task)));
        if rate > 0.0 {
            pages / rate
        } else {
            0.0
        }
    }
}

/// Ceiling that treats values within 1e-9 (relative) of an integer as that
/// integer, so that e.g. 8 / (8 · 7/7) is 1 and not 2 after rounding error.
fn ceil_tolerant(value: f64) -> u64 {
    let nearest = value.round();
    let rounded = if (value - nearest).abs() <= 1e-9 * nearest.abs().max(1.0) { nearest } else { value.ceil() };
    // Block counts are far below 2^53; the conversion saturates on overflow.
    saturating(rounded.max(0.0))
}

/// Running totals that give eq. (14) for a growing partition in O(1) per task.
#[derive(Debug, Clone, Copy, Default)]
struct PartitionLoad {
    partial_rate: f64,
    longest_residence_seconds: f64,
    full_stripe_blocks: u64,
    has_partial: bool,
}

impl PartitionLoad {
    fn of(model: &StorageModel, tasks: &[&Task]) -> Self {
        let mut load = Self::default();
        for task in tasks {
            load.add(model, task);
        }
        load
    }

    fn add(&mut self, model: &StorageModel, task: &Task) {
        self.full_stripe_blocks = self.full_stripe_blocks.saturating_add(model.full_stripe_blocks(task));
        if model.partial_pages(task) > 0 {
            self.has_partial = true;
            self.partial_rate += model.partial_rate(task);
            self.longest_residence_seconds = self.longest_residence_seconds.max(model.residence_seconds(task));
        }
    }

    /// This load with one task's own load (`PartitionLoad::of` the task)
    /// added: the same numbers as [`Self::add`] of the task.
    fn joined(mut self, single: &Self) -> Self {
        self.full_stripe_blocks = self.full_stripe_blocks.saturating_add(single.full_stripe_blocks);
        if single.has_partial {
            self.has_partial = true;
            self.partial_rate += single.partial_rate;
            self.longest_residence_seconds = self.longest_residence_seconds.max(single.longest_residence_seconds);
        }
        self
    }

    fn blocks(&self, model: &StorageModel) -> u64 {
        if !self.has_partial {
            return self.full_stripe_blocks;
        }
        let stripes = ceil_tolerant(self.partial_rate * self.longest_residence_seconds / f64_of(model.stripe_pages()));
        model.stripe_width().saturating_mul(stripes.saturating_add(1)).saturating_add(self.full_stripe_blocks)
    }
}

/// One group of tasks sharing blocks (one task under SiP).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Partition {
    /// Indices into the task slice the plan was made for.
    pub tasks: Vec<usize>,
    /// Blocks reserved for the partition (H_g of eq. 7/10/14/16).
    pub blocks: u64,
    /// Chips each write of the partition is striped over (g capped at S_chips).
    pub stripe_width: u64,
    /// The longest T^w·(l^w + 1) among the members: a block written now is
    /// erasable after at most this long.
    pub longest_data_lifetime: Duration,
    /// Total write rate of the members, pages per second.
    pub write_pages_per_second: f64,
}

/// The outcome of storage admission for a task set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoragePlan {
    pub placement: Placement,
    pub partitions: Vec<Partition>,
    /// D of eq. (11): blocks the partitions need together.
    pub blocks_needed: u64,
    /// ⌊S_blocks·λ⌋, the right-hand side of eq. (11).
    pub blocks_available: u64,
}

impl StoragePlan {
    /// Eq. (11): D ≤ S_blocks·λ.
    #[must_use]
    pub fn fits(&self) -> bool {
        self.blocks_needed <= self.blocks_available
    }

    /// The partition holding task `task` (tasks that never write have none).
    #[must_use]
    pub fn partition_of(&self, task: usize) -> Option<usize> {
        self.partitions.iter().position(|partition| partition.tasks.contains(&task))
    }
}

/// ⌊S_blocks·λ⌋ for eq. (11).
#[must_use]
pub fn blocks_available(device: &DeviceParams, utilization: f64) -> u64 {
    saturating((f64_of(device.blocks()) * utilization + 1e-9).floor().max(0.0))
}

/// Plans the task set with `placement` and checks eq. (11) against
/// `blocks_available`. Tasks that do not write need no blocks.
#[must_use]
pub fn plan(model: &StorageModel, tasks: &[Task], placement: Placement, blocks_available: u64) -> StoragePlan {
    let writers: Vec<usize> = (0..tasks.len()).filter(|&index| tasks[index].write_pages() > 0).collect();
    let groups = match placement {
        Placement::Sip => writers.into_iter().map(|index| vec![index]).collect(),
        Placement::Sharp => sharp_partitions(model, tasks, writers),
    };
    let partitions: Vec<Partition> = groups.into_iter().map(|group| partition(model, tasks, group)).collect();
    let blocks_needed = saturate(partitions.iter().map(|partition| u128::from(partition.blocks)).sum());
    StoragePlan { placement, partitions, blocks_needed, blocks_available }
}

fn partition(model: &StorageModel, tasks: &[Task], members: Vec<usize>) -> Partition {
    let refs: Vec<&Task> = members.iter().map(|&index| &tasks[index]).collect();
    Partition {
        blocks: model.partition_blocks(&refs),
        stripe_width: model.stripe_width(),
        longest_data_lifetime: refs.iter().map(|task| task.data_lifetime()).max().unwrap_or_default(),
        write_pages_per_second: refs.iter().map(|task| task.write_pages_per_second()).sum(),
        tasks: members,
    }
}

/// Algorithm 1 (TelomereSharP). Tasks are sorted by T^w·(l^w + 1); for each
/// task τ1 with successor τ2 it compares
/// opt1 = H(current + τ1) + H(τ2), opt2 = H(current) + H([τ1, τ2]) and
/// opt3 = H(current) + H(τ1) + H(τ2), preferring opt1, then opt2, on ties.
/// Line 27 prints `opt1 = H(tasks[idx : tlen − 1])`, which leaves the last
/// task out of the comparison; we compare the remaining partition with and
/// without the last task, as line 28 and lines 29-33 intend.
fn sharp_partitions(model: &StorageModel, tasks: &[Task], mut order: Vec<usize>) -> Vec<Vec<usize>> {
    order.sort_by_key(|&index| sharp_key(tasks, index));
    let count = order.len();
    let mut partitions = Vec::new();
    let mut push = |range: std::ops::Range<usize>| {
        if !range.is_empty() {
            partitions.push(order[range].to_vec());
        }
    };
    let (mut start, mut next) = (0, 0);
    let mut current = PartitionLoad::default();
    while next + 1 < count {
        let single = |position: usize| PartitionLoad::of(model, &[&tasks[order[position]]]);
        let step = SharpStep::choose(model, &current, &single(next), &single(next + 1));
        match step.choice {
            SharpChoice::Join => {}
            SharpChoice::Pair => {
                push(start..next);
                start = next;
            }
            SharpChoice::Apart => {
                push(start..next);
                push(next..next + 1);
                start = next + 1;
            }
        }
        (current, next) = (step.current, next + step.advance);
    }
    if count > 0 {
        let last = PartitionLoad::of(model, &[&tasks[order[count - 1]]]);
        if sharp_last_joins(model, &current, next < count, &last).is_some() {
            push(start..count);
        } else {
            push(start..count - 1);
            push(count - 1..count);
        }
    }
    partitions
}

/// Algorithm 1's order: data lifetime, ties in task order (the stable sort's).
pub(crate) fn sharp_key(tasks: &[Task], index: usize) -> (Duration, usize) {
    (tasks[index].data_lifetime(), index)
}

/// Which of Algorithm 1's options a step takes for τ1, τ2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SharpChoice {
    /// opt1: τ1 joins the current partition.
    Join,
    /// opt2: the current partition closes; τ1 starts the next one.
    Pair,
    /// opt3: the current partition and τ1 alone close; τ2 starts the next.
    Apart,
}

/// One iteration of Algorithm 1's loop: the choice, the partition being
/// built after it, how many tasks it moves past, and the blocks of the
/// partitions it closes.
#[derive(Debug, Clone, Copy)]
struct SharpStep {
    choice: SharpChoice,
    current: PartitionLoad,
    advance: usize,
    closed_blocks: u128,
}

impl SharpStep {
    /// The step for τ1, τ2 given as their own loads (`PartitionLoad::of` each).
    fn choose(model: &StorageModel, current: &PartitionLoad, first: &PartitionLoad, second: &PartitionLoad) -> Self {
        let current_blocks = current.blocks(model);
        let (first_blocks, second_blocks) = (first.blocks(model), second.blocks(model));
        let pair = first.joined(second).blocks(model);
        let opt1 = current.joined(first).blocks(model).saturating_add(second_blocks);
        let opt2 = current_blocks.saturating_add(pair);
        let opt3 = current_blocks.saturating_add(first_blocks).saturating_add(second_blocks);
        let best = opt1.min(opt2).min(opt3);
        if opt1 == best {
            Self { choice: SharpChoice::Join, current: current.joined(first), advance: 1, closed_blocks: 0 }
        } else if opt2 == best {
            Self { choice: SharpChoice::Pair, current: *first, advance: 1, closed_blocks: u128::from(current_blocks) }
        } else {
            let closed_blocks = u128::from(current_blocks) + u128::from(first_blocks);
            Self { choice: SharpChoice::Apart, current: *second, advance: 2, closed_blocks }
        }
    }
}

/// Lines 27-33: whether the last task (given as its own load) joins the
/// remaining partition. The remaining tasks before it are `current` when
/// `last_outside` (the loop stopped before the last task), none otherwise
/// (opt3 made it a partition of its own). Returns the blocks of the joined
/// partition when it joins.
fn sharp_last_joins(
    model: &StorageModel,
    current: &PartitionLoad,
    last_outside: bool,
    last: &PartitionLoad,
) -> Option<u64> {
    let without_last = if last_outside { *current } else { PartitionLoad::default() };
    let together = without_last.joined(last).blocks(model);
    let apart = without_last.blocks(model).saturating_add(last.blocks(model));
    (together < apart).then_some(together)
}

/// Blocks of the partitions Algorithm 1's end (lines 27-33) closes when
/// the loop stopped before the last task.
fn sharp_finish_blocks(model: &StorageModel, current: &PartitionLoad, last: &PartitionLoad) -> u128 {
    sharp_last_joins(model, current, true, last)
        .map_or_else(|| u128::from(current.blocks(model)) + u128::from(last.blocks(model)), u128::from)
}

/// Algorithm 1 over admitted tasks that grow one at a time, for incremental
/// admission: the blocks SharP needs with one more task, without running
/// Algorithm 1 over every admitted task again (issue 28: `nandlab admit` was
/// quadratic, 57.7 s and 2.7 GB for 10,000 tasks).
///
/// It keeps the state Algorithm 1 was in before each step it took over the
/// admitted writers (sorted as [`sharp_key`]), and the blocks that step
/// closed. A candidate changes nothing before its place in the order, so
/// its check resumes from the last state before that place and steps on
/// until it reaches a state the admitted set's run was in at the same task
/// with the same partition load (to the bit): from there on both runs take
/// the same steps. The cost per candidate is a logarithm plus the steps
/// until the runs meet again, at the latest at the first partition
/// boundary both share; only a set that is one long partition makes every
/// check walk to its end. The blocks are the same number, bit for bit, as
/// [`plan`] gives (tests/incremental_admission.rs).
#[derive(Debug, Clone, Default)]
pub(crate) struct SharpIndex {
    /// The admitted writers, by [`sharp_key`], with their own loads.
    writers: BTreeMap<SharpKey, PartitionLoad>,
    /// The run over `writers`: the state before each step, by the task the
    /// step starts at, and the state the end (lines 27-33) starts from.
    states: BTreeMap<SharpAt, SharpState>,
    /// The blocks all steps closed, D of eq. (11).
    blocks: u128,
}

type SharpKey = (Duration, usize);

/// Where Algorithm 1 is: at a task (the next τ1), or past the last one
/// (opt3 took the last two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum SharpAt {
    Task(SharpKey),
    End,
}

/// Algorithm 1 before a step: the partition being built, and the blocks the
/// step (or the end, for the last state) closes.
#[derive(Debug, Clone, Copy)]
struct SharpState {
    current: PartitionLoad,
    closed_blocks: u128,
}

/// A candidate's check: the blocks needed with it, and the states of its run
/// that differ from the admitted set's, to keep if it is admitted.
#[derive(Debug, Clone)]
pub(crate) struct SharpCandidate {
    key: SharpKey,
    load: PartitionLoad,
    /// The admitted set's states this run replaces: from `from` up to (not
    /// including) `meet`, or to the end when the runs never meet.
    from: SharpAt,
    meet: Option<SharpAt>,
    states: Vec<(SharpAt, SharpState)>,
    blocks: u128,
}

impl SharpCandidate {
    pub(crate) fn blocks(&self) -> u64 {
        saturate(self.blocks)
    }
}

impl SharpIndex {
    /// Blocks the admitted writers need (D of eq. 11 under SharP).
    pub(crate) fn blocks(&self) -> u64 {
        saturate(self.blocks)
    }

    /// The admitted writers plus writer `candidate`, whose index is higher
    /// than every admitted one's.
    pub(crate) fn with(&self, model: &StorageModel, tasks: &[Task], candidate: usize) -> SharpCandidate {
        let key = sharp_key(tasks, candidate);
        let load = PartitionLoad::of(model, &[&tasks[candidate]]);
        let resume = self.states.range(..SharpAt::Task(key)).next_back();
        let (from, mut current) =
            resume.map_or((SharpAt::Task(key), PartitionLoad::default()), |(&at, state)| (at, state.current));
        let SharpAt::Task(from_key) = from else { unreachable!("the end sorts after every task") };
        let mut ahead = merge_one(self.writers.range(from_key..).map(|(&key, load)| (key, *load)), (key, load));
        let (mut first, mut second) = (ahead.next(), ahead.next());
        let mut states = Vec::new();
        // The runs can meet only once this one has closed a partition past
        // the candidate: until then its partition holds the candidate.
        let mut closed_past_candidate = false;
        let meet = loop {
            let at = first.map_or(SharpAt::End, |(key, _)| SharpAt::Task(key));
            if closed_past_candidate && self.states.get(&at).is_some_and(|old| same_load(&old.current, &current)) {
                break Some(at);
            }
            let Some((first_key, first_load)) = first else {
                states.push((at, SharpState { current, closed_blocks: u128::from(current.blocks(model)) }));
                break None;
            };
            let Some((_, second_load)) = second else {
                let closed = sharp_finish_blocks(model, &current, &first_load);
                states.push((at, SharpState { current, closed_blocks: closed }));
                break None;
            };
            let step = SharpStep::choose(model, &current, &first_load, &second_load);
            states.push((at, SharpState { current, closed_blocks: step.closed_blocks }));
            closed_past_candidate |= step.choice != SharpChoice::Join && first_key >= key;
            current = step.current;
            (first, second) = if step.advance == 1 { (second, ahead.next()) } else { (ahead.next(), ahead.next()) };
        };
        let replaced: u128 = self.replaced(from, meet).map(|(_, state)| state.closed_blocks).sum();
        let added: u128 = states.iter().map(|(_, state)| state.closed_blocks).sum();
        SharpCandidate { key, load, from, meet, states, blocks: self.blocks - replaced + added }
    }

    /// Admits the candidate `with` was asked about (nothing admitted since).
    /// The replaced states are overwritten where the candidate's run was at
    /// the same task (most of them), so that only the others cost a tree
    /// insertion or removal.
    pub(crate) fn admit(&mut self, candidate: SharpCandidate) {
        let mut new_states = candidate.states.into_iter().peekable();
        // States to insert (`Some`) or remove (`None`) once the walk is done.
        let mut changes = Vec::new();
        let meet = candidate.meet;
        let replaced = self.states.range_mut(candidate.from..).take_while(|(&at, _)| meet.is_none_or(|meet| at < meet));
        for (&at, state) in replaced {
            while let Some((added_at, added)) = new_states.next_if(|(new_at, _)| *new_at < at) {
                changes.push((added_at, Some(added)));
            }
            match new_states.next_if(|(new_at, _)| *new_at == at) {
                Some((_, new_state)) => *state = new_state,
                None => changes.push((at, None)),
            }
        }
        for (at, added) in changes.into_iter().chain(new_states.map(|(at, state)| (at, Some(state)))) {
            match added {
                Some(state) => self.states.insert(at, state),
                None => self.states.remove(&at),
            };
        }
        self.writers.insert(candidate.key, candidate.load);
        self.blocks = candidate.blocks;
    }

    fn replaced(&self, from: SharpAt, meet: Option<SharpAt>) -> impl Iterator<Item = (&SharpAt, &SharpState)> {
        self.states.range(from..).take_while(move |(&at, _)| meet.is_none_or(|meet| at < meet))
    }
}

/// `sorted` with `extra` (whose key is not in it) in its place.
fn merge_one(
    sorted: impl Iterator<Item = (SharpKey, PartitionLoad)>,
    extra: (SharpKey, PartitionLoad),
) -> impl Iterator<Item = (SharpKey, PartitionLoad)> {
    let mut sorted = sorted.peekable();
    let mut extra = Some(extra);
    std::iter::from_fn(move || match (sorted.peek(), extra) {
        (Some(next), Some(pending)) if next.0 < pending.0 => sorted.next(),
        (_, Some(_)) => extra.take(),
        (_, None) => sorted.next(),
    })
}

/// Whether two partition loads are the same to the bit (Algorithm 1 then
/// takes the same steps from both).
fn same_load(a: &PartitionLoad, b: &PartitionLoad) -> bool {
    a.partial_rate.to_bits() == b.partial_rate.to_bits()
        && a.longest_residence_seconds.to_bits() == b.longest_residence_seconds.to_bits()
        && a.full_stripe_blocks == b.full_stripe_blocks
        && a.has_partial == b.has_partial
}

fn saturate(blocks: u128) -> u64 {
    u64::try_from(blocks).unwrap_or(u64::MAX)
}
