//! Stripe-aligned write merging (Rajimwale, Prabhakaran, Davis, "Block
//! management in solid-state devices", slides 12-15): the write buffer's
//! bookkeeping of partly written stripes. A stripe is written whole, without
//! a read-modify-write, once requests have covered it; otherwise a partial
//! stripe is written with a read-modify-write when the buffer needs its room
//! (oldest first), or when the engine empties the buffer (the device went
//! idle, or the host flushed: docs/stripe-merging.md, "What the slides say").

use crate::units::StreamId;
use std::collections::{HashMap, VecDeque};

/// Pages of one stripe held in the buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StripeFill {
    pub stripe: u32,
    /// When the stripe entered the buffer (tells stale eviction entries apart).
    admitted: u64,
    /// The stream of the write that last added to it: where it is written.
    pub stream: StreamId,
    /// `present[i]`: page `i` of the stripe is buffered. (Not a bitmap on
    /// purpose: rustc 1.95 at opt-level >= 2 without overflow checks
    /// miscompiled the bitmap version, losing the `pages` count; see
    /// docs/stripe-merging.md.)
    pub present: Vec<bool>,
    pub pages: u32,
}

impl StripeFill {
    fn new(stripe: u32, admitted: u64, stripe_pages: u32) -> Self {
        Self { stripe, admitted, stream: StreamId(0), present: vec![false; stripe_pages as usize], pages: 0 }
    }

    pub fn contains(&self, page_in_stripe: u32) -> bool {
        self.present[page_in_stripe as usize]
    }

    /// Marks a page buffered; false if it already was (an overwrite that
    /// coalesces in the buffer).
    fn insert(&mut self, page_in_stripe: u32) -> bool {
        let slot = &mut self.present[page_in_stripe as usize];
        if *slot {
            return false;
        }
        *slot = true;
        self.pages += 1;
        true
    }
}

/// Occupancy of the device write buffer, in pages, and (with merging) the
/// partial stripes it holds.
#[derive(Clone, Debug)]
pub struct WriteBuffer {
    capacity: u32,
    /// Admitted pages not yet handed to the flash.
    pending: u32,
    /// Pages being programmed; their room returns when the flush completes.
    flushing: u32,
    merge: Option<MergeState>,
}

#[derive(Clone, Debug)]
struct MergeState {
    stripe_pages: u32,
    stripes: HashMap<u32, StripeFill>,
    /// (stripe, admission) in the order stripes entered the buffer: the
    /// eviction order. Entries of stripes written since are skipped.
    order: VecDeque<(u32, u64)>,
    admissions: u64,
}

impl WriteBuffer {
    /// A buffer of `capacity` pages; `merge_stripe_pages` enables merging
    /// along stripes of that many pages.
    pub fn new(capacity: u32, merge_stripe_pages: Option<u32>) -> Self {
        let merge = merge_stripe_pages.map(|stripe_pages| MergeState {
            stripe_pages,
            stripes: HashMap::new(),
            order: VecDeque::new(),
            admissions: 0,
        });
        Self { capacity, pending: 0, flushing: 0, merge }
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    pub fn merging(&self) -> bool {
        self.merge.is_some()
    }

    /// Whether a write of `pages` fits now. Overwrites of buffered pages are
    /// counted as if they needed room, so admission never depends on them.
    pub fn fits(&self, pages: u32) -> bool {
        self.pending + self.flushing + pages <= self.capacity
    }

    /// The oldest partial stripe to evict so that a write of `pages` fits
    /// once the flushes under way complete; `None` when evicting more would
    /// not help.
    pub fn evict_for(&mut self, pages: u32) -> Option<StripeFill> {
        if self.pending + pages <= self.capacity {
            return None;
        }
        self.evict_oldest()
    }

    /// The oldest partial stripe, handed to the flash (a host flush writes
    /// them all); `None` when none is held.
    pub fn evict_oldest(&mut self) -> Option<StripeFill> {
        let merge = self.merge.as_mut()?;
        let fill = loop {
            let (stripe, admitted) = merge.order.pop_front()?;
            if merge.stripes.get(&stripe).is_some_and(|fill| fill.admitted == admitted) {
                break merge.stripes.remove(&stripe)?;
            }
        };
        self.hand_over(&fill);
        Some(fill)
    }

    /// Whether partial stripes are held.
    pub fn holds_partial_stripes(&self) -> bool {
        self.merge.as_ref().is_some_and(|merge| !merge.stripes.is_empty())
    }

    /// A held stripe's pages move from pending to flushing.
    fn hand_over(&mut self, fill: &StripeFill) {
        self.pending -= fill.pages;
        self.flushing += fill.pages;
    }

    /// Admits pages handed straight to the flash (eager flushing).
    pub fn admit_flushing(&mut self, pages: u32) {
        self.flushing += pages;
    }

    /// Admits `pages` pages from `start`, written by `stream`, into the
    /// stripes they belong to and appends the stripes they complete to
    /// `complete` (to be written whole).
    pub fn admit_merging(&mut self, start: u32, pages: u32, stream: StreamId, complete: &mut Vec<StripeFill>) {
        let Some(merge) = self.merge.as_mut() else { return };
        let stripe_pages = merge.stripe_pages;
        for page in start..start + pages {
            let stripe = page / stripe_pages;
            let fill = merge.stripes.entry(stripe).or_insert_with(|| {
                merge.admissions += 1;
                merge.order.push_back((stripe, merge.admissions));
                StripeFill::new(stripe, merge.admissions, stripe_pages)
            });
            fill.stream = stream;
            if fill.insert(page % stripe_pages) {
                self.pending += 1;
            }
            if fill.pages == stripe_pages {
                if let Some(full) = merge.stripes.remove(&stripe) {
                    self.pending -= full.pages;
                    self.flushing += full.pages;
                    complete.push(full);
                }
            }
        }
    }

    /// A flush of `pages` pages completed: their room is free again.
    pub fn flushed(&mut self, pages: u32) {
        self.flushing -= pages;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_pages_complete_a_stripe() {
        let mut buffer = WriteBuffer::new(16, Some(4));
        let mut complete = Vec::new();
        buffer.admit_merging(0, 3, StreamId(0), &mut complete);
        assert!(complete.is_empty());
        buffer.admit_merging(3, 2, StreamId(0), &mut complete);
        assert_eq!(complete.len(), 1);
        assert_eq!(complete[0].stripe, 0);
        assert_eq!(complete[0].pages, 4);
        assert!(!buffer.fits(12), "4 pages flushing + 1 pending leave 11");
        assert!(buffer.fits(11));
        buffer.flushed(4);
        assert!(buffer.fits(15));
    }

    #[test]
    fn overwrites_coalesce_and_eviction_takes_the_oldest_stripe() {
        let mut buffer = WriteBuffer::new(8, Some(4));
        let mut complete = Vec::new();
        buffer.admit_merging(4, 1, StreamId(0), &mut complete);
        buffer.admit_merging(0, 2, StreamId(0), &mut complete);
        buffer.admit_merging(0, 2, StreamId(0), &mut complete);
        assert!(complete.is_empty());
        let evicted = buffer.evict_for(7).expect("3 pending + 7 exceed 8");
        assert_eq!(evicted.stripe, 1);
        assert!(evicted.contains(0) && !evicted.contains(1));
        assert_eq!(buffer.evict_for(6), None, "2 pending + 6 fit once the flush completes");
    }

    #[test]
    fn emptying_the_buffer_writes_every_partial_stripe_once() {
        let mut buffer = WriteBuffer::new(16, Some(4));
        let mut complete = Vec::new();
        buffer.admit_merging(0, 1, StreamId(0), &mut complete);
        buffer.admit_merging(4, 1, StreamId(1), &mut complete);
        buffer.admit_merging(1, 1, StreamId(2), &mut complete);
        assert!(buffer.holds_partial_stripes());
        let first = buffer.evict_oldest().expect("stripe 0");
        assert_eq!((first.stripe, first.pages, first.stream), (0, 2, StreamId(2)), "written where its last write went");
        assert_eq!(buffer.evict_oldest().map(|fill| fill.stripe), Some(1));
        assert_eq!(buffer.evict_oldest(), None, "nothing is held twice");
        assert!(!buffer.holds_partial_stripes());
        assert!(buffer.fits(13) && !buffer.fits(14), "3 pages flushing");
    }
}
