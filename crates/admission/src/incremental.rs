//! Incremental admission: tasks admitted one at a time in order, as successive
//! `open()` calls would (Section 3.1), each checked against running totals of
//! the tasks admitted before it ([`crate::admitted`]).

use crate::admitted::Admitted;
use crate::policy::{check, AdmissionContext, Policy, StorageTotals, ThroughputCheck, Verdict};
use crate::Task;
use serde::{Deserialize, Serialize};

/// Why a task was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rejection {
    Storage,
    Throughput,
}

/// The decision for one task of an incremental admission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskDecision {
    pub task: String,
    /// `None`: admitted. Storage is reported when both tests fail.
    pub rejection: Option<Rejection>,
    /// Both tests for the admitted tasks plus this one.
    pub verdict: CandidateVerdict,
}

/// A per-task decision's tests: both sides of the storage test and the
/// throughput test, the same numbers [`check`] gives for the admitted tasks
/// plus the task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateVerdict {
    pub storage: StorageTotals,
    pub throughput: ThroughputCheck,
}

/// The outcome of admitting a task file task by task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdmissionReport {
    pub policy: Policy,
    pub decisions: Vec<TaskDecision>,
    /// The verdict for the admitted tasks; its storage plan indexes `admitted`.
    pub admitted: Vec<usize>,
    pub verdict: Verdict,
}

/// Which of the two tests decide an admission. Both are always computed and
/// reported; a test left out only stops rejecting. Section 4's worked
/// examples, for instance, are storage-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Tests {
    #[default]
    Both,
    Storage,
    Throughput,
}

impl Tests {
    fn rejection(self, verdict: &CandidateVerdict) -> Option<Rejection> {
        let storage = self != Self::Throughput && !verdict.storage.fits();
        let throughput = self != Self::Storage && !verdict.throughput.fits();
        if storage {
            Some(Rejection::Storage)
        } else if throughput {
            Some(Rejection::Throughput)
        } else {
            None
        }
    }
}

/// Admits tasks one at a time in order, as successive `open()` calls would
/// (Section 3.1): a task is admitted if the already admitted tasks plus it pass
/// both tests, otherwise it is rejected and later tasks are tried without it.
#[must_use]
pub fn admit_in_order(policy: &Policy, context: &AdmissionContext, tasks: &[Task]) -> AdmissionReport {
    admit_in_order_by(policy, context, tasks, Tests::Both)
}

/// [`admit_in_order`] with only the `tests` deciding. Each task is checked
/// against running totals of the admitted ones ([`crate::admitted`]), in
/// O(log n) per task (SharP: plus the tasks its partition run revisits), and
/// memory for the decisions grows linearly: a decision keeps the totals, the
/// final verdict the plan.
#[must_use]
pub fn admit_in_order_by(policy: &Policy, context: &AdmissionContext, tasks: &[Task], tests: Tests) -> AdmissionReport {
    let mut running = Admitted::new(policy, context, tasks);
    let mut admitted: Vec<usize> = Vec::new();
    let mut decisions = Vec::with_capacity(tasks.len());
    for (index, task) in tasks.iter().enumerate() {
        let with = running.with(index);
        let verdict = CandidateVerdict { storage: with.storage, throughput: with.throughput };
        let rejection = tests.rejection(&verdict);
        if rejection.is_none() {
            admitted.push(index);
            running.admit(with);
        }
        decisions.push(TaskDecision { task: task.name.clone(), rejection, verdict });
    }
    let members: Vec<Task> = admitted.iter().map(|&member| tasks[member].clone()).collect();
    let verdict = check(policy, context, &members);
    AdmissionReport { policy: *policy, decisions, admitted, verdict }
}
