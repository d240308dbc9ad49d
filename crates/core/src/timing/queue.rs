//! The engine's event queue: a radix heap (Ahuja, Mehlhorn, Orlin, Tarjan
//! 1990) over event times. The engine never schedules an event before the
//! current time, so times popped never decrease and a radix heap applies:
//! push is O(1) and each event moves between buckets at most once per bit of
//! the gap between its time and the last popped one. Events with equal times
//! pop in payload order, whatever order they were pushed in, so a run's
//! trajectory does not depend on incidental push order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// An event: its time and an opaque payload (kind and index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub time_ns: u64,
    pub payload: u64,
}

/// Monotone priority queue of [`Event`]s by time. Buckets keep their
/// capacity, so the steady state allocates nothing.
#[derive(Debug)]
pub struct EventQueue {
    /// Payloads of the events at exactly `last_ns`, smallest first. Flash
    /// timings are round numbers, so equal times are common.
    current: BinaryHeap<Reverse<u64>>,
    /// Bucket `i` (from 1) holds events whose time differs from `last_ns`
    /// first in bit `i - 1`; bucket 0 is unused (see `current`).
    buckets: Vec<Vec<Event>>,
    /// Bit `i` set: bucket `i` is not empty (finds the lowest one in one instruction).
    occupied: u128,
    last_ns: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self { current: BinaryHeap::new(), buckets: (0..=64).map(|_| Vec::new()).collect(), occupied: 0, last_ns: 0 }
    }

    fn bucket(&self, time_ns: u64) -> usize {
        (u64::BITS - (time_ns ^ self.last_ns).leading_zeros()) as usize
    }

    /// Schedules `event`; its time must not precede the last popped time.
    #[inline]
    pub fn push(&mut self, event: Event) {
        debug_assert!(event.time_ns >= self.last_ns, "event scheduled in the past");
        match self.bucket(event.time_ns.max(self.last_ns)) {
            0 => self.current.push(Reverse(event.payload)),
            bucket => {
                self.buckets[bucket].push(event);
                self.occupied |= 1 << bucket;
            }
        }
    }

    /// Time of the earliest event, without removing it. It leaves the
    /// reference time alone, so events may still be pushed at any time
    /// from the last popped one on.
    pub fn peek_time(&self) -> Option<u64> {
        if !self.current.is_empty() {
            return Some(self.last_ns);
        }
        let lowest = self.lowest_bucket()?;
        self.buckets[lowest].iter().map(|event| event.time_ns).min()
    }

    /// Removes the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        if self.current.is_empty() {
            self.advance()?;
        }
        let Reverse(payload) = self.current.pop()?;
        Some(Event { time_ns: self.last_ns, payload })
    }

    fn lowest_bucket(&self) -> Option<usize> {
        (self.occupied != 0).then(|| self.occupied.trailing_zeros() as usize)
    }

    /// Moves the reference time to the lowest non-empty bucket's minimum and
    /// spreads that bucket's events over the lower buckets and `current`.
    fn advance(&mut self) -> Option<()> {
        let lowest = self.lowest_bucket()?;
        self.occupied &= !(1 << lowest);
        let mut moving = std::mem::take(&mut self.buckets[lowest]);
        self.last_ns = moving.iter().map(|event| event.time_ns).min()?;
        for event in moving.drain(..) {
            self.push(event);
        }
        self.buckets[lowest] = moving;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Interleaved pushes (never before the last pop) and pops come out
        /// in time order, like a sorted reference.
        #[test]
        fn pops_in_time_order(steps in proptest::collection::vec((any::<bool>(), 0u64..5_000), 1..400)) {
            let mut queue = EventQueue::new();
            let mut reference: Vec<u64> = Vec::new();
            let mut now = 0;
            for (index, (pop, delay)) in steps.into_iter().enumerate() {
                if pop && !reference.is_empty() {
                    let expected = reference.remove(0);
                    let event = queue.pop().expect("queue holds what the reference holds");
                    prop_assert_eq!(event.time_ns, expected);
                    now = event.time_ns;
                } else {
                    let time_ns = now + delay;
                    queue.push(Event { time_ns, payload: index as u64 });
                    let at = reference.partition_point(|&t| t <= time_ns);
                    reference.insert(at, time_ns);
                }
            }
            while let Some(expected) = (!reference.is_empty()).then(|| reference.remove(0)) {
                prop_assert_eq!(queue.pop().map(|event| event.time_ns), Some(expected));
            }
            prop_assert!(queue.pop().is_none());
        }

        /// Equal times pop in payload order, however they were pushed,
        /// including pushes at the current time after a pop.
        #[test]
        fn equal_times_pop_in_payload_order(payloads in proptest::collection::vec(0u64..1_000, 2..50)) {
            let (first, second) = payloads.split_at(payloads.len() / 2);
            let mut queue = EventQueue::new();
            queue.push(Event { time_ns: 10, payload: 0 });
            for &payload in first {
                queue.push(Event { time_ns: 20, payload });
            }
            prop_assert_eq!(queue.pop().map(|event| event.time_ns), Some(10));
            let smallest_first = first.iter().copied().min().expect("first half is not empty");
            prop_assert_eq!(queue.pop().map(|event| event.payload), Some(smallest_first));
            for &payload in second {
                queue.push(Event { time_ns: 20, payload });
            }
            let mut rest: Vec<u64> = first.iter().chain(second).copied().collect();
            rest.sort_unstable();
            let taken = rest.iter().position(|&payload| payload == smallest_first).expect("present");
            rest.remove(taken);
            let popped: Vec<u64> = std::iter::from_fn(|| queue.pop().map(|event| event.payload)).collect();
            prop_assert_eq!(popped, rest);
        }
    }
}
