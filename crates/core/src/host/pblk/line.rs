//! pblk lines: one chunk of every parallel unit, written round-robin in
//! `ws_opt`-page units (pblk's `pblk_line`, whose `min_write_pgs` is the
//! device's optimal write size), their layout (start metadata, data, end
//! metadata holding the LBA list) and the GC victim policies.

use crate::host::classify::ClassId;
use crate::units::UnitId;
use nandlab_convert::f64_of;
use serde::{Deserialize, Serialize};

/// Marks an empty P2L slot (padding, metadata, or never written).
pub(crate) const NONE: u32 = u32::MAX;

/// Where the pages of a line go, identical for every line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LineLayout {
    pub pus: u32,
    pub pages_per_chunk: u32,
    /// The write unit: pblk writes and pads in `ws_opt` pages (`min_write_pgs`).
    pub ws_opt: u32,
    /// Pages of one line: `pus * pages_per_chunk`.
    pub line_pages: u32,
    /// smeta: one write unit at the start of the line (pblk `smeta`).
    pub smeta_pages: u32,
    /// emeta: the line's LBA list (8 bytes per page) at its end, in whole units.
    pub emeta_pages: u32,
}

impl LineLayout {
    pub fn new(pus: u32, pages_per_chunk: u32, ws_opt: u32, page_bytes: u32) -> Self {
        let line_pages = pus * pages_per_chunk;
        let lba_list_pages = (u64::from(line_pages) * 8).div_ceil(u64::from(page_bytes));
        let emeta_pages = u32::try_from(lba_list_pages).unwrap_or(line_pages).div_ceil(ws_opt) * ws_opt;
        Self { pus, pages_per_chunk, ws_opt, line_pages, smeta_pages: ws_opt, emeta_pages }
    }

    /// First line-relative index past the data region.
    pub fn data_end(&self) -> u32 {
        self.line_pages - self.emeta_pages
    }

    pub fn data_pages(&self) -> u32 {
        self.data_end() - self.smeta_pages
    }

    /// PU and chunk page of line-relative page `index`: consecutive units go
    /// to consecutive PUs, so a line stripes across the whole device.
    pub fn locate(&self, index: u32) -> (UnitId, u32) {
        let unit = index / self.ws_opt;
        let pu = unit % self.pus;
        let page = (unit / self.pus) * self.ws_opt + index % self.ws_opt;
        (UnitId(pu), page)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LineState {
    Free,
    Open,
    Closed,
    /// GC is moving its valid pages out (pblk's GC list entry under way).
    Collecting,
}

/// One line: its placement class, write cursor, valid count and P2L (the
/// LBA list pblk keeps in emeta and GC reads back).
#[derive(Clone, Debug)]
pub struct Line {
    pub state: LineState,
    pub class: ClassId,
    /// Next line-relative page to write.
    pub next: u32,
    pub valid: u32,
    pub p2l: Vec<u32>,
    /// One bit per classifier class whose pages the line has held since its
    /// last erase: with separation at most one bit is ever set.
    pub labels: u8,
    /// When the line was closed, in lines closed so far (its age for cost-benefit).
    pub closed_seq: u64,
    /// Pages written into the line's class when it was closed (its age in
    /// the class's own writes, for log-aware victims).
    pub closed_class_pages: u64,
}

impl Line {
    pub fn new(layout: &LineLayout) -> Self {
        Self {
            state: LineState::Free,
            class: ClassId(0),
            next: 0,
            valid: 0,
            p2l: vec![NONE; layout.line_pages as usize],
            labels: 0,
            closed_seq: 0,
            closed_class_pages: 0,
        }
    }

    pub fn is_mixed(&self) -> bool {
        self.labels.count_ones() > 1
    }
}

/// Which closed line GC reclaims (`pblk.victim`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LineVictim {
    /// Fewest valid pages (pblk's GC lists pick from the emptiest group).
    #[default]
    Greedy,
    /// Largest (1 - u) * age / 2u, Rosenblum and Ousterhout's LFS cleaner.
    CostBenefit,
}

/// The class whose lines hold a circular log (the ext4 journal, with
/// separation), as log-aware victim choice sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogClass {
    pub class: ClassId,
    /// Pages written into the class so far.
    pub written: u64,
    /// Its valid pages on flash: the log's live length.
    pub live: u64,
}

impl LogClass {
    /// A log overwrites its pages within one live length of writes, so a
    /// log line closed less than that ago still has pages about to die:
    /// copying them moves pages the log overwrites anyway. Once that much
    /// has been written since, what is still valid there is long-lived
    /// (the journal superblock, or writes the classifier took for journal).
    fn dying_soon(&self, line: &Line) -> bool {
        line.class == self.class && !line.is_mixed() && self.written - line.closed_class_pages < self.live
    }
}

impl LineVictim {
    /// The victim among `lines` (index, line) or `None` when no closed line
    /// has an invalid page to gain.
    ///
    /// `log`: with it, lines of the log class whose pages are still dying
    /// ([`LogClass`]) are victims only once wholly invalid, or when no other
    /// line has anything to gain.
    pub fn select(self, lines: &[Line], layout: &LineLayout, closed_so_far: u64, log: Option<LogClass>) -> Option<u32> {
        let gains = |line: &Line| line.state == LineState::Closed && line.valid < layout.data_pages();
        let is_log = |line: &Line| log.is_some_and(|log| log.dying_soon(line));
        if let Some(empty) = lines.iter().position(|line| gains(line) && line.valid == 0) {
            return u32::try_from(empty).ok();
        }
        let others = self.pick(lines, layout, closed_so_far, |line| gains(line) && !is_log(line));
        others.or_else(|| self.pick(lines, layout, closed_so_far, gains))
    }

    fn pick(
        self,
        lines: &[Line],
        layout: &LineLayout,
        closed_so_far: u64,
        eligible: impl Fn(&Line) -> bool,
    ) -> Option<u32> {
        let data_pages = f64::from(layout.data_pages());
        let candidates = lines.iter().enumerate().filter(|(_, line)| eligible(line));
        let index = match self {
            LineVictim::Greedy => candidates.min_by_key(|(index, line)| (line.valid, *index)).map(|(index, _)| index),
            LineVictim::CostBenefit => candidates
                .map(|(index, line)| {
                    let utilization = f64::from(line.valid) / data_pages;
                    let age = f64_of(closed_so_far - line.closed_seq + 1);
                    (index, (1.0 - utilization) * age / (2.0 * utilization).max(f64::MIN_POSITIVE))
                })
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
                .map(|(index, _)| index),
        };
        index.and_then(|index| u32::try_from(index).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_stripes_units_round_robin_and_reserves_metadata() {
        let layout = LineLayout::new(4, 64, 4, 4096);
        assert_eq!(layout.line_pages, 256);
        assert_eq!((layout.smeta_pages, layout.emeta_pages), (4, 4));
        let opt = LineLayout::new(4, 64, 8, 4096);
        assert_eq!((opt.smeta_pages, opt.emeta_pages), (8, 8), "metadata in whole ws_opt units");
        assert_eq!(opt.locate(8), (UnitId(1), 0));
        assert_eq!(opt.locate(33), (UnitId(0), 9));
        assert_eq!(layout.locate(0), (UnitId(0), 0));
        assert_eq!(layout.locate(5), (UnitId(1), 1));
        assert_eq!(layout.locate(16), (UnitId(0), 4));
        assert_eq!(layout.locate(255), (UnitId(3), 63));
    }

    #[test]
    fn victim_policies() {
        let layout = LineLayout::new(4, 64, 4, 4096);
        let closed = |valid, closed_seq| Line { state: LineState::Closed, valid, closed_seq, ..Line::new(&layout) };
        let lines = vec![closed(100, 9), closed(50, 8), closed(60, 0), closed(layout.data_pages(), 0)];
        assert_eq!(LineVictim::Greedy.select(&lines, &layout, 10, None), Some(1));
        // Line 2 is a little fuller but much older.
        assert_eq!(LineVictim::CostBenefit.select(&lines, &layout, 10, None), Some(2));
        assert_eq!(LineVictim::Greedy.select(&lines[3..], &layout, 10, None), None);
    }

    #[test]
    fn young_log_lines_are_victims_only_when_empty_or_alone() {
        let layout = LineLayout::new(4, 64, 4, 4096);
        let journal = ClassId(1);
        // 1,000 journal pages written, 300 of them live: a line closed at 900 is young.
        let log = LogClass { class: journal, written: 1000, live: 300 };
        let line = |valid, class: ClassId| Line {
            state: LineState::Closed,
            valid,
            class,
            labels: 1 << class.0,
            closed_class_pages: 900,
            ..Line::new(&layout)
        };
        let lines = vec![line(200, ClassId(0)), line(10, journal), line(layout.data_pages(), ClassId(0))];
        assert_eq!(
            LineVictim::Greedy.select(&lines, &layout, 3, None),
            Some(1),
            "log-unaware greedy takes the log line"
        );
        assert_eq!(LineVictim::Greedy.select(&lines, &layout, 3, Some(log)), Some(0), "the data line goes first");
        let with_empty_log = vec![line(200, ClassId(0)), line(0, journal)];
        assert_eq!(
            LineVictim::Greedy.select(&with_empty_log, &layout, 3, Some(log)),
            Some(1),
            "a dead log line is free"
        );
        let old = Line { closed_class_pages: 600, ..line(10, journal) };
        let with_old_log = vec![line(200, ClassId(0)), old];
        assert_eq!(
            LineVictim::Greedy.select(&with_old_log, &layout, 3, Some(log)),
            Some(1),
            "a log line older than the log's length holds long-lived pages: an ordinary victim"
        );
        assert_eq!(
            LineVictim::Greedy.select(&lines[1..], &layout, 3, Some(log)),
            Some(0),
            "alone, the log line is taken"
        );
    }
}
