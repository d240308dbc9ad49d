//! An open-loop timed replay whose requests arrive far faster than the
//! device serves them holds what its host queues hold, not the backlog
//! (issue 17: a trace of any length replays in memory set by the device).
//! An allocator that tracks this thread's live bytes wraps the system one;
//! a replay 25 times longer, with a backlog 25 times deeper, must not need
//! more memory at its peak beyond what its longer WAF series takes. Until
//! the backlog waited in the source, every arrived request waited in the
//! engine's host queue: about 100 k requests, megabytes, here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use nandlab_core::host::discard::SectorRange;
use nandlab_core::host::event::{HostEvent, HostOp};
use nandlab_core::sim::{Timed, Workload};
use nandlab_core::units::SimNs;
use nandlab_core::workload::{EventSource, SourceError};
use nandlab_core::Simulation;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct PeakAllocator;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn grew(bytes: usize) {
    let live = LIVE.with(|live| {
        live.set(live.get() + bytes);
        live.get()
    });
    PEAK.with(|peak| peak.set(peak.get().max(live)));
}

fn shrank(bytes: usize) {
    // Memory another thread allocated may be freed here: never below zero.
    LIVE.with(|live| live.set(live.get().saturating_sub(bytes)));
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counters are plain thread-local cells that never allocate themselves. The
// workspace denies unsafe code; a global allocator cannot be written without.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for PeakAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        shrank(layout.size());
        // SAFETY: `pointer` came from `System.alloc` with this layout.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        shrank(layout.size());
        grew(new_size);
        // SAFETY: the caller's contract for `realloc` is passed on as is.
        unsafe { System.realloc(pointer, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: PeakAllocator = PeakAllocator;

/// `count` scattered 4 KiB writes, one every microsecond: about 50 times
/// what the `small` device's four dies program.
struct FastWrites {
    next: u64,
    count: u64,
    pages: u64,
}

impl EventSource for FastWrites {
    fn next_event(&mut self) -> Result<Option<HostEvent>, SourceError> {
        if self.next == self.count {
            return Ok(None);
        }
        let page = self.next * 7_919 % self.pages;
        let event = HostEvent::new(SimNs(self.next * 1_000), HostOp::Write, SectorRange::new(page * 8, 8));
        self.next += 1;
        Ok(Some(event))
    }
}

/// Bytes live at the peak of an open-loop replay of `count` fast writes,
/// beyond those live before it; and the requests it completed.
fn replay_peak_bytes(count: u64) -> (usize, u64) {
    let (config, geometry) = common::config(
        "small",
        &["timing.arrival=\"open\"", "precondition.enabled=false", "timing.series_interval_ns=3600000000000"],
    );
    let mut simulation = Simulation::new(&config).expect("simulation");
    let mut writes = FastWrites { next: 0, count, pages: u64::from(geometry.logical_pages) };
    let before = LIVE.with(Cell::get);
    PEAK.with(|peak| peak.set(before));
    let completed = simulation.run_phase(Workload::Events(&mut writes), Timed, &mut |_| {}).expect("replays").requests;
    (PEAK.with(Cell::get) - before, completed)
}

#[test]
fn an_open_loop_backlog_waits_in_the_source_not_in_memory() {
    let (short_peak, short) = replay_peak_bytes(4_000);
    let (long_peak, long) = replay_peak_bytes(100_000);
    assert_eq!((short, long), (4_000, 100_000), "every request completes");
    // The longer replay's WAF series has about 150 more points (24 bytes
    // each, in a vector that doubles); the backlog would be 96 k requests.
    let allowance = 16 << 10;
    assert!(
        long_peak <= short_peak + allowance,
        "peak {long_peak} bytes for 100 k requests, {short_peak} bytes for 4 k: the backlog is held in memory"
    );
}
