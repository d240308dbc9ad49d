//! A live device: host events submitted one at a time as they happen (the
//! emulator's requests), through the same host stages, translation layer and
//! — when timed — timing engine as a replay. Fed the events of a trace, a
//! live device ends with the counts a replay of that trace gives
//! ([`Simulation::run_phase`] of [`super::Workload::Events`], counting, or
//! timed with open arrivals).

use super::{at_event, Layer, PhaseReport, Report, SimError, Simulation};
use crate::ftl::TranslationLayer;
use crate::host::event::HostEvent;
use crate::host::{submit, Request};
use crate::metrics::WafSeries;
use crate::timing::{Arrival, Engine, LiveTicket, TimedRequest};
use crate::units::{SimNs, UnitId};
use std::collections::{HashMap, VecDeque};

/// A host event taken by [`LiveDevice::arrive`], named until it completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventTicket(pub u64);

/// A host event whose requests are not all complete.
#[derive(Clone, Copy, Debug)]
struct OpenEvent {
    requests: u32,
    /// The latest completion so far (engine frame).
    done: SimNs,
}

/// A device that takes host events as they come. Event times must not
/// decrease (a live front end takes them from a monotonic clock, raised to
/// [`Self::clock_ns`]). Timed, several events may be in flight at once:
/// each enters the timing engine when it arrives ([`Self::arrive`]), the
/// caller advances the device with the clock ([`Self::advance`]) and takes
/// the completed events ([`Self::take_completed`]).
pub struct LiveDevice {
    simulation: Simulation,
    engine: Option<Engine>,
    /// The first event's time: the engine's clock starts there, as a timed
    /// replay's does.
    first_ns: Option<u64>,
    last_arrival: SimNs,
    /// The last event's deadline (real-time jobs), in the engine's frame.
    last_deadline: Option<SimNs>,
    pending: VecDeque<(Request, bool)>,
    next_ticket: u64,
    /// Events with requests in the engine, and which event each request belongs to.
    open: HashMap<EventTicket, OpenEvent>,
    owners: HashMap<LiveTicket, EventTicket>,
    /// Events complete and not yet taken, with their completion times (the events' frame).
    completed: Vec<(EventTicket, u64)>,
    /// The WAF over the session, in the windows a replay's series has.
    series: WafSeries,
}

impl LiveDevice {
    /// `timed`: requests go through the timing engine (`[timing]` with open
    /// arrivals) and complete at their simulated times; otherwise counting
    /// mode, where a request completes when it arrives.
    pub fn new(mut simulation: Simulation, timed: bool) -> Result<Self, SimError> {
        let engine = if timed {
            simulation.config.timing.arrival = Arrival::Open;
            let config = &simulation.config;
            let mut engine = Engine::new(&simulation.geometry, &config.timing, &config.ftl);
            on_layer!(&mut simulation.layer, ftl => engine.live_start(ftl))?;
            Some(engine)
        } else {
            None
        };
        let series = simulation.phase_series(None);
        Ok(Self {
            simulation,
            series,
            engine,
            first_ns: None,
            last_arrival: SimNs(0),
            last_deadline: None,
            pending: VecDeque::new(),
            next_ticket: 0,
            open: HashMap::new(),
            owners: HashMap::new(),
            completed: Vec::new(),
        })
    }

    pub fn simulation(&self) -> &Simulation {
        &self.simulation
    }

    pub fn is_timed(&self) -> bool {
        self.engine.is_some()
    }

    /// The earliest time an event submitted now can carry: the device clock
    /// (the last event's time in counting mode).
    pub fn clock_ns(&self) -> u64 {
        let engine_ns = match (&self.engine, self.first_ns) {
            (Some(engine), Some(first)) => first.saturating_add(engine.now().0),
            _ => 0,
        };
        engine_ns.max(self.simulation.stages.counts().last_ns.unwrap_or(0))
    }

    /// Runs one host event and waits for it: returns when its last request
    /// completed, in the event's own time frame (its own time in counting
    /// mode, or when the DISCARD stage holds it back). Timed, the device
    /// runs ahead to that completion, so an event arriving afterwards at an
    /// earlier time is taken as arriving then: for callers that submit one
    /// event at a time.
    pub fn submit(&mut self, event: &HostEvent) -> Result<SimNs, SimError> {
        let ticket = self.arrive(event)?;
        loop {
            if let Some(at) = self.completed.iter().position(|&(done, _)| done == ticket) {
                return Ok(SimNs(self.completed.swap_remove(at).1));
            }
            // An open event has a request in the engine, which has an event pending for it.
            let Some(engine) = &mut self.engine else { return Ok(event.time) };
            let stepped = on_layer!(&mut self.simulation.layer, ftl => engine.live_step(ftl))
                .map_err(|error| at_event(&self.simulation.stages, error))?;
            self.collect();
            if !stepped {
                return Ok(SimNs(self.clock_ns()));
            }
        }
    }

    /// Takes one host event at its time: its requests enter the device (the
    /// timing engine, which first runs up to that time). Its completion shows
    /// in [`Self::take_completed`] — at once in counting mode or when it
    /// produced no request, otherwise once [`Self::advance`] has passed it.
    pub fn arrive(&mut self, event: &HostEvent) -> Result<EventTicket, SimError> {
        let first = *self.first_ns.get_or_insert(event.time.0);
        self.last_arrival = SimNs(event.time.0.saturating_sub(first));
        self.last_deadline = event.deadline.map(|deadline| SimNs(deadline.0.saturating_sub(first)));
        self.simulation
            .stages
            .requests(event, &mut self.pending)
            .map_err(|error| at_event(&self.simulation.stages, error))?;
        let ticket = EventTicket(self.next_ticket);
        self.next_ticket += 1;
        self.open.insert(ticket, OpenEvent { requests: 0, done: self.last_arrival });
        self.run_pending(Some(ticket))?;
        self.series.observe(self.simulation.counters());
        self.close_if_done(ticket);
        self.collect();
        Ok(ticket)
    }

    /// Runs the device up to `until_ns` (the events' frame); never past it,
    /// so later events may still arrive at any time from there on.
    pub fn advance(&mut self, until_ns: u64) -> Result<(), SimError> {
        let (Some(engine), Some(first)) = (&mut self.engine, self.first_ns) else {
            return Ok(());
        };
        let until = SimNs(until_ns.saturating_sub(first));
        on_layer!(&mut self.simulation.layer, ftl => engine.live_advance(ftl, until))
            .map_err(|error| at_event(&self.simulation.stages, error))?;
        self.collect();
        Ok(())
    }

    /// When the device next has something to do (the events' frame): the
    /// time to advance it to next.
    pub fn next_event_ns(&self) -> Option<u64> {
        let engine = self.engine.as_ref()?;
        Some(self.first_ns?.saturating_add(engine.next_event()?.0))
    }

    /// The events completed since the last call, with their completion times (the events' frame).
    pub fn take_completed(&mut self) -> Vec<(EventTicket, u64)> {
        std::mem::take(&mut self.completed)
    }

    /// Ends the measured phase here and starts a new one (a user's mark,
    /// e.g. after `mkfs`): returns what the ended phase measured; the
    /// report's `measured` (and its lifetime forecast) then covers only what
    /// follows. Host, DISCARD and wear counts stay the session's.
    pub fn mark(&mut self) -> PhaseReport {
        let ended = self.simulation.report().measured;
        self.simulation.start_measuring();
        ended
    }

    /// Free blocks over every unit of the flash (what GC keeps above its watermarks).
    pub fn free_blocks(&self) -> u64 {
        let units = self.simulation.geometry.units();
        on_layer!(&self.simulation.layer, ftl => (0..units).map(|unit| u64::from(ftl.free_blocks(UnitId(unit)))).sum())
    }

    /// What the run measured so far (the report a stop would print, timing included).
    pub fn report(&self) -> Report {
        let mut report = self.simulation.report();
        report.waf_series.extend_from_slice(self.series.points());
        if let Some(engine) = &self.engine {
            report.timed = Some(engine.live_report());
        }
        report
    }

    /// Ends the run as a replay ends: what the DISCARD stage still holds is
    /// issued, the device finishes its queued work; returns the final report.
    /// Events still in flight complete on the way.
    pub fn finish(mut self) -> Result<(Simulation, Report), SimError> {
        self.last_deadline = None;
        self.simulation.stages.finish(&mut self.pending).map_err(|error| at_event(&self.simulation.stages, error))?;
        self.run_pending(None)?;
        self.series.observe(self.simulation.counters());
        self.simulation.series.extend(self.series.points().iter().cloned());
        if let Some(engine) = self.engine.take() {
            let timed = on_layer!(&mut self.simulation.layer, ftl => engine.live_finish(ftl))
                .map_err(|error| at_event(&self.simulation.stages, error))?;
            self.simulation.timed = Some(timed);
        }
        let report = self.simulation.report();
        Ok((self.simulation, report))
    }

    /// Submits the requests the stages produced, on behalf of `owner` (none
    /// at the end of the run).
    fn run_pending(&mut self, owner: Option<EventTicket>) -> Result<(), SimError> {
        while let Some((request, priority)) = self.pending.pop_front() {
            let layer = &mut self.simulation.layer;
            match &mut self.engine {
                None => on_layer!(layer, ftl => submit(ftl, &request))
                    .map_err(|error| at_event(&self.simulation.stages, error))?,
                Some(engine) => {
                    let timed = TimedRequest {
                        request,
                        arrival: self.last_arrival,
                        priority,
                        deadline: self.last_deadline,
                        job: None,
                    };
                    let request = on_layer!(layer, ftl => engine.live_arrive(ftl, timed))
                        .map_err(|error| at_event(&self.simulation.stages, error))?;
                    if let Some(owner) = owner {
                        self.owners.insert(request, owner);
                        if let Some(open) = self.open.get_mut(&owner) {
                            open.requests += 1;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Takes the engine's completed requests and completes the events whose last request they were.
    fn collect(&mut self) {
        let Some(engine) = &mut self.engine else { return };
        let done: Vec<(LiveTicket, SimNs)> = engine.live_completed().collect();
        for (request, done) in done {
            let Some(owner) = self.owners.remove(&request) else { continue };
            if let Some(open) = self.open.get_mut(&owner) {
                open.requests -= 1;
                open.done = open.done.max(done);
            }
            self.close_if_done(owner);
        }
    }

    /// Moves `ticket` from the open events to the completed ones if none of its requests is outstanding.
    fn close_if_done(&mut self, ticket: EventTicket) {
        if self.open.get(&ticket).is_some_and(|event| event.requests == 0) {
            if let Some(event) = self.open.remove(&ticket) {
                let first = self.first_ns.unwrap_or(0);
                self.completed.push((ticket, first.saturating_add(event.done.0)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigBuilder;
    use crate::host::discard::{DiscardPolicy, SectorRange};
    use crate::host::event::HostOp;
    use crate::sim::{Counting, Timed, Workload};
    use crate::workload::IterEvents;
    use crate::Config;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn config() -> Config {
        let (mut config, _) = ConfigBuilder::preset("small").and_then(ConfigBuilder::build).expect("small preset");
        config.precondition.enabled = false;
        config.discard.policy = DiscardPolicy::DelayD;
        config
    }

    /// A random mix over a tenth of the device, overwritten enough to need GC,
    /// with discards, flushes as journal commits, and gaps of 0..200 us.
    fn events(config: &Config, count: u32, seed: u64) -> Vec<HostEvent> {
        let geometry = config.validate().expect("valid");
        let pages = u64::from(geometry.logical_pages) / 10;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut time_ns = 0;
        (0..count)
            .map(|_| {
                time_ns += rng.random_range(0..200_000u64);
                let first = rng.random_range(0..pages - 8);
                let length = rng.random_range(1..8u64);
                let (op, commit) = match rng.random_range(0..20u32) {
                    0 => (HostOp::Flush, true),
                    1 => (HostOp::Discard, false),
                    2..=5 => (HostOp::Read, false),
                    _ => (HostOp::Write, false),
                };
                let sectors =
                    if op == HostOp::Flush { SectorRange::new(0, 0) } else { SectorRange::new(first * 8, length * 8) };
                HostEvent { journal_commit: commit, ..HostEvent::new(SimNs(time_ns), op, sectors) }
            })
            .collect()
    }

    /// What a stop prints, without the parts only a batch run keeps.
    fn counts(report: &Report) -> serde_json::Value {
        let mut value = serde_json::to_value(report).expect("json");
        value["waf_series"] = serde_json::Value::Null;
        value["config"] = serde_json::Value::Null;
        value
    }

    /// Runs `events` live, each raised to the device clock as a front end
    /// does; returns the events as submitted and the final report.
    fn live(config: &Config, timed: bool, events: &[HostEvent]) -> (Vec<HostEvent>, Report, Vec<u64>) {
        let mut simulation = Simulation::new(config).expect("valid");
        simulation.precondition(&mut |_| {}).expect("ages");
        let mut device = LiveDevice::new(simulation, timed).expect("live");
        let mut submitted = Vec::new();
        let mut latencies = Vec::new();
        for event in events {
            let event = HostEvent { time: SimNs(event.time.0.max(device.clock_ns())), ..*event };
            let done = device.submit(&event).expect("fits");
            assert!(done.0 >= event.time.0, "completes after it arrives");
            latencies.push(done.0 - event.time.0);
            submitted.push(event);
        }
        (submitted, device.finish().expect("finishes").1, latencies)
    }

    #[test]
    fn a_live_run_in_counting_mode_ends_with_the_counts_of_a_replay_of_its_events() {
        let config = config();
        let (submitted, live, _) = live(&config, false, &events(&config, 40_000, 7));
        let mut simulation = Simulation::new(&config).expect("valid");
        simulation
            .run_phase(Workload::Events(&mut IterEvents(submitted.into_iter())), Counting::ToEnd, &mut |_| {})
            .expect("replays");
        let replayed = simulation.report();
        assert!(live.measured.counters.erases > 0, "the mix makes GC work");
        assert_eq!(counts(&live), counts(&replayed));
    }

    #[test]
    fn a_timed_live_run_ends_with_the_counts_and_latencies_of_an_open_loop_replay() {
        let mut config = config();
        config.timing.arrival = Arrival::Open;
        let (submitted, live, latencies) = live(&config, true, &events(&config, 40_000, 11));
        let mut simulation = Simulation::new(&config).expect("valid");
        simulation
            .run_phase(Workload::Events(&mut IterEvents(submitted.into_iter())), Timed, &mut |_| {})
            .expect("replays");
        let replayed = simulation.report();
        assert!(live.measured.counters.erases > 0, "the mix makes GC work");
        assert_eq!(counts(&live), counts(&replayed));
        let read_ns = config.timing.read_ns;
        assert!(latencies.iter().any(|&latency| latency >= read_ns), "reads wait for the flash");
    }

    /// Events arriving faster than the device serves them, as concurrent
    /// clients send them: each arrives at its own time while earlier ones
    /// are in flight, the device advanced only up to each arrival.
    #[test]
    fn overlapping_live_arrivals_end_with_the_counts_and_latencies_of_an_open_loop_replay() {
        let mut config = config();
        config.timing.arrival = Arrival::Open;
        let events: Vec<HostEvent> = events(&config, 40_000, 13)
            .into_iter()
            .map(|event| HostEvent { time: SimNs(event.time.0 / 20), ..event })
            .collect();
        let mut simulation = Simulation::new(&config).expect("valid");
        simulation.precondition(&mut |_| {}).expect("ages");
        let mut device = LiveDevice::new(simulation, true).expect("live");
        let mut arrivals = HashMap::new();
        let mut most_in_flight = 0;
        for event in &events {
            device.advance(event.time.0).expect("advances");
            let ticket = device.arrive(event).expect("fits");
            arrivals.insert(ticket, event.time.0);
            for (done, at) in device.take_completed() {
                let arrived = arrivals.remove(&done).expect("completes once");
                assert!(at >= arrived, "completes after it arrives");
            }
            most_in_flight = most_in_flight.max(arrivals.len());
        }
        assert!(most_in_flight >= 4, "requests overlapped: at most {most_in_flight} in flight");
        let live = device.finish().expect("finishes").1;
        let mut simulation = Simulation::new(&config).expect("valid");
        simulation
            .run_phase(Workload::Events(&mut IterEvents(events.into_iter())), Timed, &mut |_| {})
            .expect("replays");
        let replayed = simulation.report();
        // Overloaded at the end too: requests in flight at the stop complete as a batch run's do.
        assert_eq!(counts(&live), counts(&replayed));
    }
}
