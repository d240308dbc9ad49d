//! Pacing a live device with the wall clock (`--pace real`): simulated time is wall time since the
//! start, requests enter the device when they arrive, and one pacer thread runs the device's
//! events as their times come — never ahead of the clock, so a request arriving at any moment
//! finds the device as it is then and overlaps with those in flight — releasing each waiting
//! request as it completes. Only the pacer waits for the clock; a request's thread sleeps until
//! released ([`Reply`]), a queued request's completion is called ([`Waiter`]). Answers are given
//! after the device's lock is let go, so a reply's write never holds up an arrival.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nandlab_nbd::{BlockError, Completion};

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

    /// The session time of the wall-clock instant `instant` (the start for an instant before it).
    pub(crate) fn ns_at(&self, instant: Instant) -> u64 {
        let since = instant.saturating_duration_since(self.origin);
        self.base_ns.saturating_add(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
    }

    /// The wall-clock instant of session time `time_ns`.
    fn instant(&self, time_ns: u64) -> Instant {
        self.origin + Duration::from_nanos(time_ns.saturating_sub(self.base_ns))
    }
}

/// What the pacer drives.
pub(crate) trait Paced: Send {
    /// Runs the device up to `now_ns` (never past it) and adds the requests completed by then to
    /// `answers`; returns when the device next has something to do.
    fn advance_to(&mut self, now_ns: u64, answers: &mut Vec<Answer>) -> Option<u64>;
    /// Requests in the device.
    fn in_flight(&self) -> usize;
}

/// Who waits for a request in the device.
pub(crate) enum Waiter {
    /// A thread blocked in [`Reply::wait`] (a FUSE request thread).
    Thread(Arc<Reply>),
    /// A queued request (NBD): its completion and, for a read, its data.
    Queued { done: Completion, data: Vec<u8> },
}

/// A waiter and its request's outcome: the simulated completion time, or why the device failed.
pub(crate) type Answer = (Waiter, Result<u64, String>);

impl Waiter {
    /// Gives the waiter its outcome.
    pub(crate) fn answer(self, outcome: Result<u64, String>) {
        match self {
            Waiter::Thread(reply) => reply.release(outcome),
            Waiter::Queued { done, data } => done(outcome.map(|_| data).map_err(|failure| device_failed(&failure))),
        }
    }

    /// A queued read's buffer, which the contents are read into (empty for any other waiter).
    pub(crate) fn data_mut(&mut self) -> &mut [u8] {
        match self {
            Waiter::Queued { data, .. } => data,
            Waiter::Thread(_) => &mut [],
        }
    }

    /// Answers a request the device refused before it entered.
    pub(crate) fn refuse(self, error: BlockError) -> BlockError {
        match self {
            Waiter::Thread(_) => error,
            Waiter::Queued { done, .. } => {
                done(Err(error));
                BlockError::Io(std::io::Error::other("answered through the completion"))
            }
        }
    }
}

/// Answers every waiter of `answers`, emptying it.
pub(crate) fn answer_all(answers: &mut Vec<Answer>) {
    for (waiter, outcome) in answers.drain(..) {
        waiter.answer(outcome);
    }
}

/// A request the simulated device could not run (EIO to the client).
pub(crate) fn device_failed(failure: &dyn std::fmt::Display) -> BlockError {
    BlockError::Io(std::io::Error::other(failure.to_string()))
}

/// The device a pacer drives (`None` once stopped) and how the pacer is woken.
pub(crate) struct Pacer<S> {
    pub(crate) clock: Clock,
    state: Mutex<Option<S>>,
    /// Signalled when a request arrived (the device may have something to do sooner than the
    /// pacer planned) or the device stopped.
    wake: Condvar,
    arrivals: AtomicU64,
    /// The session time at which the pacer wakes by itself ([`NEVER`]: not until woken; 0: it is
    /// awake or spinning and looks at new arrivals on its own), so an arrival wakes it only when
    /// the device then has something to do sooner.
    wakes_at_ns: AtomicU64,
}

/// [`Pacer::wakes_at_ns`] of a pacer asleep until woken.
const NEVER: u64 = u64::MAX;

/// The pacer sleeps until this long before the device's next event, then spins, so an event is
/// run late by scheduling jitter only: a thread woken from sleep can wait for a CPU behind other
/// work, a spinning one already holds it (docs/emulate.md, "Pacing and its limits"), but only
/// while the device holds few requests ([`SPIN_IN_FLIGHT_MAX`]).
const SPIN_NS: u64 = 200_000;
/// The pacer spins only while the device holds at most this many requests. Then the clients and
/// the server's other threads wait for the reply and leave the CPU free; with more in flight
/// they need it (a spinning pacer held one of this machine's two CPUs at depth and fio at QD 16
/// waited longer), and the pacer sleeps until the event itself, its timer slack cut to
/// [`TIMER_SLACK_NS`] (docs/emulate.md, "Queue depth").
const SPIN_IN_FLIGHT_MAX: usize = 1;

/// The pacer thread's timer slack: Linux wakes a sleeping thread up to its slack late (50 µs by
/// default), which would add to every reply the pacer sleeps for.
const TIMER_SLACK_NS: u64 = 1_000;

impl<S: Paced> Pacer<S> {
    pub(crate) fn new(clock: Clock, state: S) -> Pacer<S> {
        Pacer {
            clock,
            state: Mutex::new(Some(state)),
            wake: Condvar::new(),
            arrivals: AtomicU64::new(0),
            wakes_at_ns: AtomicU64::new(0),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Option<S>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A request entered the device, which next has something to do at `next_ns`: the pacer
    /// looks again at when its next event is, woken if it would sleep past it. Called after the
    /// device's lock is let go: a pacer that ran since then has seen the request.
    pub(crate) fn arrived(&self, next_ns: Option<u64>) {
        self.arrivals.fetch_add(1, Ordering::Release);
        if next_ns.is_some_and(|next_ns| next_ns < self.wakes_at_ns.load(Ordering::Acquire)) {
            self.wake.notify_one();
        }
    }

    /// Takes the device out (the pacer's loop then ends).
    pub(crate) fn stop(&self) -> Option<S> {
        let state = self.lock().take();
        self.wake.notify_all();
        state
    }

    /// The pacer thread's loop: runs the device's events as their times come, until stopped.
    pub(crate) fn run(&self) {
        // Without it replies come up to 50 µs late; the pacer works either way.
        let _ = nix::sys::prctl::set_timerslack(TIMER_SLACK_NS);
        let mut answers = Vec::new();
        let mut guard = self.lock();
        loop {
            let Some(state) = guard.as_mut() else { return };
            let now_ns = self.clock.now_ns();
            let next = state.advance_to(now_ns, &mut answers);
            if !answers.is_empty() {
                drop(guard);
                answer_all(&mut answers);
                guard = self.lock();
                continue;
            }
            let seen = self.arrivals.load(Ordering::Acquire);
            guard = match next {
                None => {
                    self.wakes_at_ns.store(NEVER, Ordering::Release);
                    self.wake.wait(guard).unwrap_or_else(PoisonError::into_inner)
                }
                Some(next_ns) => {
                    let deadline = self.clock.instant(next_ns);
                    let spin_ns = if state.in_flight() <= SPIN_IN_FLIGHT_MAX { SPIN_NS } else { 0 };
                    let until_spin = deadline
                        .saturating_duration_since(Instant::now())
                        .saturating_sub(Duration::from_nanos(spin_ns));
                    if until_spin.is_zero() {
                        self.wakes_at_ns.store(0, Ordering::Release);
                        drop(guard);
                        self.spin_until(deadline, seen);
                        self.lock()
                    } else {
                        self.wakes_at_ns.store(next_ns.saturating_sub(spin_ns), Ordering::Release);
                        self.wake.wait_timeout(guard, until_spin).unwrap_or_else(PoisonError::into_inner).0
                    }
                }
            };
            self.wakes_at_ns.store(0, Ordering::Release);
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
