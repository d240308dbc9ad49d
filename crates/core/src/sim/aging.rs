//! Workload aging and a settled start: the driver's ages that are not a
//! synthetic fill. Workload aging (`precondition.kind = "workload"`) starts
//! from the state a discarding `mkfs` leaves — no page valid, which is the
//! fresh device — and repeats the workload (a trace, pass after pass at its
//! own addresses) until the windowed WAF settles by the `[precondition]`
//! rule, so only what the workload wrote is valid. Settling pays the GC debt
//! aging leaves before the measured phase, so that counting and timed runs
//! start from one device state and neither charges the aging's cleaning to
//! the workload measured.

use super::{
    drive, watch::Watch, AgingKind, EventFeed, Layer, Phase, PhaseReport, PreconditionReport, Progress, SimError,
    Simulation,
};
use crate::ftl::TranslationLayer;
use crate::host::event::{HostEvent, HostOp};
use crate::host::stages::HostStages;
use crate::metrics::{Counters, WafSeries};
use crate::units::{Lpn, UnitId};
use crate::workload::{EventSource, Passes, PreconditionConfig, SourceError};
use nandlab_convert::saturating;
use std::cell::RefCell;

impl Simulation {
    /// Workload aging of a replay: `passes` (the measured trace, or an
    /// aging trace) replayed through fresh host stages pass after pass
    /// until the `[precondition]` steady-state rule holds at the end of a
    /// pass — windows of `window_device_fraction` of the logical space,
    /// counted once the aging has written the device's physical pages
    /// (before that no block was collected, and a WAF of 1 says nothing) —
    /// or a pass writes nothing, or `max_device_writes` of host pages are
    /// spent (then mid-pass, `steady = false`). Reported apart from the
    /// measured phase, with the passes run and the pages left valid.
    pub fn age_with_workload(
        &mut self,
        passes: &mut dyn Passes,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<&PreconditionReport, SimError> {
        let settings = self.config.precondition.clone();
        let logical = f64::from(self.geometry.logical_pages);
        let (window_pages, budget_pages) = (
            saturating::<u64>(settings.window_device_fraction * logical).max(1),
            saturating::<u64>(settings.max_device_writes * logical),
        );
        let start = self.counters().clone();
        let rule = RefCell::new(SteadyRule::new(&settings, window_pages, self.turnover_pages(), &start));
        let mut looped = Looped {
            passes,
            rule: &rule,
            passes_done: 0,
            events_in_pass: 0,
            wrote_in_pass: false,
            ended_steady: false,
        };
        let mut stages = HostStages::new(&self.geometry, &self.config.host, &self.config.discard, &self.journal)?;
        let observe = |_, counters: &Counters, _: &[u32]| {
            rule.borrow_mut().observe(counters);
            counters.host_pages_written - start.host_pages_written >= budget_pages
        };
        on_layer!(&mut self.layer, ftl => drive(ftl, &mut stages, EventFeed::new(&mut looped), Phase::AgingTrace, observer, observe, self.stop.as_deref()))?;
        on_layer!(&mut self.layer, ftl => TranslationLayer::flush(ftl))?;
        let passes_done = looped.passes_done;
        let report = PreconditionReport {
            kind: AgingKind::Workload,
            fill_fraction: 0.0,
            phase: PhaseReport::new(self.counters().since(&start)),
            // A budget stop mid-pass is never steady, whatever the streak says then.
            steady: looped.ended_steady,
            final_window_waf: rule.borrow().last_window_waf(),
            passes: Some(passes_done),
            valid_pages: Some(self.valid_pages()),
            debt_paid: None,
        };
        self.start_measuring();
        Ok(self.precondition.insert(report))
    }

    /// Pays the GC debt aging left: every unit below the timing model's low
    /// cleaning watermark (`timing.gc_low_blocks`) collects victims until it
    /// reaches it (or the layer declines, or a unit's worth of steps) — what background GC does in
    /// the idle time before the first request — in counting and timed mode
    /// alike, so both start the measured phase from this one device state.
    /// Its cost goes to the aging report's `debt_paid`, not to the measured
    /// phase. Nothing to do without aging.
    pub fn settle(&mut self) -> Result<(), SimError> {
        if self.precondition.is_none() {
            return Ok(());
        }
        let low = self.config.timing.gc_low_blocks(&self.config.ftl);
        let start = self.counters().clone();
        let (units, blocks) = (self.geometry.units(), self.geometry.blocks_per_plane);
        on_layer!(&mut self.layer, ftl => {
            for unit in (0..units).map(UnitId) {
                // A step may free nothing at once (its copies fill the GC
                // block first); a unit's blocks bound the steps.
                for _ in 0..blocks {
                    if ftl.free_blocks(unit) >= low || !ftl.collect_one(unit)? {
                        break;
                    }
                }
            }
        });
        let debt = PhaseReport::new(self.counters().since(&start));
        self.start_measuring();
        if let Some(report) = self.precondition.as_mut() {
            report.debt_paid = Some(debt);
        }
        Ok(())
    }

    /// Logical pages that hold data.
    pub fn valid_pages(&self) -> u64 {
        let pages = self.geometry.logical_pages;
        on_layer!(&self.layer, ftl => (0..pages).filter(|&lpn| ftl.is_mapped(Lpn(lpn))).map(|_| 1_u64).sum())
    }

    /// Host pages that write every physical page once: after them, GC has
    /// had to collect, and the WAF of a window describes the workload.
    pub(super) fn turnover_pages(&self) -> u64 {
        u64::from(self.geometry.physical_pages())
    }
}

/// The passes of a workload as one event source for the counting loop:
/// at the end of a pass it begins the next one unless the steady-state rule
/// holds at that moment, or the pass wrote nothing (repeating it would change nothing).
struct Looped<'p, 's> {
    passes: &'p mut dyn Passes,
    /// Asked at the end of each pass (not latched: a streak that held
    /// mid-pass and broke before the pass ended does not stop the aging).
    rule: &'s RefCell<SteadyRule>,
    /// Whole passes replayed.
    passes_done: u64,
    events_in_pass: u64,
    wrote_in_pass: bool,
    /// The aging ended at the end of a pass with the rule holding.
    ended_steady: bool,
}

impl EventSource for Looped<'_, '_> {
    fn next_event(&mut self) -> Result<Option<HostEvent>, SourceError> {
        loop {
            if let Some(event) = self.passes.next_event()? {
                self.events_in_pass += 1;
                self.wrote_in_pass |= event.op == HostOp::Write;
                return Ok(Some(event));
            }
            self.passes_done += 1;
            self.ended_steady = self.rule.borrow().reached();
            if self.ended_steady || !self.wrote_in_pass || self.events_in_pass == 0 {
                return Ok(None);
            }
            self.passes.restart()?;
            self.events_in_pass = 0;
            self.wrote_in_pass = false;
        }
    }
}

/// The `[precondition]` steady-state rule: `steady_windows` windows in a
/// row whose WAF differs from the window before by at most
/// `steady_tolerance` (relative), windows beginning once `warmup_pages`
/// host pages are written.
#[derive(Debug, Clone)]
pub(super) struct SteadyRule {
    series: Option<WafSeries>,
    window_pages: u64,
    warmup_end: u64,
    tolerance: f64,
    windows: u32,
    previous: Option<f64>,
    streak: u32,
}

impl SteadyRule {
    pub(super) fn new(settings: &PreconditionConfig, window_pages: u64, warmup_pages: u64, start: &Counters) -> Self {
        Self {
            series: (warmup_pages == 0).then(|| WafSeries::new(window_pages, start)),
            window_pages,
            warmup_end: start.host_pages_written.saturating_add(warmup_pages),
            tolerance: settings.steady_tolerance,
            windows: settings.steady_windows,
            previous: None,
            streak: 0,
        }
    }

    /// Takes the counters after a request; true once the state is steady.
    pub(super) fn observe(&mut self, counters: &Counters) -> bool {
        let series = match &mut self.series {
            Some(series) => series,
            None if counters.host_pages_written < self.warmup_end => return false,
            None => self.series.insert(WafSeries::new(self.window_pages, counters)),
        };
        let Some(waf) = series.observe(counters) else { return self.reached() };
        if let Some(previous) = self.previous {
            let change = (waf - previous).abs() / previous.max(f64::MIN_POSITIVE);
            self.streak = if change <= self.tolerance { self.streak + 1 } else { 0 };
        }
        self.previous = Some(waf);
        self.reached()
    }

    /// Whether [`Self::observe`] may change anything at counters with
    /// `host_pages_written` host page writes: the warm-up ends, or a window closes.
    pub(super) fn due(&self, host_pages_written: u64) -> bool {
        match &self.series {
            Some(series) => series.due(host_pages_written),
            None => host_pages_written >= self.warmup_end,
        }
    }

    pub(super) fn reached(&self) -> bool {
        self.streak >= self.windows
    }

    pub(super) fn last_window_waf(&self) -> Option<f64> {
        self.series.as_ref()?.points().last().map(|point| point.waf_window)
    }
}

/// Overwrites to a steady state stop once the rule holds or the budget of
/// host page writes (`budget_pages` from `start_written`) is spent.
pub(super) struct SteadyOrSpent<'r> {
    rule: &'r mut SteadyRule,
    start_written: u64,
    budget_pages: u64,
}

impl<'r> SteadyOrSpent<'r> {
    pub(super) fn new(rule: &'r mut SteadyRule, start_written: u64, budget_pages: u64) -> Self {
        Self { rule, start_written, budget_pages }
    }

    fn spent(&self, host_pages_written: u64) -> bool {
        host_pages_written - self.start_written >= self.budget_pages
    }
}

impl Watch for SteadyOrSpent<'_> {
    fn due(&self, host_pages_written: u64) -> bool {
        self.rule.due(host_pages_written) || self.spent(host_pages_written)
    }

    fn observe(&mut self, _: u16, counters: &Counters, _: &[u32]) -> bool {
        self.rule.observe(counters) || self.spent(counters.host_pages_written)
    }
}

#[cfg(test)]
mod tests {
    use super::SteadyRule;
    use crate::metrics::Counters;
    use crate::workload::PreconditionConfig;

    /// Writes one window of `pages` host pages at the given WAF.
    fn window(rule: &mut SteadyRule, counters: &mut Counters, pages: u64, waf: u64) -> bool {
        counters.host_pages_written += pages;
        counters.flash_pages_programmed += pages * waf;
        rule.observe(counters)
    }

    /// The rule is a state, not a latch: once a later window breaks the
    /// streak it no longer holds, so a pass ending then does not end the
    /// aging (it did, before: the first time it held stopped the loop).
    #[test]
    fn the_steady_rule_stops_holding_when_a_later_window_breaks_the_streak() {
        let settings =
            PreconditionConfig { steady_windows: 2, steady_tolerance: 0.01, ..PreconditionConfig::default() };
        let mut counters = Counters::default();
        let mut rule = SteadyRule::new(&settings, 10, 0, &counters);
        let answers: Vec<bool> =
            [2, 2, 2, 3, 3, 3].iter().map(|&waf| window(&mut rule, &mut counters, 10, waf)).collect();
        assert_eq!(answers, [false, false, true, false, false, true]);
        assert!(rule.reached());
    }
}
