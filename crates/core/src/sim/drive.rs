//! The counting-mode loop every phase shares, on one thread, or handed to
//! the partitioned loop (parallel.rs) for a layer split across threads.

use super::feed::{at_event, EventCount, EventFeed, Feed, PageFeed, LOOKAHEAD};
use super::parallel::{self, Partitioned};
use super::watch::Watch;
use super::{Ahead, Phase, Progress, Queued, SimError};
use crate::ftl::TranslationLayer;
use crate::host::stages::HostStages;
use crate::host::submit;
use crate::workload::SyntheticEvents;
use std::sync::atomic::AtomicBool;

/// The counting-mode loop every phase shares: requests from `feed` (events
/// through `stages`) onto `ftl`, a few requests ahead for the caches,
/// `after_each` called with the request's job (its event's; the DISCARD
/// stage's final issue: the last event's) and the counters after every
/// request (true stops the phase).
pub(super) fn drive<T: TranslationLayer + 'static, F: Feed<T>>(
    ftl: &mut T,
    stages: &mut HostStages,
    mut feed: F,
    phase: Phase,
    observer: &mut dyn FnMut(Progress),
    mut after_each: impl Watch,
    stop: Option<&AtomicBool>,
) -> Result<(), SimError> {
    if (ftl as &dyn std::any::Any).is::<Partitioned>() {
        return parallel::drive(ftl, stages, feed, phase, observer, &mut after_each, stop);
    }
    let mut events = EventCount::new(phase, feed.len_hint(), stop);
    let mut ahead = Ahead::with_capacity(4 * LOOKAHEAD);
    // A layer that follows time must see each event's time just before the
    // event's own requests, so it gets no requests ahead.
    let lookahead = if ftl.follows_time() { 0 } else { LOOKAHEAD };
    let mut dry = false;
    loop {
        while !dry && ahead.len() <= lookahead {
            let before = ahead.len();
            if feed.refill(ftl, stages, &mut ahead)? {
                events.count(observer)?;
            } else {
                dry = true;
            }
            for index in before..ahead.len() {
                if let Some(request) = ahead.get(index) {
                    ftl.prefetch_mapping(request.start);
                }
            }
        }
        let Some(Queued { request, job }) = ahead.pop() else {
            break;
        };
        if let Some(halfway) = ahead.get(LOOKAHEAD / 2) {
            ftl.prefetch_old_page(halfway.start);
        }
        submit(ftl, &request).map_err(|error| at_event(stages, error))?;
        if after_each.observe(job, ftl.counters(), ftl.erase_counts()) {
            break;
        }
    }
    events.finish(observer);
    Ok(())
}

/// A counting phase of the synthetic workload: its page requests straight
/// into the loop when the stages would pass them unchanged and the layer
/// ignores time (the same requests, counts and errors, without the detour
/// through host events), else its events through the stages.
pub(super) fn drive_synthetic<T: TranslationLayer + 'static>(
    ftl: &mut T,
    stages: &mut HostStages,
    source: &mut SyntheticEvents<'_>,
    phase: Phase,
    observer: &mut dyn FnMut(Progress),
    after_each: impl Watch,
    stop: Option<&AtomicBool>,
) -> Result<(), SimError> {
    if stages.passes_pages() && source.untimed() && !ftl.follows_time() {
        drive(ftl, stages, PageFeed(source), phase, observer, after_each, stop)
    } else {
        drive(ftl, stages, EventFeed::new(source), phase, observer, after_each, stop)
    }
}
