//! The admitted tasks of an incremental admission as running totals, so that
//! checking one more task costs O(1) (SharP: O(log n) plus the steps of
//! Algorithm 1 it redoes, see [`SharpIndex`]) rather than a check of the
//! whole set (issue 28: `nandlab admit` took 57.7 s and 2.7 GB for 10,000
//! tasks). Every
//! total is summed in the order a whole-set check sums it, so a candidate's
//! numbers are the ones [`crate::policy::check`] gives for the admitted tasks
//! plus it, to the bit (tests/incremental_admission.rs).

use crate::policy::{pages_available, pages_needed, wao_gc_max_utilization, AdmissionContext, Policy};
use crate::policy::{StorageTotals, ThroughputCheck};
use crate::storage::{self, Placement, SharpCandidate, SharpIndex};
use crate::throughput::{BankBusy, EdfSums, ThroughputModel, WriteCost};
use crate::Task;

/// What the admitted tasks need so far.
#[derive(Debug, Clone)]
pub(crate) struct Admitted<'a> {
    context: &'a AdmissionContext,
    tasks: &'a [Task],
    storage: StorageSums,
    /// The right-hand side of eq. (11) in blocks, or of eq. (24) in pages.
    available: u64,
    throughput: ThroughputSums,
}

#[derive(Debug, Clone)]
enum StorageSums {
    /// Telomere SiP: one partition per writer, eq. (7)/(10) each.
    Sip { blocks: u128 },
    /// Telomere SharP: Algorithm 1's partitions.
    Sharp(SharpIndex),
    /// Page-mapped FTLs, eq. (24).
    Pages { pages: u64 },
}

#[derive(Debug, Clone, Copy)]
enum ThroughputSums {
    Edf { model: ThroughputModel, sums: EdfSums },
    BankReservation { waf: f64, busy: BankBusy },
}

/// The admitted tasks plus one candidate: both tests' totals, and what to
/// keep if it is admitted.
#[derive(Debug, Clone)]
pub(crate) struct WithCandidate {
    pub(crate) storage: StorageTotals,
    pub(crate) throughput: ThroughputCheck,
    storage_sums: StorageStep,
    throughput_sums: ThroughputSums,
}

/// The storage sums with the candidate (SharP: its run's states, `None`
/// when it does not write).
#[derive(Debug, Clone)]
enum StorageStep {
    Sip { blocks: u128 },
    Sharp { with: Option<SharpCandidate>, blocks: u64 },
    Pages { pages: u64 },
}

impl<'a> Admitted<'a> {
    /// No task admitted yet.
    pub(crate) fn new(policy: &Policy, context: &'a AdmissionContext, tasks: &'a [Task]) -> Self {
        let blocks_available = storage::blocks_available(&context.device, context.utilization);
        let (storage, available) = match policy {
            Policy::Telomere { placement: Placement::Sip } => (StorageSums::Sip { blocks: 0 }, blocks_available),
            Policy::Telomere { placement: Placement::Sharp } => {
                (StorageSums::Sharp(SharpIndex::default()), blocks_available)
            }
            Policy::WaoGc => (
                StorageSums::Pages { pages: 0 },
                pages_available(context, context.utilization.min(wao_gc_max_utilization(&context.device))),
            ),
            Policy::MultiLogOracle { .. } => {
                (StorageSums::Pages { pages: 0 }, pages_available(context, context.utilization))
            }
        };
        let edf = |cost| ThroughputSums::Edf { model: context.throughput_model(cost), sums: EdfSums::default() };
        let throughput = match policy {
            Policy::Telomere { .. } => edf(WriteCost::Telomere),
            Policy::WaoGc => edf(WriteCost::WaoGc),
            Policy::MultiLogOracle { waf } => ThroughputSums::BankReservation { waf: *waf, busy: BankBusy::default() },
        };
        Self { context, tasks, storage, available, throughput }
    }

    /// The admitted tasks plus task `candidate`, which comes after all of them.
    pub(crate) fn with(&self, candidate: usize) -> WithCandidate {
        let task = &self.tasks[candidate];
        let model = &self.context.storage;
        let writes = task.write_pages() > 0;
        let storage_sums = match &self.storage {
            StorageSums::Sip { blocks } => StorageStep::Sip {
                blocks: blocks + u128::from(if writes { model.partition_blocks(&[task]) } else { 0 }),
            },
            StorageSums::Sharp(index) => {
                let with = writes.then(|| index.with(model, self.tasks, candidate));
                let blocks = with.as_ref().map_or_else(|| index.blocks(), SharpCandidate::blocks);
                StorageStep::Sharp { with, blocks }
            }
            StorageSums::Pages { pages } => StorageStep::Pages { pages: pages.saturating_add(pages_needed(task)) },
        };
        let blocks = |blocks_needed| StorageTotals::Blocks { blocks_needed, blocks_available: self.available };
        let storage = match &storage_sums {
            StorageStep::Sip { blocks: sum } => blocks(u64::try_from(*sum).unwrap_or(u64::MAX)),
            StorageStep::Sharp { blocks: sum, .. } => blocks(*sum),
            StorageStep::Pages { pages } => {
                StorageTotals::Pages { pages_needed: *pages, pages_available: self.available }
            }
        };
        let (throughput_sums, throughput) = match self.throughput {
            ThroughputSums::Edf { model, mut sums } => {
                sums.add(&model, task);
                (ThroughputSums::Edf { model, sums }, ThroughputCheck::Edf(sums.utilization(&model)))
            }
            ThroughputSums::BankReservation { waf, mut busy } => {
                busy.add(&self.context.device, task, waf);
                let load = busy.load(&self.context.device);
                (ThroughputSums::BankReservation { waf, busy }, ThroughputCheck::BankReservation { load })
            }
        };
        WithCandidate { storage, throughput, storage_sums, throughput_sums }
    }

    /// Keeps the candidate `with` was asked about (nothing admitted since).
    pub(crate) fn admit(&mut self, candidate: WithCandidate) {
        match (&mut self.storage, candidate.storage_sums) {
            (StorageSums::Sip { blocks }, StorageStep::Sip { blocks: with }) => *blocks = with,
            (StorageSums::Sharp(index), StorageStep::Sharp { with, .. }) => {
                if let Some(with) = with {
                    index.admit(with);
                }
            }
            (StorageSums::Pages { pages }, StorageStep::Pages { pages: with }) => *pages = with,
            _ => unreachable!("a step comes from the sums of the same policy"),
        }
        self.throughput = candidate.throughput_sums;
    }
}
