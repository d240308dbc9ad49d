//! The engine's event queue: a radix heap (Ahuja, Mehlhorn, Orlin, Tarjan
//! 1990) over event times. The engine never schedules an event before the
//! current time, so times popped never decrease and a radix heap applies:
//! push is O(1) and each event moves between buckets at most once per bit of
//! the gap between its time and the last popped one. Events with equal times
//! pop in an order fixed by the sequence of pushes and pops, so runs stay
//! deterministic.

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
    /// Bucket `i` holds events whose time differs from `last_ns` first in
    /// bit `i - 1` (bucket 0: equal to `last_ns`).
    buckets: Vec<Vec<Event>>,
    last_ns: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self { buckets: (0..=64).map(|_| Vec::new()).collect(), last_ns: 0 }
    }

    fn bucket(&self, time_ns: u64) -> usize {
        (u64::BITS - (time_ns ^ self.last_ns).leading_zeros()) as usize
    }

    /// Schedules `event`; its time must not precede the last popped time.
    pub fn push(&mut self, event: Event) {
        debug_assert!(event.time_ns >= self.last_ns, "event scheduled in the past");
        let bucket = self.bucket(event.time_ns.max(self.last_ns));
        self.buckets[bucket].push(event);
    }

    /// Time of the earliest event, without removing it. It leaves the
    /// reference time alone, so events may still be pushed at any time
    /// from the last popped one on.
    pub fn peek_time(&self) -> Option<u64> {
        if !self.buckets[0].is_empty() {
            return Some(self.last_ns);
        }
        let lowest = self.buckets.iter().find(|bucket| !bucket.is_empty())?;
        lowest.iter().map(|event| event.time_ns).min()
    }

    /// Removes the earliest event.
    pub fn pop(&mut self) -> Option<Event> {
        self.settle()?;
        self.buckets[0].pop()
    }

    /// Makes bucket 0 non-empty: the lowest non-empty bucket's minimum
    /// becomes the new reference time and its events spread to lower buckets.
    fn settle(&mut self) -> Option<()> {
        if !self.buckets[0].is_empty() {
            return Some(());
        }
        let lowest = self.buckets.iter().position(|bucket| !bucket.is_empty())?;
        let mut moving = std::mem::take(&mut self.buckets[lowest]);
        self.last_ns = moving.iter().map(|event| event.time_ns).min()?;
        for event in moving.drain(..) {
            let bucket = self.bucket(event.time_ns);
            self.buckets[bucket].push(event);
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
    }
}
