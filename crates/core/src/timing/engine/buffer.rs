//! The device write buffer and stripe-sized mapping units: admitting
//! buffered writes, flushing stripes (with the read-modify-write of what a
//! stripe lacks), idle flushes and the flush barrier.

use super::{pack, Engine, EventKind, JobKind};
use crate::ftl::{FtlError, TranslationLayer};
use crate::timing::stripe::StripeFill;
use crate::units::{Lpn, StreamId};
use std::collections::VecDeque;

/// The buffer flush jobs under way, for flush requests: a flush completes
/// once every flush job opened before it has finished (jobs finish out of
/// order). Sequence numbers are consecutive, so a window of done flags from
/// the oldest open job suffices.
#[derive(Debug, Default)]
pub(super) struct FlushBarrier {
    pub(super) next_seq: u64,
    /// Done flags of jobs `oldest..next_seq`.
    pub(super) oldest: u64,
    pub(super) done: VecDeque<bool>,
    /// Flush requests' jobs waiting for every flush job below their barrier.
    pub(super) waiters: VecDeque<(u64, u32)>,
}

impl FlushBarrier {
    pub(super) fn open(&mut self) -> u64 {
        self.done.push_back(false);
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// The barrier a flush arriving now waits for, if any job is still open.
    pub(super) fn barrier(&self) -> Option<u64> {
        (!self.done.is_empty()).then_some(self.next_seq)
    }

    pub(super) fn wait(&mut self, barrier: u64, job: u32) {
        self.waiters.push_back((barrier, job));
    }

    /// Job `seq` finished.
    pub(super) fn done(&mut self, seq: u64) {
        // `seq` lies in the window: it was opened and is not yet done.
        let index = (seq - self.oldest) as usize;
        self.done[index] = true;
        while self.done.front() == Some(&true) {
            self.done.pop_front();
            self.oldest += 1;
        }
    }

    /// The next waiting job whose barrier has passed (barriers come in order).
    pub(super) fn pop_passed(&mut self) -> Option<u32> {
        let &(barrier, job) = self.waiters.front()?;
        (barrier <= self.oldest).then(|| {
            self.waiters.pop_front();
            job
        })
    }
}

impl Engine {
    /// Admits waiting writes, in order, while the buffer has room. An
    /// admitted write completes at once; its pages go to the flash as the
    /// flush policy says.
    pub(super) fn admit_buffered<T: TranslationLayer>(&mut self, ftl: &mut T) -> Result<(), FtlError> {
        while let Some(&slot) = self.buffer_waiting.front() {
            let request = self.requests.get(slot).timed.request;
            if !self.buffer.fits(request.pages) {
                while let Some(fill) = self.buffer.evict_for(request.pages) {
                    self.flush_stripe(ftl, &fill)?;
                }
                return Ok(());
            }
            self.buffer_waiting.pop_front();
            let acknowledged = self.new_job(JobKind::Request(slot));
            self.release(acknowledged);
            if self.buffer.merging() {
                let mut complete = std::mem::take(&mut self.stripes_complete);
                self.buffer.admit_merging(request.start.0, request.pages, request.stream, &mut complete);
                for fill in complete.drain(..) {
                    self.stats.stripes_merged += 1;
                    self.flush_stripe(ftl, &fill)?;
                }
                self.stripes_complete = complete;
            } else {
                self.buffer.admit_flushing(request.pages);
                let job = self.new_flush_job(request.pages);
                self.write_range(ftl, request.start.0, request.pages, request.stream, job)?;
                self.release(job);
            }
        }
        Ok(())
    }

    /// The last request left the device: if it holds partial stripes and
    /// flushes them when idle, an `IdleFlush` event comes after the delay.
    pub(super) fn idle_begins(&mut self) {
        let Some(delay_ns) = self.config.merge_idle_flush_ns() else { return };
        if self.outstanding == 0 && self.buffer.holds_partial_stripes() {
            self.idle_periods = self.idle_periods.wrapping_add(1);
            self.events.push(pack(self.now_ns.saturating_add(delay_ns), EventKind::IdleFlush, self.idle_periods));
        }
    }

    /// The device has been idle for `timing.merge_idle_ns` since idle period
    /// `period` began: unless a request came since, its partial stripes are
    /// written, each with the RMW of what it lacks (docs/stripe-merging.md).
    pub(super) fn idle_flush<T: TranslationLayer>(&mut self, ftl: &mut T, period: u32) -> Result<(), FtlError> {
        if period != self.idle_periods || self.outstanding > 0 {
            return Ok(());
        }
        while let Some(fill) = self.buffer.evict_oldest() {
            self.stats.stripes_flushed_idle += 1;
            self.flush_stripe(ftl, &fill)?;
        }
        Ok(())
    }

    /// Writes a stripe the buffer let go, with the RMW of the pages it lacks.
    pub(super) fn flush_stripe<T: TranslationLayer>(&mut self, ftl: &mut T, fill: &StripeFill) -> Result<(), FtlError> {
        let job = self.new_flush_job(fill.pages);
        let first = fill.stripe * self.config.stripe_pages;
        self.write_stripe(ftl, first, &|page| fill.contains(page - first), fill.stream, job)?;
        self.release(job);
        Ok(())
    }

    /// Writes `pages` pages from `start`, stripe by stripe.
    pub(super) fn write_range<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        start: u32,
        pages: u32,
        stream: StreamId,
        job: u32,
    ) -> Result<(), FtlError> {
        let stripe_pages = self.config.stripe_pages;
        if stripe_pages == 1 {
            for lpn in start..start + pages {
                ftl.write(Lpn(lpn), stream)?;
                self.enqueue_recorded(ftl, job);
            }
            return Ok(());
        }
        let end = start + pages;
        let mut first = start / stripe_pages * stripe_pages;
        while first < end {
            self.write_stripe(ftl, first, &|page| (start..end).contains(&page), stream, job)?;
            first += stripe_pages;
        }
        Ok(())
    }

    /// Writes one stripe (mapping unit) starting at page `first`: the pages
    /// `written` selects come from the host; the stripe's other mapped pages
    /// are read and rewritten with them (read-modify-write, slide 12).
    pub(super) fn write_stripe<T: TranslationLayer>(
        &mut self,
        ftl: &mut T,
        first: u32,
        written: &dyn Fn(u32) -> bool,
        stream: StreamId,
        job: u32,
    ) -> Result<(), FtlError> {
        let end = (first + self.config.stripe_pages).min(self.geometry.logical_pages);
        for page in first..end {
            if !written(page) && ftl.is_mapped(Lpn(page)) {
                ftl.read(Lpn(page))?;
                self.stats.rmw_pages_read += 1;
                self.enqueue_recorded(ftl, job);
            }
        }
        for page in first..end {
            let host = written(page);
            if host || ftl.is_mapped(Lpn(page)) {
                ftl.write(Lpn(page), stream)?;
                if !host {
                    self.stats.rmw_pages_rewritten += 1;
                }
                self.enqueue_recorded(ftl, job);
            }
        }
        Ok(())
    }
}
