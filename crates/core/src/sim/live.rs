//! A live device: host events submitted one at a time as they happen (the
//! emulator's requests), through the same host stages, translation layer and
//! — when timed — timing engine as a replay. Fed the events of a trace, a
//! live device ends with the counts a replay of that trace gives (counting
//! mode: [`Simulation::replay`]; timed: [`Simulation::replay_timed`] with
//! open arrivals).

use super::{at_event, Layer, PhaseReport, Report, SimError, Simulation};
use crate::ftl::TranslationLayer;
use crate::host::event::HostEvent;
use crate::host::{submit, Request};
use crate::metrics::WafSeries;
use crate::timing::{Arrival, Engine, TimedRequest};
use crate::units::{SimNs, UnitId};
use std::collections::VecDeque;

/// A device that takes host events as they come. Event times must not
/// decrease (a live front end takes them from a monotonic clock, raised to
/// [`Self::clock_ns`]).
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
    /// The WAF over the session, in the windows a replay's series has.
    series: WafSeries,
}

impl LiveDevice {
    /// `timed`: requests go through the timing engine (`[timing]` with open
    /// arrivals) and [`Self::submit`] says when each completes; otherwise
    /// counting mode, where a request completes when it arrives.
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

    /// Runs one host event; returns when its last request completed, in the
    /// event's own time frame (its own time in counting mode, or when the
    /// DISCARD stage holds it back).
    pub fn submit(&mut self, event: &HostEvent) -> Result<SimNs, SimError> {
        let first = *self.first_ns.get_or_insert(event.time.0);
        self.last_arrival = SimNs(event.time.0.saturating_sub(first));
        self.last_deadline = event.deadline.map(|deadline| SimNs(deadline.0.saturating_sub(first)));
        self.simulation
            .stages
            .requests(event, &mut self.pending)
            .map_err(|error| at_event(&self.simulation.stages, error))?;
        let done = self.run_pending()?;
        self.series.observe(self.simulation.counters());
        Ok(SimNs(first.saturating_add(done.0.max(self.last_arrival.0))))
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
    pub fn finish(mut self) -> Result<(Simulation, Report), SimError> {
        self.last_deadline = None;
        self.simulation.stages.finish(&mut self.pending).map_err(|error| at_event(&self.simulation.stages, error))?;
        self.run_pending()?;
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

    /// Submits the requests the stages produced; the latest completion
    /// (engine frame).
    fn run_pending(&mut self) -> Result<SimNs, SimError> {
        let mut done = self.last_arrival;
        while let Some((request, priority)) = self.pending.pop_front() {
            let layer = &mut self.simulation.layer;
            let outcome = match &mut self.engine {
                None => on_layer!(layer, ftl => submit(ftl, &request)).map(|()| self.last_arrival),
                Some(engine) => {
                    let timed = TimedRequest {
                        request,
                        arrival: self.last_arrival,
                        priority,
                        deadline: self.last_deadline,
                        job: None,
                    };
                    on_layer!(layer, ftl => engine.live_submit(ftl, timed))
                }
            };
            done = done.max(outcome.map_err(|error| at_event(&self.simulation.stages, error))?);
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigBuilder;
    use crate::host::discard::{DiscardPolicy, SectorRange};
    use crate::host::event::HostOp;
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
        simulation.replay(&mut IterEvents(submitted.into_iter()), &mut |_| {}).expect("replays");
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
        simulation.replay_timed(&mut IterEvents(submitted.into_iter()), &mut |_| {}).expect("replays");
        let replayed = simulation.report();
        assert!(live.measured.counters.erases > 0, "the mix makes GC work");
        assert_eq!(counts(&live), counts(&replayed));
        let read_ns = config.timing.read_ns;
        assert!(latencies.iter().any(|&latency| latency >= read_ns), "reads wait for the flash");
    }
}
