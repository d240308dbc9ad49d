//! Time for the open-channel mode: a timeline per parallel unit and per
//! channel, and the host write buffer's occupancy. The lead's event engine
//! (`crate::timing`) drives the device-side `PageFtl` only, so this mode
//! keeps its own, simpler clock with the same `[timing]` parameters:
//!
//! * a program of `n` pages moves them over the PU's channel (`n` transfer
//!   times, the bus shared by the group) and then holds the PU for `n`
//!   page programs; a read holds the PU for a sense and then the channel for
//!   one transfer; a reset holds the PU for an erase;
//! * operations on one PU run in issue order, PUs run in parallel;
//! * buffered pages occupy the write buffer until their program completes;
//!   a host write waits for room, a flush for every program issued so far.
//!
//! Not modelled: the controller's command overhead, the host interface's
//! transfer time, suspend/resume of programs by reads, and GC in idle time
//! (GC runs when a line is needed and competes with host writes for PUs,
//! which is what pblk's rate limiter arbitrates).

use crate::timing::TimingConfig;
use crate::units::UnitId;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Debug)]
pub struct PuClock {
    read_ns: u64,
    program_ns: u64,
    erase_ns: u64,
    transfer_ns: u64,
    groups: u32,
    pu_free_ns: Vec<u64>,
    channel_free_ns: Vec<u64>,
    /// Programs in flight: (completion, buffered pages they release).
    in_flight: BinaryHeap<Reverse<(u64, u32)>>,
    in_flight_pages: u64,
    last_done_ns: u64,
}

impl PuClock {
    pub fn new(config: &TimingConfig, page_bytes: u32, groups: u32, pus: u32) -> Self {
        Self {
            read_ns: config.read_ns,
            program_ns: config.program_ns,
            erase_ns: config.erase_ns,
            transfer_ns: config.page_transfer_ns(page_bytes),
            groups,
            pu_free_ns: vec![0; pus as usize],
            channel_free_ns: vec![0; groups as usize],
            in_flight: BinaryHeap::new(),
            in_flight_pages: 0,
            last_done_ns: 0,
        }
    }

    /// Programs `pages` pages on `pu` from `at`; `buffered` of them leave the
    /// write buffer when it completes. Returns the completion time.
    pub fn program(&mut self, pu: UnitId, pages: u32, buffered: u32, at: u64) -> u64 {
        let channel = (pu.0 % self.groups) as usize;
        let transferred = self.channel_free_ns[channel].max(at) + u64::from(pages) * self.transfer_ns;
        self.channel_free_ns[channel] = transferred;
        let done = self.pu_free_ns[pu.index()].max(transferred) + u64::from(pages) * self.program_ns;
        self.pu_free_ns[pu.index()] = done;
        if buffered > 0 {
            self.in_flight.push(Reverse((done, buffered)));
            self.in_flight_pages += u64::from(buffered);
        }
        self.last_done_ns = self.last_done_ns.max(done);
        done
    }

    pub fn read(&mut self, pu: UnitId, at: u64) -> u64 {
        let sensed = self.pu_free_ns[pu.index()].max(at) + self.read_ns;
        self.pu_free_ns[pu.index()] = sensed;
        let channel = (pu.0 % self.groups) as usize;
        let done = self.channel_free_ns[channel].max(sensed) + self.transfer_ns;
        self.channel_free_ns[channel] = done;
        done
    }

    pub fn erase(&mut self, pu: UnitId, at: u64) -> u64 {
        let done = self.pu_free_ns[pu.index()].max(at) + self.erase_ns;
        self.pu_free_ns[pu.index()] = done;
        self.last_done_ns = self.last_done_ns.max(done);
        done
    }

    /// When `pages` more pages fit in a buffer of `capacity` pages that
    /// holds `pending` pages not yet sent to the device, starting at `at`.
    pub fn buffer_room(&mut self, at: u64, pages: u32, pending: u64, capacity: u64) -> u64 {
        let mut now = at;
        self.release_until(now);
        while pending + self.in_flight_pages + u64::from(pages) > capacity {
            let Some(Reverse((done, _))) = self.in_flight.peek().copied() else { break };
            now = now.max(done);
            self.release_until(now);
        }
        now
    }

    /// When every program issued so far has completed.
    pub fn drained(&self) -> u64 {
        self.last_done_ns
    }

    fn release_until(&mut self, now: u64) {
        while let Some(Reverse((done, pages))) = self.in_flight.peek().copied() {
            if done > now {
                break;
            }
            self.in_flight.pop();
            self.in_flight_pages -= u64::from(pages);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock() -> PuClock {
        let config = TimingConfig { read_ns: 40, program_ns: 200, erase_ns: 2000, channel_bytes_per_s: 4096 * 100_000_000, ..TimingConfig::default() };
        PuClock::new(&config, 4096, 2, 4)
    }

    #[test]
    fn units_on_one_pu_serialise_and_pus_overlap() {
        let mut clock = clock();
        let transfer = 10;
        assert_eq!(clock.program(UnitId(0), 4, 4, 0), 4 * transfer + 800);
        assert_eq!(clock.program(UnitId(0), 4, 4, 0), 2 * (4 * transfer + 800) - 4 * transfer);
        // PU 1 is on the other channel: it starts at once.
        assert_eq!(clock.program(UnitId(1), 4, 4, 0), 4 * transfer + 800);
        assert_eq!(clock.drained(), 1640);
    }

    #[test]
    fn a_full_buffer_waits_for_the_earliest_program() {
        let mut clock = clock();
        let first = clock.program(UnitId(0), 4, 4, 0);
        clock.program(UnitId(0), 4, 4, 0);
        assert_eq!(clock.buffer_room(0, 4, 0, 12), 0);
        assert_eq!(clock.buffer_room(0, 4, 2, 12), first);
    }
}
