//! DISCARD scheduling between the file system (a trace) and the device: the
//! policies of the Delay-D paper (Aerospace 2024, Section 3, Algorithm 1) and
//! an fstrim-like periodic batch. Works on 512-byte sector ranges, the host's
//! view; the replay driver turns what it issues into page trims.
//!
//! Readings of the paper (docs/delay-d.md):
//! * Delay-D keeps reclaimed ranges in an ordered interval structure
//!   (`reclaim`, Algorithm 1 lines 7-13). A write that reallocates a waiting
//!   sector removes it: the overwrite invalidates the old page anyway, so the
//!   DISCARD is not needed ("zero-cost invalidation", Section 3.1, lines 1-5).
//! * The daemon (lines 15-21) issues after the delay: by default at the first
//!   journal commit once a range has waited at least `delay`, the ranges left
//!   merged with adjacent ones and issued in order of start sector (Section
//!   3.2). A range that has waited twice the delay without a commit in sight
//!   is issued anyway, so traces without journal commits still work.
//! * `periodic` (fstrim-like) issues everything pending every `period`. Like
//!   fstrim it trims only what is free when it runs, so it too must skip
//!   sectors rewritten since their DISCARD — it differs from Delay-D in its
//!   timing, not in correctness; rewrites are counted as cancellations alike.

use crate::config::ConfigError;
use crate::units::SimNs;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A half-open range of 512-byte sectors, `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SectorRange {
    pub start: u64,
    pub end: u64,
}

impl SectorRange {
    /// `sectors` from `start`. The end saturates at `u64::MAX` rather than
    /// wrapping: such a range lies past any device's capacity and the replay
    /// refuses it (the trace readers already refuse requests whose end does
    /// not fit).
    pub fn new(start: u64, sectors: u64) -> Self {
        Self { start, end: start.saturating_add(sectors) }
    }

    pub fn sectors(self) -> u64 {
        self.end - self.start
    }
}

/// What happens to DISCARD commands from the file system (`--discard`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiscardPolicy {
    /// Dropped ("Disabled" in the paper: ext4 without `-o discard`).
    Off,
    /// Passed on as issued ("Enabled": ext4 `-o discard`).
    #[default]
    Online,
    /// Delayed, cancelled on reallocation, merged and sorted (Delay-D).
    DelayD,
    /// Batched every `period_ms`, merged and sorted (fstrim-like).
    Periodic,
}

/// The `[discard]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscardConfig {
    #[serde(default)]
    pub policy: DiscardPolicy,
    /// Delay-D: minimum wait before a range is issued. The paper's set-up
    /// issues after each ext4 commit, about 5 s (Section 4.1).
    #[serde(default = "default_delay_ms")]
    pub delay_ms: u64,
    /// Delay-D: issue at journal commits (true) or by the timer alone.
    #[serde(default = "yes")]
    pub at_journal_commit: bool,
    /// Periodic: interval between batches.
    #[serde(default = "default_period_ms")]
    pub period_ms: u64,
}

fn default_delay_ms() -> u64 {
    5_000
}
fn default_period_ms() -> u64 {
    60_000
}
fn yes() -> bool {
    true
}

impl Default for DiscardConfig {
    fn default() -> Self {
        Self {
            policy: DiscardPolicy::default(),
            delay_ms: default_delay_ms(),
            at_journal_commit: true,
            period_ms: default_period_ms(),
        }
    }
}

/// Longest `discard.delay_ms` and `discard.period_ms`: a day. Longer waits
/// mean "never" in any trace, and larger values would overflow nanoseconds.
pub const DISCARD_WAIT_MS_MAX: u64 = 86_400_000;

impl DiscardConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.policy == DiscardPolicy::Periodic && self.period_ms == 0 {
            return Err(ConfigError::new("discard.period_ms", "must be at least 1 for the periodic policy"));
        }
        for (key, value) in [("discard.delay_ms", self.delay_ms), ("discard.period_ms", self.period_ms)] {
            if value > DISCARD_WAIT_MS_MAX {
                return Err(ConfigError::new(
                    key,
                    format!("{value} ms exceeds the limit of {DISCARD_WAIT_MS_MAX} ms (a day)"),
                ));
            }
        }
        Ok(())
    }
}

/// Counts of what the scheduler received and what it did with it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DiscardStats {
    pub received_commands: u64,
    pub received_sectors: u64,
    pub issued_commands: u64,
    pub issued_sectors: u64,
    /// Received commands folded into another issued command.
    pub merged_commands: u64,
    /// Received commands whose every sector was rewritten before issue.
    pub cancelled_commands: u64,
    /// Sectors removed from waiting ranges by rewrites (zero-cost invalidation).
    pub cancelled_sectors: u64,
    /// Received commands dropped by the `off` policy.
    pub dropped_commands: u64,
}

/// A waiting range: when its oldest part arrived and how many received
/// commands it stands for.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    end: u64,
    arrived: SimNs,
    commands: u64,
}

/// The DISCARD stage. Feed it the file system's requests in order; it
/// appends the ranges to trim on the device to `issue`.
#[derive(Debug, Clone)]
pub struct DiscardScheduler {
    config: DiscardConfig,
    waiting: BTreeMap<u64, Waiting>,
    next_batch: SimNs,
    stats: DiscardStats,
}

impl DiscardScheduler {
    pub fn new(config: &DiscardConfig) -> Self {
        Self {
            config: config.clone(),
            waiting: BTreeMap::new(),
            next_batch: SimNs(config.period_ms * 1_000_000),
            stats: DiscardStats::default(),
        }
    }

    pub fn stats(&self) -> &DiscardStats {
        &self.stats
    }

    /// Sectors waiting to be issued.
    pub fn waiting_sectors(&self) -> u64 {
        self.waiting.iter().map(|(&start, w)| w.end - start).sum()
    }

    /// The file system discarded `range` at `now`.
    pub fn discard(&mut self, now: SimNs, range: SectorRange, issue: &mut Vec<SectorRange>) {
        if range.sectors() == 0 {
            return;
        }
        self.stats.received_commands += 1;
        self.stats.received_sectors += range.sectors();
        match self.config.policy {
            DiscardPolicy::Off => self.stats.dropped_commands += 1,
            DiscardPolicy::Online => self.emit(range, 1, issue),
            DiscardPolicy::DelayD | DiscardPolicy::Periodic => self.insert(now, range),
        }
    }

    /// The file system wrote `range`: waiting sectors in it are reallocated
    /// and must not be discarded any more.
    #[inline]
    pub fn write(&mut self, range: SectorRange) {
        if !self.waiting.is_empty() && range.sectors() > 0 {
            self.cancel_waiting(range);
        }
    }

    fn cancel_waiting(&mut self, range: SectorRange) {
        for (start, waiting) in self.overlapping(range) {
            self.waiting.remove(&start);
            let kept_before = (start < range.start).then_some(SectorRange { start, end: range.start });
            let kept_after = (waiting.end > range.end).then_some(SectorRange { start: range.end, end: waiting.end });
            let removed = waiting.end.min(range.end) - start.max(range.start);
            self.stats.cancelled_sectors += removed;
            match (kept_before, kept_after) {
                (None, None) => self.stats.cancelled_commands += waiting.commands,
                // A split piece stands for no received command of its own: if
                // it is issued, it is an extra command the rewrite caused.
                (Some(before), after) => {
                    self.waiting.insert(before.start, Waiting { end: before.end, ..waiting });
                    if let Some(after) = after {
                        self.waiting.insert(after.start, Waiting { end: after.end, commands: 0, ..waiting });
                    }
                }
                (None, Some(after)) => {
                    self.waiting.insert(after.start, Waiting { end: after.end, ..waiting });
                }
            }
        }
    }

    /// A journal commit completed at `now` (Delay-D's issue point).
    pub fn journal_commit(&mut self, now: SimNs, issue: &mut Vec<SectorRange>) {
        if self.config.policy == DiscardPolicy::DelayD && self.config.at_journal_commit {
            self.issue_older_than(now, self.delay(), issue);
        }
    }

    /// Time has reached `now`: issue what timers make due.
    pub fn advance(&mut self, now: SimNs, issue: &mut Vec<SectorRange>) {
        match self.config.policy {
            DiscardPolicy::DelayD => {
                let wait = if self.config.at_journal_commit { self.delay().0 * 2 } else { self.delay().0 };
                self.issue_older_than(now, SimNs(wait), issue);
            }
            DiscardPolicy::Periodic => {
                let period = self.config.period_ms * 1_000_000;
                if now >= self.next_batch {
                    self.issue_older_than(now, SimNs(0), issue);
                    while self.next_batch <= now {
                        self.next_batch.0 += period;
                    }
                }
            }
            DiscardPolicy::Off | DiscardPolicy::Online => {}
        }
    }

    /// End of the workload: issue everything still waiting, in order.
    pub fn finish(&mut self, issue: &mut Vec<SectorRange>) {
        self.issue_older_than(SimNs(u64::MAX), SimNs(0), issue);
    }

    fn delay(&self) -> SimNs {
        SimNs(self.config.delay_ms * 1_000_000)
    }

    /// Adds a range, merging it with overlapping and adjacent waiting ranges.
    fn insert(&mut self, now: SimNs, range: SectorRange) {
        let mut merged = Waiting { end: range.end, arrived: now, commands: 1 };
        let mut start = range.start;
        let touching = SectorRange { start: range.start.saturating_sub(1), end: range.end.saturating_add(1) };
        for (other_start, other) in self.overlapping(touching) {
            self.waiting.remove(&other_start);
            start = start.min(other_start);
            merged.end = merged.end.max(other.end);
            merged.arrived = merged.arrived.min(other.arrived);
            merged.commands += other.commands;
        }
        self.waiting.insert(start, merged);
    }

    /// Waiting ranges that overlap `range`, in order of start.
    fn overlapping(&self, range: SectorRange) -> Vec<(u64, Waiting)> {
        let first =
            self.waiting.range(..=range.start).next_back().filter(|(_, w)| w.end > range.start).map(|(&s, _)| s);
        let from = first.unwrap_or(range.start);
        self.waiting.range(from..range.end).map(|(&s, &w)| (s, w)).collect()
    }

    /// Issues, in order of start sector, every waiting range that arrived at
    /// least `age` before `now`.
    fn issue_older_than(&mut self, now: SimNs, age: SimNs, issue: &mut Vec<SectorRange>) {
        let due: Vec<u64> = self
            .waiting
            .iter()
            .filter(|(_, w)| now.0.saturating_sub(w.arrived.0) >= age.0)
            .map(|(&start, _)| start)
            .collect();
        for start in due {
            if let Some(waiting) = self.waiting.remove(&start) {
                self.emit(SectorRange { start, end: waiting.end }, waiting.commands, issue);
            }
        }
    }

    fn emit(&mut self, range: SectorRange, commands: u64, issue: &mut Vec<SectorRange>) {
        self.stats.issued_commands += 1;
        self.stats.issued_sectors += range.sectors();
        self.stats.merged_commands += commands.saturating_sub(1);
        issue.push(range);
    }
}

#[cfg(test)]
mod tests;
