//! Delay-D on hand-written request sequences, and a property test: no policy
//! ever discards a sector rewritten after its DISCARD arrived.

use super::*;
use proptest::prelude::*;

const SECOND: u64 = 1_000_000_000;

fn scheduler(policy: DiscardPolicy) -> DiscardScheduler {
    DiscardScheduler::new(&DiscardConfig { policy, ..DiscardConfig::default() })
}

fn range(start: u64, end: u64) -> SectorRange {
    SectorRange { start, end }
}

#[test]
fn a_write_into_a_waiting_range_splits_it() {
    let mut delay_d = scheduler(DiscardPolicy::DelayD);
    let mut issued = Vec::new();
    delay_d.discard(SimNs(0), range(100, 200), &mut issued);
    delay_d.write(range(140, 160));
    delay_d.finish(&mut issued);
    assert_eq!(issued, vec![range(100, 140), range(160, 200)]);
    assert_eq!(delay_d.stats().cancelled_sectors, 20);
}

#[test]
fn a_write_covering_a_waiting_range_removes_it() {
    let mut delay_d = scheduler(DiscardPolicy::DelayD);
    let mut issued = Vec::new();
    delay_d.discard(SimNs(0), range(100, 108), &mut issued);
    delay_d.discard(SimNs(0), range(300, 308), &mut issued);
    delay_d.write(range(96, 112));
    delay_d.finish(&mut issued);
    assert_eq!(issued, vec![range(300, 308)]);
    assert_eq!(delay_d.stats().cancelled_commands, 1);
    assert_eq!(delay_d.stats().issued_commands, 1);
}

#[test]
fn adjacent_ranges_merge_and_issue_sorted_by_start() {
    let mut delay_d = scheduler(DiscardPolicy::DelayD);
    let mut issued = Vec::new();
    for (start, end) in [(500, 508), (16, 24), (8, 16), (24, 32), (1000, 1008), (504, 520)] {
        delay_d.discard(SimNs(0), range(start, end), &mut issued);
    }
    assert!(issued.is_empty(), "Delay-D must not issue before the delay");
    delay_d.journal_commit(SimNs(6 * SECOND), &mut issued);
    assert_eq!(issued, vec![range(8, 32), range(500, 520), range(1000, 1008)]);
    let stats = delay_d.stats();
    assert_eq!((stats.received_commands, stats.issued_commands, stats.merged_commands), (6, 3, 3));
}

#[test]
fn delay_d_waits_for_a_commit_after_the_delay() {
    let mut delay_d = scheduler(DiscardPolicy::DelayD);
    let mut issued = Vec::new();
    delay_d.discard(SimNs(SECOND), range(0, 8), &mut issued);
    delay_d.journal_commit(SimNs(5 * SECOND), &mut issued);
    assert!(issued.is_empty(), "a commit before the delay has passed issues nothing");
    delay_d.advance(SimNs(7 * SECOND), &mut issued);
    assert!(issued.is_empty(), "without a commit, the timer waits twice the delay");
    delay_d.journal_commit(SimNs(7 * SECOND), &mut issued);
    assert_eq!(issued, vec![range(0, 8)]);
}

#[test]
fn delay_d_falls_back_to_the_timer_without_commits() {
    let mut delay_d = scheduler(DiscardPolicy::DelayD);
    let mut issued = Vec::new();
    delay_d.discard(SimNs(0), range(0, 8), &mut issued);
    delay_d.advance(SimNs(10 * SECOND), &mut issued);
    assert_eq!(issued, vec![range(0, 8)]);
}

#[test]
fn online_passes_through_and_off_drops() {
    let mut issued = Vec::new();
    let mut online = scheduler(DiscardPolicy::Online);
    online.discard(SimNs(0), range(8, 16), &mut issued);
    online.discard(SimNs(0), range(0, 8), &mut issued);
    assert_eq!(issued, vec![range(8, 16), range(0, 8)]);
    let mut off = scheduler(DiscardPolicy::Off);
    off.discard(SimNs(0), range(0, 8), &mut issued);
    off.finish(&mut issued);
    assert_eq!(issued.len(), 2);
    assert_eq!(off.stats().dropped_commands, 1);
}

#[test]
fn periodic_batches_every_period() {
    let mut periodic = scheduler(DiscardPolicy::Periodic);
    let mut issued = Vec::new();
    periodic.discard(SimNs(SECOND), range(16, 24), &mut issued);
    periodic.discard(SimNs(2 * SECOND), range(0, 8), &mut issued);
    periodic.advance(SimNs(59 * SECOND), &mut issued);
    assert!(issued.is_empty());
    periodic.advance(SimNs(60 * SECOND), &mut issued);
    assert_eq!(issued, vec![range(0, 8), range(16, 24)]);
}

#[derive(Clone, Debug)]
enum Event {
    Discard(u64, u64),
    Write(u64, u64),
    Commit,
    Tick,
}

fn events() -> impl Strategy<Value = Vec<Event>> {
    let event = prop_oneof![
        3 => (0..200u64, 1..24u64).prop_map(|(s, n)| Event::Discard(s, n)),
        3 => (0..200u64, 1..24u64).prop_map(|(s, n)| Event::Write(s, n)),
        1 => Just(Event::Commit),
        1 => Just(Event::Tick),
    ];
    prop::collection::vec(event, 1..200)
}

/// Replays `events` (one per simulated second) and checks every issued
/// sector against the last thing the file system did to it.
fn never_discards_rewritten_data(policy: DiscardPolicy, events: &[Event]) -> Result<(), TestCaseError> {
    let mut scheduler =
        DiscardScheduler::new(&DiscardConfig { policy, delay_ms: 3_000, period_ms: 4_000, ..DiscardConfig::default() });
    let mut last_was_discard = [false; 256];
    let mut issued = Vec::new();
    let check = |issued: &mut Vec<SectorRange>, last: &[bool; 256]| -> Result<(), TestCaseError> {
        for range in issued.drain(..) {
            for sector in range.start..range.end {
                prop_assert!(
                    last[sector as usize],
                    "{policy:?} discarded sector {sector}, rewritten after its DISCARD"
                );
            }
        }
        Ok(())
    };
    for (second, event) in events.iter().enumerate() {
        let now = SimNs(second as u64 * SECOND);
        match *event {
            Event::Discard(start, sectors) => {
                last_was_discard[start as usize..(start + sectors) as usize].fill(true);
                scheduler.discard(now, SectorRange::new(start, sectors), &mut issued);
            }
            Event::Write(start, sectors) => {
                last_was_discard[start as usize..(start + sectors) as usize].fill(false);
                scheduler.write(SectorRange::new(start, sectors));
            }
            Event::Commit => scheduler.journal_commit(now, &mut issued),
            Event::Tick => scheduler.advance(now, &mut issued),
        }
        check(&mut issued, &last_was_discard)?;
    }
    scheduler.finish(&mut issued);
    check(&mut issued, &last_was_discard)?;
    let stats = scheduler.stats();
    prop_assert!(
        stats.issued_sectors + stats.cancelled_sectors <= stats.received_sectors || policy == DiscardPolicy::Online
    );
    Ok(())
}

proptest! {
    #[test]
    fn no_policy_discards_rewritten_data(events in events()) {
        for policy in [DiscardPolicy::Online, DiscardPolicy::DelayD, DiscardPolicy::Periodic] {
            never_discards_rewritten_data(policy, &events)?;
        }
    }
}

/// A reference model of Delay-D's Algorithm 1, sector by sector and as
/// plain as it can be: `reclaim` (lines 7-13) makes sectors active with the
/// time they arrived, `allocation` (lines 1-5, a write) makes them inactive
/// again, and the daemon (lines 15-21) takes the active sectors, merges
/// adjacent ones into one command (line 19) and issues them in LBA order.
/// nandlab's readings (docs/delay-d.md): a merged run is as old as its oldest
/// sector, and is due once that has waited the delay. Each active sector
/// also remembers the received command that made it active, so the model
/// counts what became of every command by looking at its sectors.
struct Algorithm1 {
    /// Per sector, while active: when it arrived and which command owns it.
    active: Vec<Option<(u64, usize)>>,
    /// Per received command: sectors it made active, of those rewritten, and
    /// the issued commands it went out in.
    commands: Vec<(u64, u64, u64)>,
    cancelled_sectors: u64,
    repeated_sectors: u64,
    merged_commands: u64,
}

impl Algorithm1 {
    fn new() -> Self {
        Self {
            active: vec![None; 256],
            commands: Vec::new(),
            cancelled_sectors: 0,
            repeated_sectors: 0,
            merged_commands: 0,
        }
    }

    fn reclaim(&mut self, start: u64, sectors: u64, now_s: u64) {
        let command = self.commands.len();
        let mut made_active = 0;
        for slot in &mut self.active[start as usize..(start + sectors) as usize] {
            match slot {
                Some(_) => self.repeated_sectors += 1,
                None => {
                    *slot = Some((now_s, command));
                    made_active += 1;
                }
            }
        }
        self.commands.push((made_active, 0, 0));
        let (first, end) = self.run_around(start as usize);
        let oldest = self.active[first..end].iter().flatten().map(|&(arrived, _)| arrived).min();
        for (arrived, _) in self.active[first..end].iter_mut().flatten() {
            *arrived = oldest.unwrap_or(*arrived);
        }
    }

    fn allocate(&mut self, start: u64, sectors: u64) {
        for slot in &mut self.active[start as usize..(start + sectors) as usize] {
            if let Some((_, owner)) = slot.take() {
                self.cancelled_sectors += 1;
                self.commands[owner].1 += 1;
            }
        }
    }

    /// The maximal run of active sectors around `sector`.
    fn run_around(&self, sector: usize) -> (usize, usize) {
        let mut first = sector;
        while first > 0 && self.active[first - 1].is_some() {
            first -= 1;
        }
        let mut end = sector;
        while end < self.active.len() && self.active[end].is_some() {
            end += 1;
        }
        (first, end)
    }

    /// The daemon: every merged run that has waited `age_s`, in LBA order.
    fn transfer_discard(&mut self, now_s: u64, age_s: u64) -> Vec<SectorRange> {
        let mut issued = Vec::new();
        let mut sector = 0;
        while sector < self.active.len() {
            let Some((arrived, _)) = self.active[sector] else {
                sector += 1;
                continue;
            };
            let (first, end) = self.run_around(sector);
            if now_s.saturating_sub(arrived) >= age_s {
                let mut owners: Vec<usize> =
                    self.active[first..end].iter().flatten().map(|&(_, owner)| owner).collect();
                owners.sort_unstable();
                owners.dedup();
                for &owner in &owners {
                    self.commands[owner].2 += 1;
                }
                self.merged_commands += owners.len() as u64 - 1;
                self.active[first..end].fill(None);
                issued.push(range(first as u64, end as u64));
            }
            sector = end;
        }
        issued
    }

    /// The model's counts, from each command's sectors.
    fn stats(&self, issued: &[SectorRange]) -> DiscardStats {
        let count = |keep: &dyn Fn(&(u64, u64, u64)) -> bool| self.commands.iter().filter(|c| keep(c)).count() as u64;
        DiscardStats {
            received_commands: self.commands.len() as u64,
            received_sectors: self.commands.iter().map(|c| c.0).sum(),
            repeated_sectors: self.repeated_sectors,
            issued_commands: issued.len() as u64,
            issued_sectors: issued.iter().map(|r| r.sectors()).sum(),
            merged_commands: self.merged_commands,
            split_commands: self.commands.iter().map(|c| c.2.saturating_sub(1)).sum(),
            cancelled_commands: count(&|c| c.0 > 0 && c.2 == 0),
            cancelled_sectors: self.cancelled_sectors,
            partially_cancelled_commands: count(&|c| c.1 > 0 && c.2 > 0),
            redundant_commands: count(&|c| c.0 == 0),
            dropped_commands: 0,
            dropped_sectors: 0,
        }
    }
}

/// The identities docs/delay-d.md states, once nothing waits.
fn identities_hold(stats: &DiscardStats) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        stats.received_sectors,
        stats.issued_sectors + stats.cancelled_sectors + stats.dropped_sectors,
        "sector identity: {:?}",
        stats
    );
    prop_assert_eq!(
        stats.received_commands + stats.split_commands,
        stats.issued_commands
            + stats.merged_commands
            + stats.cancelled_commands
            + stats.redundant_commands
            + stats.dropped_commands,
        "command identity: {:?}",
        stats
    );
    prop_assert!(
        stats.partially_cancelled_commands + stats.cancelled_commands + stats.redundant_commands
            <= stats.received_commands
    );
    Ok(())
}

/// The arrival index holds exactly the waiting ranges, each with its arrival.
fn arrival_index_matches(scheduler: &DiscardScheduler) -> bool {
    let waiting = &scheduler.waiting;
    waiting.by_arrival.len() == waiting.by_start.len()
        && waiting.by_start.iter().all(|(&start, w)| waiting.by_arrival.contains(&(w.arrived, start)))
}

/// Delay-D against the model: the same commands, in the same order, at the
/// same time, and the same counts.
fn matches_algorithm_1(at_journal_commit: bool, events: &[Event]) -> Result<(), TestCaseError> {
    let (delay_s, config) = (
        3,
        DiscardConfig { policy: DiscardPolicy::DelayD, delay_ms: 3_000, at_journal_commit, ..DiscardConfig::default() },
    );
    let timer_s = if at_journal_commit { 2 * delay_s } else { delay_s };
    let mut scheduler = DiscardScheduler::new(&config);
    let mut model = Algorithm1::new();
    let mut issued = Vec::new();
    let mut all_issued = Vec::new();
    for (second, event) in events.iter().enumerate() {
        let (now_s, now) = (second as u64, SimNs(second as u64 * SECOND));
        // Each event is preceded by the daemon's timer check, as in replay.
        scheduler.advance(now, &mut issued);
        let mut expected = model.transfer_discard(now_s, timer_s);
        match *event {
            Event::Discard(start, sectors) => {
                scheduler.discard(now, SectorRange::new(start, sectors), &mut issued);
                model.reclaim(start, sectors, now_s);
            }
            Event::Write(start, sectors) => {
                scheduler.write(SectorRange::new(start, sectors));
                model.allocate(start, sectors);
            }
            Event::Commit => {
                scheduler.journal_commit(now, &mut issued);
                if at_journal_commit {
                    expected.extend(model.transfer_discard(now_s, delay_s));
                }
            }
            Event::Tick => {}
        }
        prop_assert_eq!(&issued, &expected, "second {}", second);
        prop_assert!(arrival_index_matches(&scheduler), "second {}", second);
        all_issued.append(&mut issued);
    }
    scheduler.finish(&mut issued);
    let expected = model.transfer_discard(u64::MAX, 0);
    prop_assert_eq!(&issued, &expected);
    all_issued.append(&mut issued);
    prop_assert_eq!(scheduler.stats(), &model.stats(&all_issued));
    identities_hold(scheduler.stats())
}

proptest! {
    #[test]
    fn delay_d_matches_a_reference_model_of_algorithm_1(events in events()) {
        matches_algorithm_1(true, &events)?;
        matches_algorithm_1(false, &events)?;
    }

    #[test]
    fn the_counter_identities_hold_for_every_policy(events in events()) {
        for policy in [DiscardPolicy::Off, DiscardPolicy::Online, DiscardPolicy::DelayD, DiscardPolicy::Periodic] {
            let config = DiscardConfig { policy, delay_ms: 3_000, period_ms: 4_000, ..DiscardConfig::default() };
            let mut scheduler = DiscardScheduler::new(&config);
            let mut issued = Vec::new();
            for (second, event) in events.iter().enumerate() {
                let now = SimNs(second as u64 * SECOND);
                scheduler.advance(now, &mut issued);
                match *event {
                    Event::Discard(start, sectors) => scheduler.discard(now, SectorRange::new(start, sectors), &mut issued),
                    Event::Write(start, sectors) => scheduler.write(SectorRange::new(start, sectors)),
                    Event::Commit => scheduler.journal_commit(now, &mut issued),
                    Event::Tick => {}
                }
            }
            scheduler.finish(&mut issued);
            prop_assert_eq!(scheduler.waiting_sectors(), 0);
            identities_hold(scheduler.stats())?;
        }
    }
}

/// Issue 13's four-line trace: two adjacent DISCARDs merged, a write across
/// their boundary. The old counts gave issued + merged + cancelled = 3 for 2
/// received commands; each command now goes out alone, partly cancelled.
#[test]
fn a_rewrite_across_two_merged_commands_leaves_each_partly_cancelled() {
    let mut delay_d = scheduler(DiscardPolicy::DelayD);
    let mut issued = Vec::new();
    delay_d.discard(SimNs(0), range(0, 16), &mut issued);
    delay_d.discard(SimNs(0), range(16, 32), &mut issued);
    delay_d.write(range(8, 24));
    delay_d.journal_commit(SimNs(6 * SECOND), &mut issued);
    assert_eq!(issued, vec![range(0, 8), range(24, 32)]);
    let stats = delay_d.stats();
    assert_eq!(
        (stats.issued_commands, stats.merged_commands, stats.cancelled_commands, stats.partially_cancelled_commands),
        (2, 0, 0, 2)
    );
    assert_eq!((stats.received_sectors, stats.issued_sectors, stats.cancelled_sectors), (32, 16, 16));
}

#[test]
fn a_rewrite_inside_one_command_splits_it_and_a_repeated_discard_is_redundant() {
    let mut delay_d = scheduler(DiscardPolicy::DelayD);
    let mut issued = Vec::new();
    delay_d.discard(SimNs(0), range(0, 32), &mut issued);
    delay_d.discard(SimNs(0), range(4, 12), &mut issued);
    delay_d.write(range(8, 16));
    delay_d.finish(&mut issued);
    assert_eq!(issued, vec![range(0, 8), range(16, 32)]);
    let stats = delay_d.stats();
    assert_eq!((stats.received_commands, stats.split_commands, stats.redundant_commands), (2, 1, 1));
    assert_eq!((stats.received_sectors, stats.repeated_sectors, stats.cancelled_sectors), (32, 8, 8));
}

/// The periodic policy as it was before issue 28: every period is stepped
/// through, and a batch goes out at the first event at or after a tick.
/// What a batch issues is Delay-D's timer with no delay and no journal
/// commits: every waiting range, merged and in order.
struct TickByTick {
    everything: DiscardScheduler,
    period_ns: u64,
    next_tick_ns: u64,
    ticks_stepped: u64,
}

impl TickByTick {
    fn new(period_ms: u64) -> Self {
        let config = DiscardConfig { policy: DiscardPolicy::DelayD, delay_ms: 0, at_journal_commit: false, period_ms };
        let period_ns = period_ms * 1_000_000;
        Self { everything: DiscardScheduler::new(&config), period_ns, next_tick_ns: period_ns, ticks_stepped: 0 }
    }

    fn advance(&mut self, now: SimNs, issue: &mut Vec<SectorRange>) {
        if now.0 >= self.next_tick_ns {
            self.everything.advance(now, issue);
            while self.next_tick_ns <= now.0 {
                self.next_tick_ns += self.period_ns;
                self.ticks_stepped += 1;
            }
        }
    }
}

fn timed_events() -> impl Strategy<Value = Vec<(u64, Event)>> {
    prop::collection::vec((0..20_000_000u64, events().prop_map(|events| events[0].clone())), 1..200)
}

proptest! {
    /// Issue 28: periodic DISCARD jumps to the next batch by division; it
    /// issues the same ranges at the same events, with the same counts, as
    /// stepping through every period did.
    #[test]
    fn periodic_batches_match_stepping_through_every_period(events in timed_events(), period_ms in 1..8u64) {
        let config = DiscardConfig { policy: DiscardPolicy::Periodic, period_ms, ..DiscardConfig::default() };
        let mut scheduler = DiscardScheduler::new(&config);
        let mut reference = TickByTick::new(period_ms);
        let (mut issued, mut expected) = (Vec::new(), Vec::new());
        let mut now = SimNs(0);
        for (gap_ns, event) in &events {
            now.0 += gap_ns;
            scheduler.advance(now, &mut issued);
            reference.advance(now, &mut expected);
            match *event {
                Event::Discard(start, sectors) => {
                    scheduler.discard(now, SectorRange::new(start, sectors), &mut issued);
                    reference.everything.discard(now, SectorRange::new(start, sectors), &mut expected);
                }
                Event::Write(start, sectors) => {
                    scheduler.write(SectorRange::new(start, sectors));
                    reference.everything.write(SectorRange::new(start, sectors));
                }
                Event::Commit => {
                    scheduler.journal_commit(now, &mut issued);
                    reference.everything.journal_commit(now, &mut expected);
                }
                Event::Tick => {}
            }
            prop_assert_eq!(&issued, &expected, "at {} ns", now.0);
            prop_assert_eq!(scheduler.next_batch.0, reference.next_tick_ns);
        }
        scheduler.finish(&mut issued);
        reference.everything.finish(&mut expected);
        prop_assert_eq!(&issued, &expected);
        prop_assert_eq!(scheduler.stats(), reference.everything.stats());
    }
}

/// Issue 28: a 2-line trace a day long with `period_ms = 1` took about 20
/// minutes, stepping through 86.4 M periods. The batch after the second
/// event is found at once, and is the first tick after it.
#[test]
fn a_day_between_two_discards_is_one_step_at_a_1_ms_period() {
    const DAY: u64 = 86_400 * SECOND;
    let config = DiscardConfig { policy: DiscardPolicy::Periodic, period_ms: 1, ..DiscardConfig::default() };
    let mut scheduler = DiscardScheduler::new(&config);
    let mut issued = Vec::new();
    scheduler.discard(SimNs(0), range(0, 8), &mut issued);
    scheduler.advance(SimNs(DAY + 1), &mut issued);
    assert_eq!(issued, vec![range(0, 8)]);
    assert_eq!(scheduler.next_batch, SimNs(DAY + 1_000_000));
    // A reference that steps through every period needs one step per millisecond.
    let mut reference = TickByTick::new(1);
    reference.advance(SimNs(SECOND + 1), &mut Vec::new());
    assert_eq!(reference.ticks_stepped, 1_000);
    // The last representable time is reached without overflow.
    scheduler.advance(SimNs(u64::MAX - 1), &mut issued);
    assert_eq!(scheduler.next_batch, SimNs(u64::MAX));
}
