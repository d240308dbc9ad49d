//! The counting loop's queue of requests turned from events ahead of their
//! submission: a ring of a power-of-two size that grows only when an event
//! causes more requests than it holds (a DISCARD stage's batch), so a
//! request costs a store and a load, not a deque's bookkeeping.

use crate::host::{Op, Request};
use crate::units::{Lpn, StreamId};

/// A queued request and the job of the event that caused it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Queued {
    pub request: Request,
    pub job: u16,
}

const EMPTY: Queued =
    Queued { request: Request { op: Op::Flush, start: Lpn(0), pages: 0, stream: StreamId(0) }, job: 0 };

#[derive(Debug)]
pub(super) struct Ahead {
    slots: Vec<Queued>,
    head: usize,
    len: usize,
}

impl Ahead {
    /// Room for `capacity` requests (rounded up to a power of two) before it grows.
    pub fn with_capacity(capacity: usize) -> Self {
        Self { slots: vec![EMPTY; capacity.next_power_of_two().max(2)], head: 0, len: 0 }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    #[inline]
    pub fn push(&mut self, request: Request, job: u16) {
        if self.len == self.slots.len() {
            self.grow();
        }
        let slot = (self.head + self.len) & self.mask();
        self.slots[slot] = Queued { request, job };
        self.len += 1;
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Queued> {
        if self.len == 0 {
            return None;
        }
        let queued = self.slots[self.head];
        self.head = (self.head + 1) & self.mask();
        self.len -= 1;
        Some(queued)
    }

    /// The `index`-th request from the front.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&Request> {
        (index < self.len).then(|| &self.slots[(self.head + index) & self.mask()].request)
    }

    /// A sink for the host stages' requests of one event of `job` (their
    /// priorities do not matter when counting).
    pub fn for_job(&mut self, job: u16) -> ForJob<'_> {
        ForJob { ahead: self, job }
    }

    #[cold]
    fn grow(&mut self) {
        let mut slots = vec![EMPTY; self.slots.len() * 2];
        for (index, slot) in slots.iter_mut().take(self.len).enumerate() {
            *slot = self.slots[(self.head + index) & self.mask()];
        }
        self.slots = slots;
        self.head = 0;
    }
}

pub(super) struct ForJob<'a> {
    ahead: &'a mut Ahead,
    job: u16,
}

impl Extend<(Request, bool)> for ForJob<'_> {
    #[inline]
    fn extend<I: IntoIterator<Item = (Request, bool)>>(&mut self, requests: I) {
        for (request, _) in requests {
            self.ahead.push(request, self.job);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(start: u32) -> Request {
        Request { op: Op::Write, start: Lpn(start), pages: 1, stream: StreamId(0) }
    }

    #[test]
    fn keeps_order_and_jobs_across_wraps_and_growth() {
        let mut ahead = Ahead::with_capacity(2);
        let mut expected = std::collections::VecDeque::new();
        for round in 0..50u32 {
            // Push more than pop in some rounds so the ring wraps and grows.
            for i in 0..(round % 5) {
                let job = u16::try_from(round).expect("small");
                ahead.push(request(round * 10 + i), job);
                expected.push_back((round * 10 + i, job));
            }
            for _ in 0..(round % 3) {
                let popped = ahead.pop().map(|queued| (queued.request.start.0, queued.job));
                assert_eq!(popped, expected.pop_front());
            }
            assert_eq!(ahead.len(), expected.len());
            for (index, &(start, _)) in expected.iter().enumerate() {
                assert_eq!(ahead.get(index).map(|request| request.start.0), Some(start));
            }
            assert!(ahead.get(expected.len()).is_none());
        }
    }

    #[test]
    fn sink_tags_the_requests_with_the_job() {
        let mut ahead = Ahead::with_capacity(4);
        ahead.for_job(7).extend([(request(1), true), (request(2), false)]);
        assert_eq!(ahead.pop().map(|queued| (queued.request.start.0, queued.job)), Some((1, 7)));
        assert_eq!(ahead.pop().map(|queued| (queued.request.start.0, queued.job)), Some((2, 7)));
        assert!(ahead.pop().is_none());
    }
}
