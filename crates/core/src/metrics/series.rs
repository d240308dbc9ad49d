//! WAF over time: one point per window of host page writes.

use crate::metrics::Counters;
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WafPoint {
    /// Host pages written since the start of the phase, at the end of the window.
    pub host_pages_written: u64,
    /// WAF inside this window.
    pub waf_window: f64,
    /// WAF from the start of the phase to the end of this window.
    pub waf_cumulative: f64,
}

/// Samples counters and closes a window every `window_pages` host page writes.
#[derive(Clone, Debug)]
pub struct WafSeries {
    window_pages: u64,
    phase_start: Counters,
    window_start: Counters,
    points: Vec<WafPoint>,
}

impl WafSeries {
    pub fn new(window_pages: u64, start: &Counters) -> Self {
        Self {
            window_pages: window_pages.max(1),
            phase_start: start.clone(),
            window_start: start.clone(),
            points: Vec::new(),
        }
    }

    /// Whether [`Self::observe`] would close a window at counters with
    /// `host_pages_written` host page writes.
    pub fn due(&self, host_pages_written: u64) -> bool {
        host_pages_written - self.window_start.host_pages_written >= self.window_pages
    }

    /// Closes every window completed by `now`; returns the WAF of the last
    /// window closed, if any.
    pub fn observe(&mut self, now: &Counters) -> Option<f64> {
        let written = now.host_pages_written - self.window_start.host_pages_written;
        if written < self.window_pages {
            return None;
        }
        let window = now.since(&self.window_start);
        let phase = now.since(&self.phase_start);
        let waf_window = window.waf().unwrap_or(0.0);
        self.points.push(WafPoint {
            host_pages_written: phase.host_pages_written,
            waf_window,
            waf_cumulative: phase.waf().unwrap_or(0.0),
        });
        self.window_start = now.clone();
        Some(waf_window)
    }

    pub fn points(&self) -> &[WafPoint] {
        &self.points
    }

    pub fn into_points(self) -> Vec<WafPoint> {
        self.points
    }
}
