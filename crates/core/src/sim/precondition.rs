//! Synthetic aging (`[precondition]`): a sequential fill and overwrites
//! with the workload's own mix until the windowed WAF is steady.

use super::{
    drive, drive_synthetic, AgingKind, EventFeed, Layer, Phase, PhaseReport, PreconditionReport, Progress, SimError,
    Simulation, SteadyOrSpent, SteadyRule, Unwatched,
};
use crate::config::ConfigError;
use crate::ftl::TranslationLayer;
use crate::host::discard::SectorRange;
use crate::host::event::{HostEvent, HostOp};
use crate::host::stages::HostStages;
use crate::units::{SimNs, StreamId};
use crate::workload::{AgingChoice, IterEvents, SyntheticEvents};
use nandlab_convert::{f64_of, saturating};

impl Simulation {
    /// Ages the device as `[precondition]` says (`kind`, by default random
    /// fill): nothing; random fill — a sequential fill of `fill_fraction` of
    /// the logical space and/or overwrites with the workload's own mix
    /// (`[workload]`, trims and reads included) until the windowed WAF is
    /// steady or the budget is spent; or workload aging — the same
    /// overwrites from an empty device, windows counted once the device
    /// has turned over. Reported apart from the measured phase.
    pub fn precondition(
        &mut self,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<Option<&PreconditionReport>, SimError> {
        let settings = self.config.precondition.clone();
        let kind = match (settings.kind_or(AgingChoice::RandomFill), settings.fill, settings.overwrite) {
            (AgingChoice::None, _, _) | (AgingChoice::RandomFill, false, false) => return Ok(None),
            (AgingChoice::Workload, _, _) => AgingKind::Workload,
            (AgingChoice::RandomFill, true, false) => AgingKind::Fill,
            (AgingChoice::RandomFill, true, true) => AgingKind::FillSteady,
            (AgingChoice::RandomFill, false, true) => AgingKind::Steady,
        };
        let start = self.counters().clone();
        let fills = settings.fill && kind != AgingKind::Workload;
        let fill_fraction = if fills { settings.fill_fraction } else { 0.0 };
        if fills {
            self.fill(fill_fraction, observer)?;
        }
        let (steady, final_window_waf) = match kind {
            AgingKind::Workload => self.overwrite_to_steady(self.turnover_pages(), observer)?,
            _ if settings.overwrite => self.overwrite_to_steady(0, observer)?,
            _ => (true, None),
        };
        let phase = PhaseReport::new(self.counters().since(&start));
        self.start_measuring();
        let report = PreconditionReport {
            kind,
            fill_fraction,
            phase,
            steady,
            final_window_waf,
            passes: None,
            valid_pages: None,
            debt_paid: None,
        };
        Ok(Some(self.precondition.insert(report)))
    }

    pub(super) fn fill(&mut self, fraction: f64, observer: &mut dyn FnMut(Progress)) -> Result<(), SimError> {
        const CHUNK_PAGES: u32 = 256;
        let pages = saturating::<u32>((f64::from(self.geometry.logical_pages) * fraction).round());
        let stream = self.config.workload.stream;
        let sectors_per_page = u64::from(self.geometry.sectors_per_page());
        let chunks = (0..pages).step_by(CHUNK_PAGES as usize).map(move |first| {
            let length = CHUNK_PAGES.min(pages - first);
            let sectors = SectorRange::new(u64::from(first) * sectors_per_page, u64::from(length) * sectors_per_page);
            HostEvent { stream: StreamId(stream), ..HostEvent::new(SimNs(0), HostOp::Write, sectors) }
        });
        let mut source = IterEvents(chunks);
        let mut stages = self.aging_stages()?;
        on_layer!(&mut self.layer, ftl => drive(ftl, &mut stages, EventFeed::new(&mut source), Phase::Fill, observer, Unwatched, self.stop.as_deref()))?;
        on_layer!(&mut self.layer, ftl => TranslationLayer::flush(ftl))?;
        Ok(())
    }

    /// Overwrites with the workload's own mix until `steady_windows` windows
    /// in a row change the WAF by at most `steady_tolerance`, or
    /// `max_device_writes` of host page writes are spent; returns whether
    /// the WAF settled and the last window's WAF. Windows begin once
    /// `warmup_pages` host pages are written.
    pub(super) fn overwrite_to_steady(
        &mut self,
        warmup_pages: u64,
        observer: &mut dyn FnMut(Progress),
    ) -> Result<(bool, Option<f64>), SimError> {
        let settings = &self.config.precondition;
        let logical = f64::from(self.geometry.logical_pages);
        let window_pages = saturating::<u64>(settings.window_device_fraction * logical).max(1);
        let budget_pages = saturating::<u64>(settings.max_device_writes * logical);
        let workload = &self.config.workload;
        // Reads and trims spend requests, not the write budget: draw enough
        // requests for the budget's writes (a mix without writes stops at once).
        let write_fraction = 1.0 - workload.read_fraction - workload.trim_fraction;
        let requests = if write_fraction > 0.0 {
            saturating::<u64>((f64_of(budget_pages / u64::from(workload.request_pages)) / write_fraction).ceil())
        } else {
            0
        };
        let mut rule = SteadyRule::new(settings, window_pages, warmup_pages, self.counters());
        let observe = SteadyOrSpent::new(&mut rule, self.counters().host_pages_written, budget_pages);
        let mut stages = self.aging_stages()?;
        let mut source = SyntheticEvents::new(&mut self.workload, &self.geometry, requests, None);
        on_layer!(&mut self.layer, ftl => drive_synthetic(ftl, &mut stages, &mut source, Phase::Overwrite, observer, observe, self.stop.as_deref()))?;
        Ok((rule.reached() || requests == 0, rule.last_window_waf()))
    }

    /// Host stages for synthetic aging: DISCARDs pass at once, no classes.
    pub(super) fn aging_stages(&self) -> Result<HostStages, ConfigError> {
        let discard = crate::host::discard::DiscardConfig::default();
        let host = crate::host::stages::HostConfig::default();
        HostStages::new(&self.geometry, &host, &discard, &[])
    }
}
