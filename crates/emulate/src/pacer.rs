//! Pacing a live device with the wall clock (`--pace real`): simulated time is wall time since the
//! start, requests enter the device when they arrive, and one pacer thread runs the device's
//! events as their times come — never ahead of the clock, so a request arriving at any moment
//! finds the device as it is then and overlaps with those in flight — releasing each waiting
//! request as it completes. Only the pacer waits for the clock; request threads sleep until
//! released ([`Reply`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The session's clock: `base_ns` plus the wall time since `origin`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    pub(crate) origin: Instant,
    pub(crate) base_ns: u64,
}

impl Clock {
    pub(crate) fn now_ns(&self) -> u64 {
        self.base_ns.saturating_add(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// The wall-clock instant of session time `time_ns`.
    fn instant(&self, time_ns: u64) -> Instant {
        self.origin + Duration::from_nanos(time_ns.saturating_sub(self.base_ns))
    }
}

/// What the pacer drives.
pub(crate) trait Paced: Send {
    /// Runs the device up to `now_ns` (never past it) and releases the requests completed by then;
    /// returns when the device next has something to do.
    fn advance_to(&mut self, now_ns: u64) -> Option<u64>;
}

/// The device a pacer drives (`None` once stopped) and how the pacer is woken.
pub(crate) struct Pacer<S> {
    pub(crate) clock: Clock,
    state: Mutex<Option<S>>,
    /// Signalled when a request arrived (the device may have something to do sooner than the
    /// pacer planned) or the device stopped.
    wake: Condvar,
    arrivals: AtomicU64,
}

/// The pacer sleeps until this long before the device's next event, then spins, so an event is
/// run late by scheduling jitter only: a thread woken from sleep can wait for a CPU behind other
/// work, a spinning one already holds it (docs/emulate.md, "Pacing and its limits").
const SPIN: Duration = Duration::from_micros(200);

impl<S: Paced> Pacer<S> {
    pub(crate) fn new(clock: Clock, state: S) -> Pacer<S> {
        Pacer { clock, state: Mutex::new(Some(state)), wake: Condvar::new(), arrivals: AtomicU64::new(0) }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Option<S>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A request entered the device: the pacer looks again at when its next event is.
    pub(crate) fn arrived(&self) {
        self.arrivals.fetch_add(1, Ordering::Release);
        self.wake.notify_one();
    }

    /// Takes the device out (the pacer's loop then ends).
    pub(crate) fn stop(&self) -> Option<S> {
        let state = self.lock().take();
        self.wake.notify_all();
        state
    }

    /// The pacer thread's loop: runs the device's events as their times come, until stopped.
    pub(crate) fn run(&self) {
        let mut guard = self.lock();
        loop {
            let Some(state) = guard.as_mut() else { return };
            let now_ns = self.clock.now_ns();
            let next = state.advance_to(now_ns);
            let seen = self.arrivals.load(Ordering::Acquire);
            guard = match next {
                None => self.wake.wait(guard).unwrap_or_else(PoisonError::into_inner),
                Some(next_ns) => {
                    let deadline = self.clock.instant(next_ns);
                    let until_spin = deadline.saturating_duration_since(Instant::now()).saturating_sub(SPIN);
                    if until_spin.is_zero() {
                        drop(guard);
                        self.spin_until(deadline, seen);
                        self.lock()
                    } else {
                        self.wake.wait_timeout(guard, until_spin).unwrap_or_else(PoisonError::into_inner).0
                    }
                }
            };
        }
    }

    /// Spins until `deadline` or until a request arrives after the `seen`th.
    fn spin_until(&self, deadline: Instant, seen: u64) {
        while Instant::now() < deadline && self.arrivals.load(Ordering::Acquire) == seen {
            std::thread::yield_now();
        }
    }
}

/// Where a waiting request's outcome is left: its completion time, or why the device failed it.
#[derive(Default)]
pub(crate) struct Reply {
    outcome: Mutex<Option<Result<u64, String>>>,
    released: Condvar,
}

impl Reply {
    pub(crate) fn release(&self, outcome: Result<u64, String>) {
        *self.outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
        self.released.notify_one();
    }

    /// Waits until released.
    pub(crate) fn wait(&self) -> Result<u64, String> {
        let mut outcome = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(outcome) = outcome.take() {
                return outcome;
            }
            outcome = self.released.wait(outcome).unwrap_or_else(PoisonError::into_inner);
        }
    }
}
