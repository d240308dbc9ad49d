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
    let mut scheduler = DiscardScheduler::new(&DiscardConfig { policy, delay_ms: 3_000, period_ms: 4_000, ..DiscardConfig::default() });
    let mut last_was_discard = [false; 256];
    let mut issued = Vec::new();
    let check = |issued: &mut Vec<SectorRange>, last: &[bool; 256]| -> Result<(), TestCaseError> {
        for range in issued.drain(..) {
            for sector in range.start..range.end {
                prop_assert!(last[sector as usize], "{policy:?} discarded sector {sector}, rewritten after its DISCARD");
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
    prop_assert!(stats.issued_sectors + stats.cancelled_sectors <= stats.received_sectors || policy == DiscardPolicy::Online);
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
