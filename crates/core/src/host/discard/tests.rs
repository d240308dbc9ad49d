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
/// sector, and is due once that has waited the delay.
struct Algorithm1 {
    arrived_s: Vec<Option<u64>>,
    cancelled_sectors: u64,
}

impl Algorithm1 {
    fn new() -> Self {
        Self { arrived_s: vec![None; 256], cancelled_sectors: 0 }
    }

    fn reclaim(&mut self, start: u64, sectors: u64, now_s: u64) {
        for slot in &mut self.arrived_s[start as usize..(start + sectors) as usize] {
            *slot = Some(slot.map_or(now_s, |arrived| arrived.min(now_s)));
        }
        let (first, end) = self.run_around(start as usize);
        let oldest = self.arrived_s[first..end].iter().flatten().min().copied();
        self.arrived_s[first..end].fill(oldest);
    }

    fn allocate(&mut self, start: u64, sectors: u64) {
        for slot in &mut self.arrived_s[start as usize..(start + sectors) as usize] {
            self.cancelled_sectors += u64::from(slot.take().is_some());
        }
    }

    /// The maximal run of active sectors around `sector`.
    fn run_around(&self, sector: usize) -> (usize, usize) {
        let mut first = sector;
        while first > 0 && self.arrived_s[first - 1].is_some() {
            first -= 1;
        }
        let mut end = sector;
        while end < self.arrived_s.len() && self.arrived_s[end].is_some() {
            end += 1;
        }
        (first, end)
    }

    /// The daemon: every merged run that has waited `age_s`, in LBA order.
    fn transfer_discard(&mut self, now_s: u64, age_s: u64) -> Vec<SectorRange> {
        let mut issued = Vec::new();
        let mut sector = 0;
        while sector < self.arrived_s.len() {
            let Some(arrived) = self.arrived_s[sector] else {
                sector += 1;
                continue;
            };
            let (first, end) = self.run_around(sector);
            if now_s.saturating_sub(arrived) >= age_s {
                self.arrived_s[first..end].fill(None);
                issued.push(range(first as u64, end as u64));
            }
            sector = end;
        }
        issued
    }
}

/// Delay-D against the model: the same commands, in the same order, at the
/// same time, and the same cancelled sectors.
fn matches_algorithm_1(at_journal_commit: bool, events: &[Event]) -> Result<(), TestCaseError> {
    let (delay_s, config) = (
        3,
        DiscardConfig { policy: DiscardPolicy::DelayD, delay_ms: 3_000, at_journal_commit, ..DiscardConfig::default() },
    );
    let timer_s = if at_journal_commit { 2 * delay_s } else { delay_s };
    let mut scheduler = DiscardScheduler::new(&config);
    let mut model = Algorithm1::new();
    let mut issued = Vec::new();
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
        prop_assert_eq!(std::mem::take(&mut issued), expected, "second {}", second);
    }
    scheduler.finish(&mut issued);
    prop_assert_eq!(issued, model.transfer_discard(u64::MAX, 0));
    prop_assert_eq!(scheduler.stats().cancelled_sectors, model.cancelled_sectors);
    Ok(())
}

proptest! {
    #[test]
    fn delay_d_matches_a_reference_model_of_algorithm_1(events in events()) {
        matches_algorithm_1(true, &events)?;
        matches_algorithm_1(false, &events)?;
    }
}
