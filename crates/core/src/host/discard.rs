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

use crate::error::ConfigError;
use crate::units::SimNs;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

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

/// Counts of what the scheduler received and what it did with it. Once
/// nothing waits (after [`DiscardScheduler::finish`]) two identities hold,
/// for every policy (docs/delay-d.md, "Counters"):
///
/// * sectors: `received_sectors = issued_sectors + cancelled_sectors + dropped_sectors`;
/// * commands: `received_commands + split_commands = issued_commands +
///   merged_commands + cancelled_commands + redundant_commands + dropped_commands`.
///
/// Each received command ends in exactly one of: issued (alone, or merged
/// with others), cancelled, redundant, dropped; `partially_cancelled_commands`
/// counts the issued ones that lost some sectors to rewrites.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DiscardStats {
    /// DISCARD commands from the file system.
    pub received_commands: u64,
    /// Their sectors, each counted once while it waits: a sector received
    /// again before its DISCARD was issued or cancelled counts in
    /// `repeated_sectors` instead.
    pub received_sectors: u64,
    /// Sectors received while already waiting (overlapping DISCARDs).
    pub repeated_sectors: u64,
    /// DISCARD commands sent to the device.
    pub issued_commands: u64,
    pub issued_sectors: u64,
    /// Per issued command, the received commands it carries beyond the first.
    pub merged_commands: u64,
    /// Per received command, the issued commands it went out in beyond the
    /// first: a rewrite into the middle of a waiting range splits it.
    pub split_commands: u64,
    /// Received commands whose every sector was rewritten before issue.
    pub cancelled_commands: u64,
    /// Sectors removed from waiting ranges by rewrites (zero-cost invalidation).
    pub cancelled_sectors: u64,
    /// Received commands issued with some, not all, of their sectors
    /// rewritten first (a subset of the issued ones).
    pub partially_cancelled_commands: u64,
    /// Received commands whose every sector was already waiting: they add
    /// nothing, and go out (or are cancelled) with the commands that did.
    pub redundant_commands: u64,
    /// Received commands dropped by the `off` policy, and their sectors.
    pub dropped_commands: u64,
    pub dropped_sectors: u64,
}

/// A waiting range (merged from adjacent received ranges): when its oldest
/// part arrived.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    end: u64,
    arrived: SimNs,
}

/// The waiting ranges, keyed by start, and the same ranges ordered by
/// arrival: the daemon finds the ranges that are due by walking the oldest
/// ones, so an event costs what it issues (and a logarithm), not a scan of
/// every waiting range (issue 30: a trace whose DISCARDs are never rewritten
/// left thousands waiting, each scanned at every event).
#[derive(Clone, Debug, Default)]
struct WaitingRanges {
    by_start: BTreeMap<u64, Waiting>,
    /// `(arrived, start)` of every entry of `by_start`.
    by_arrival: BTreeSet<(SimNs, u64)>,
}

impl WaitingRanges {
    fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }

    /// The starts of the ranges that arrived at or before `cutoff`, in
    /// order of start sector.
    fn due(&self, cutoff: SimNs) -> Vec<u64> {
        let mut starts: Vec<u64> = self.by_arrival.range(..=(cutoff, u64::MAX)).map(|&(_, start)| start).collect();
        starts.sort_unstable();
        starts
    }
}

impl RangeMap<Waiting> for WaitingRanges {
    fn entries(&self) -> &BTreeMap<u64, Waiting> {
        &self.by_start
    }

    fn put(&mut self, start: u64, waiting: Waiting) {
        self.by_arrival.insert((waiting.arrived, start));
        if let Some(replaced) = self.by_start.insert(start, waiting) {
            self.by_arrival.remove(&(replaced.arrived, start));
        }
    }

    fn take(&mut self, start: u64) -> Option<Waiting> {
        let waiting = self.by_start.remove(&start)?;
        self.by_arrival.remove(&(waiting.arrived, start));
        Some(waiting)
    }
}

/// Sectors that one received command made wait, `[start, end)` keyed by start.
#[derive(Clone, Copy, Debug)]
struct Piece {
    end: u64,
    command: u64,
}

/// A received command while any of its sectors waits.
#[derive(Clone, Copy, Debug, Default)]
struct Fate {
    waiting_sectors: u64,
    rewritten_sectors: u64,
    issued_in: u64,
}

/// The DISCARD stage. Feed it the file system's requests in order; it
/// appends the ranges to trim on the device to `issue`.
#[derive(Debug, Clone)]
pub struct DiscardScheduler {
    config: DiscardConfig,
    /// The merged ranges Algorithm 1 schedules.
    waiting: WaitingRanges,
    /// The same sectors by the command that made them wait, for the counts.
    pieces: BTreeMap<u64, Piece>,
    fates: BTreeMap<u64, Fate>,
    next_command: u64,
    next_batch: SimNs,
    stats: DiscardStats,
}

impl DiscardScheduler {
    pub fn new(config: &DiscardConfig) -> Self {
        Self {
            config: config.clone(),
            waiting: WaitingRanges::default(),
            pieces: BTreeMap::new(),
            fates: BTreeMap::new(),
            next_command: 0,
            next_batch: SimNs(config.period_ms * 1_000_000),
            stats: DiscardStats::default(),
        }
    }

    pub fn stats(&self) -> &DiscardStats {
        &self.stats
    }

    /// Sectors waiting to be issued.
    pub fn waiting_sectors(&self) -> u64 {
        self.waiting.by_start.iter().map(|(&start, w)| w.end - start).sum()
    }

    /// The file system discarded `range` at `now`.
    pub fn discard(&mut self, now: SimNs, range: SectorRange, issue: &mut Vec<SectorRange>) {
        if range.sectors() == 0 {
            return;
        }
        self.stats.received_commands += 1;
        match self.config.policy {
            DiscardPolicy::Off => {
                self.stats.received_sectors += range.sectors();
                self.stats.dropped_commands += 1;
                self.stats.dropped_sectors += range.sectors();
            }
            DiscardPolicy::Online => {
                self.stats.received_sectors += range.sectors();
                self.stats.issued_commands += 1;
                self.stats.issued_sectors += range.sectors();
                issue.push(range);
            }
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
        cut(&mut self.waiting, range);
        for (start, piece) in cut(&mut self.pieces, range) {
            let removed = piece.end.min(range.end) - start.max(range.start);
            self.stats.cancelled_sectors += removed;
            let fate = self.fates.entry(piece.command).or_default();
            fate.rewritten_sectors += removed;
            fate.waiting_sectors -= removed;
            self.settle_if_done(piece.command);
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
                if now >= self.next_batch {
                    self.issue_older_than(now, SimNs(0), issue);
                    self.next_batch = self.first_batch_after(now);
                }
            }
            DiscardPolicy::Off | DiscardPolicy::Online => {}
        }
    }

    /// End of the workload: issue everything still waiting, in order.
    pub fn finish(&mut self, issue: &mut Vec<SectorRange>) {
        self.issue_older_than(SimNs(u64::MAX), SimNs(0), issue);
    }

    /// The first batch time (a multiple of the period after the current
    /// one) later than `now`, found by division rather than by stepping
    /// through the periods in between: a trace spanning a day with a 1 ms
    /// period would otherwise take 86.4 M steps for one event (issue 28).
    /// Saturates at the end of time.
    fn first_batch_after(&self, now: SimNs) -> SimNs {
        let period = self.config.period_ms.saturating_mul(1_000_000).max(1);
        let periods = (now.0 - self.next_batch.0) / period + 1;
        SimNs(self.next_batch.0.saturating_add(periods.saturating_mul(period)))
    }

    fn delay(&self) -> SimNs {
        SimNs(self.config.delay_ms * 1_000_000)
    }

    /// Adds a range, merging it with overlapping and adjacent waiting
    /// ranges; the sectors not yet waiting become the command's pieces.
    fn insert(&mut self, now: SimNs, range: SectorRange) {
        let already = overlapping(&self.waiting, range);
        let mut gaps = Vec::new();
        let mut cursor = range.start;
        for (start, waiting) in &already {
            if *start > cursor {
                gaps.push(SectorRange { start: cursor, end: *start });
            }
            cursor = cursor.max(waiting.end);
        }
        if cursor < range.end {
            gaps.push(SectorRange { start: cursor, end: range.end });
        }
        let new_sectors: u64 = gaps.iter().map(|gap| gap.sectors()).sum();
        self.stats.repeated_sectors += range.sectors() - new_sectors;
        if new_sectors == 0 {
            // Inside one waiting range (waiting ranges are never adjacent),
            // which is older: nothing changes.
            self.stats.redundant_commands += 1;
            return;
        }
        self.stats.received_sectors += new_sectors;
        let command = self.next_command;
        self.next_command += 1;
        self.fates.insert(command, Fate { waiting_sectors: new_sectors, ..Fate::default() });
        for gap in gaps {
            self.pieces.insert(gap.start, Piece { end: gap.end, command });
        }
        let mut merged = Waiting { end: range.end, arrived: now };
        let mut start = range.start;
        let touching = SectorRange { start: range.start.saturating_sub(1), end: range.end.saturating_add(1) };
        for (other_start, other) in overlapping(&self.waiting, touching) {
            self.waiting.take(other_start);
            start = start.min(other_start);
            merged.end = merged.end.max(other.end);
            merged.arrived = merged.arrived.min(other.arrived);
        }
        self.waiting.put(start, merged);
    }

    /// Issues, in order of start sector, every waiting range that arrived at
    /// least `age` before `now` (with `age` 0, every waiting range).
    fn issue_older_than(&mut self, now: SimNs, age: SimNs, issue: &mut Vec<SectorRange>) {
        let cutoff = if age.0 == 0 {
            SimNs(u64::MAX)
        } else {
            match now.0.checked_sub(age.0) {
                Some(cutoff) => SimNs(cutoff),
                None => return,
            }
        };
        for start in self.waiting.due(cutoff) {
            if let Some(waiting) = self.waiting.take(start) {
                self.emit(SectorRange { start, end: waiting.end }, issue);
            }
        }
    }

    /// Issues a waiting range: the commands whose pieces it holds go out in it.
    fn emit(&mut self, range: SectorRange, issue: &mut Vec<SectorRange>) {
        let mut carried: Vec<(u64, u64)> = overlapping(&self.pieces, range)
            .into_iter()
            .map(|(start, piece)| {
                self.pieces.take(start);
                (piece.command, piece.end - start)
            })
            .collect();
        carried.sort_unstable();
        let mut commands = 0_u64;
        for (index, &(command, sectors)) in carried.iter().enumerate() {
            let fate = self.fates.entry(command).or_default();
            fate.waiting_sectors -= sectors;
            if index == 0 || carried[index - 1].0 != command {
                fate.issued_in += 1;
                commands += 1;
            }
            self.settle_if_done(command);
        }
        self.stats.issued_commands += 1;
        self.stats.issued_sectors += range.sectors();
        self.stats.merged_commands += commands.saturating_sub(1);
        issue.push(range);
    }

    /// Counts what became of a received command once none of its sectors waits.
    fn settle_if_done(&mut self, command: u64) {
        let Some(&fate) = self.fates.get(&command) else { return };
        if fate.waiting_sectors > 0 {
            return;
        }
        self.fates.remove(&command);
        if fate.issued_in == 0 {
            self.stats.cancelled_commands += 1;
            return;
        }
        self.stats.split_commands += fate.issued_in - 1;
        if fate.rewritten_sectors > 0 {
            self.stats.partially_cancelled_commands += 1;
        }
    }
}

/// Ranges keyed by start, valued with their end: the interval maps of the
/// scheduler. `put` and `take` are the only ways to change one, so a map
/// with an index beside it ([`WaitingRanges`]) keeps the index current.
trait RangeMap<T> {
    fn entries(&self) -> &BTreeMap<u64, T>;
    /// Inserts (or replaces) the entry at `start`.
    fn put(&mut self, start: u64, entry: T);
    fn take(&mut self, start: u64) -> Option<T>;
}

impl<T> RangeMap<T> for BTreeMap<u64, T> {
    fn entries(&self) -> &BTreeMap<u64, T> {
        self
    }

    fn put(&mut self, start: u64, entry: T) {
        self.insert(start, entry);
    }

    fn take(&mut self, start: u64) -> Option<T> {
        self.remove(&start)
    }
}

/// The ranges of `map` that overlap `range`, in order of start.
fn overlapping<T: Copy + Ends>(map: &impl RangeMap<T>, range: SectorRange) -> Vec<(u64, T)> {
    let entries = map.entries();
    let first = entries.range(..=range.start).next_back().filter(|(_, w)| w.end() > range.start).map(|(&s, _)| s);
    let from = first.unwrap_or(range.start);
    entries.range(from..range.end).map(|(&s, &w)| (s, w)).collect()
}

/// Removes `range` from the ranges of `map`, keeping their parts outside
/// it; returns the entries that overlapped it, as they were.
fn cut<T: Copy + Ends>(map: &mut impl RangeMap<T>, range: SectorRange) -> Vec<(u64, T)> {
    let hit = overlapping(map, range);
    for &(start, entry) in &hit {
        map.take(start);
        if start < range.start {
            map.put(start, entry.ending_at(range.start));
        }
        if entry.end() > range.end {
            map.put(range.end, entry);
        }
    }
    hit
}

/// A value of a range map that knows where its range ends.
trait Ends {
    fn end(&self) -> u64;
    /// The same value for a range ending at `end`.
    #[must_use]
    fn ending_at(self, end: u64) -> Self;
}

impl Ends for Waiting {
    fn end(&self) -> u64 {
        self.end
    }

    fn ending_at(self, end: u64) -> Self {
        Waiting { end, ..self }
    }
}

impl Ends for Piece {
    fn end(&self) -> u64 {
        self.end
    }

    fn ending_at(self, end: u64) -> Self {
        Piece { end, ..self }
    }
}

#[cfg(test)]
mod tests;
