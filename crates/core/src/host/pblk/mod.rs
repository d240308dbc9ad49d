//! A pblk-like host-level FTL (Linux `drivers/lightnvm/pblk`, Bjørling et
//! al., FAST '17) on the [`OpenChannelDevice`]. The host owns everything the
//! device-side FTL would: the L2P table in host memory, a write buffer,
//! lines — one chunk of every parallel unit, written round-robin in
//! `ws_min`-page units — and line-granularity garbage collection with a
//! victim policy and a free-line threshold.
//!
//! Separation (Son and Ahn 2021): every buffered page carries the class a
//! [`Classifier`] gave its write. With `separate = true` each class has its
//! own write queue and open line, so journal pages never share a line with
//! data pages; GC relocates a page into the open line of its class.
//! Without it every class goes to the one data line, as stock pblk does.
//!
//! How pblk is read here (docs/journal-separation.md): the buffer is drained
//! in whole `ws_min` units as soon as a class has one; a flush (`REQ_PREFLUSH`
//! or a flush request) pads each partial unit, as `pblk_rb_flush` does; a
//! buffered page overwritten before it is drained is still programmed and
//! is invalid at once (`pblk_update_map_dev`); GC runs when a line is
//! opened and fewer than `gc_free_lines` lines are free.

mod line;

pub use line::{LineLayout, LineState, LineVictim};

use crate::config::ConfigError;
use crate::device::open_channel::{ChunkAddr, OpenChannelDevice, OpenChannelError, OpenChannelGeometry};
use crate::device::Geometry;
use crate::ftl::{FlashOp, FlashOpKind, FtlError, Recorder, TranslationLayer};
use crate::host::classify::{ClassId, CLASSES_MAX};
use crate::metrics::Counters;
use crate::units::{Lpn, StreamId, UnitId};
use line::{Line, NONE};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// L2P entries with this bit set point into the write buffer.
const BUFFERED: u32 = 1 << 31;

/// The `[pblk]` configuration section (open-channel mode).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PblkConfig {
    /// The device's minimum write size in pages (OCSSD `ws_min`).
    #[serde(default = "default_ws_min")]
    pub ws_min_pages: u32,
    /// Host write buffer in pages (pblk's ring buffer).
    #[serde(default = "default_buffer")]
    pub write_buffer_pages: u32,
    /// GC runs while fewer lines than this are free.
    #[serde(default = "default_gc_free_lines")]
    pub gc_free_lines: u32,
    #[serde(default)]
    pub victim: LineVictim,
    /// Each class of the classifier stage (`host.classifier`) gets its own
    /// open line (journal separation).
    #[serde(default)]
    pub separate: bool,
}

fn default_ws_min() -> u32 {
    4
}
fn default_buffer() -> u32 {
    1024
}
fn default_gc_free_lines() -> u32 {
    4
}

impl Default for PblkConfig {
    fn default() -> Self {
        Self {
            ws_min_pages: default_ws_min(),
            write_buffer_pages: default_buffer(),
            gc_free_lines: default_gc_free_lines(),
            victim: LineVictim::default(),
            separate: false,
        }
    }
}

impl PblkConfig {
    pub fn validate(&self, geometry: &Geometry) -> Result<(), ConfigError> {
        if self.ws_min_pages == 0 || !geometry.pages_per_block.is_multiple_of(self.ws_min_pages) {
            return Err(ConfigError::new(
                "pblk.ws_min_pages",
                format!("{} must divide the {} pages of a chunk", self.ws_min_pages, geometry.pages_per_block),
            ));
        }
        let reserve = u64::from(self.gc_free_lines) + CLASSES_MAX as u64;
        if self.gc_free_lines < 2 || reserve + 2 > u64::from(geometry.blocks_per_plane) {
            return Err(ConfigError::new(
                "pblk.gc_free_lines",
                format!(
                    "must be at least 2, and with one open line per class ({CLASSES_MAX} at most) leave lines to \
                     write: the device has {} lines (device.blocks_per_plane)",
                    geometry.blocks_per_plane
                ),
            ));
        }
        let stripe = u64::from(self.ws_min_pages) * u64::from(geometry.units());
        if u64::from(self.write_buffer_pages) < stripe {
            return Err(ConfigError::new(
                "pblk.write_buffer_pages",
                format!("{} pages cannot hold one unit for every PU ({stripe} pages)", self.write_buffer_pages),
            ));
        }
        if self.write_buffer_pages > geometry.logical_pages {
            return Err(ConfigError::new(
                "pblk.write_buffer_pages",
                format!(
                    "{} pages exceed the logical capacity of {} pages",
                    self.write_buffer_pages, geometry.logical_pages
                ),
            ));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PblkError {
    #[error("logical page {lpn} is beyond the logical capacity of {logical_pages} pages")]
    LpnOutOfRange { lpn: u64, logical_pages: u32 },
    #[error("no free line and nothing to reclaim: the device is full ({lines} lines)")]
    OutOfSpace { lines: u32 },
    #[error("open-channel device refused a command: {0}")]
    Device(#[from] OpenChannelError),
}

/// Counts specific to the host-level FTL, next to the shared [`Counters`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PblkStats {
    /// Lines reclaimed by GC.
    pub gc_lines: u64,
    /// Pages programmed to pad partial units at flushes.
    pub padded_pages: u64,
    /// smeta and emeta pages.
    pub metadata_pages: u64,
    /// Buffered pages overwritten before they reached flash (programmed invalid).
    pub stale_buffered_pages: u64,
    pub lines_closed: u64,
    /// Closed lines that held pages of more than one class.
    pub mixed_lines_closed: u64,
    /// Host pages written per classifier class.
    pub class_pages: Vec<u64>,
    /// GC copies per class.
    pub class_gc_copies: Vec<u64>,
}

impl PblkStats {
    /// Counts accumulated since `earlier`, a snapshot of the same stats.
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        let minus = |now: &[u64], then: &[u64]| {
            now.iter().zip(then.iter().chain(std::iter::repeat(&0))).map(|(a, b)| a - b).collect()
        };
        Self {
            gc_lines: self.gc_lines - earlier.gc_lines,
            padded_pages: self.padded_pages - earlier.padded_pages,
            metadata_pages: self.metadata_pages - earlier.metadata_pages,
            stale_buffered_pages: self.stale_buffered_pages - earlier.stale_buffered_pages,
            lines_closed: self.lines_closed - earlier.lines_closed,
            mixed_lines_closed: self.mixed_lines_closed - earlier.mixed_lines_closed,
            class_pages: minus(&self.class_pages, &earlier.class_pages),
            class_gc_copies: minus(&self.class_gc_copies, &earlier.class_gc_copies),
        }
    }
}

/// A buffered page: its logical page and class.
#[derive(Clone, Copy, Debug)]
struct Entry {
    lpn: u32,
    label: ClassId,
}

/// The host write buffer: slots the L2P can point at, and one FIFO per
/// placement class.
#[derive(Clone, Debug)]
struct WriteBuffer {
    slots: Vec<Entry>,
    free: Vec<u32>,
    queues: Vec<VecDeque<u32>>,
    pending: u64,
}

impl WriteBuffer {
    fn push(&mut self, queue: usize, entry: Entry) -> u32 {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = entry;
                slot
            }
            None => {
                self.slots.push(entry);
                u32::try_from(self.slots.len() - 1).unwrap_or(u32::MAX)
            }
        };
        self.queues[queue].push_back(slot);
        self.pending += 1;
        slot
    }

    /// Takes up to `pages` entries of `queue`, oldest first, with their slots.
    fn take(&mut self, queue: usize, pages: u32, into: &mut Vec<(u32, Entry)>) {
        into.clear();
        for _ in 0..pages {
            let Some(slot) = self.queues[queue].pop_front() else {
                break;
            };
            into.push((slot, self.slots[slot as usize]));
            self.free.push(slot);
            self.pending -= 1;
        }
    }
}

/// The host-level FTL and the device it drives.
#[derive(Debug, Clone)]
pub struct Pblk {
    config: PblkConfig,
    device: OpenChannelDevice,
    layout: LineLayout,
    logical_pages: u32,
    lines: Vec<Line>,
    free_lines: VecDeque<u32>,
    open: Vec<Option<u32>>,
    l2p: Vec<u32>,
    /// Class of the data each logical page holds, kept across GC moves.
    labels: Vec<ClassId>,
    buffer: WriteBuffer,
    unit: Vec<(u32, Entry)>,
    counters: Counters,
    stats: PblkStats,
    /// Device commands for the timing engine: a ws_min-page write is
    /// `ws_min` programs on its PU, a chunk reset an erase.
    recorder: Recorder,
    geometry: Geometry,
    in_gc: bool,
}

impl Pblk {
    /// `classes`: how many classes the classifier in front of it names.
    pub fn new(geometry: &Geometry, config: &PblkConfig, classes: usize) -> Result<Self, PblkError> {
        let device = OpenChannelDevice::new(geometry, config.ws_min_pages)?;
        let exposed: OpenChannelGeometry = *device.geometry();
        let layout = LineLayout::new(exposed.pus(), exposed.pages_per_chunk, exposed.ws_min_pages, exposed.page_bytes);
        let lines: Vec<Line> = (0..exposed.chunks_per_pu).map(|_| Line::new(&layout)).collect();
        let classes = classes.clamp(1, CLASSES_MAX);
        let queues = if config.separate { classes } else { 1 };
        Ok(Self {
            config: config.clone(),
            layout,
            logical_pages: geometry.logical_pages,
            free_lines: (0..exposed.chunks_per_pu).collect(),
            lines,
            open: vec![None; queues],
            l2p: vec![NONE; geometry.logical_pages as usize],
            labels: vec![ClassId(0); geometry.logical_pages as usize],
            buffer: WriteBuffer {
                slots: Vec::new(),
                free: Vec::new(),
                queues: vec![VecDeque::new(); queues],
                pending: 0,
            },
            unit: Vec::with_capacity(exposed.ws_min_pages as usize),
            counters: Counters::new(classes),
            stats: PblkStats {
                class_pages: vec![0; classes],
                class_gc_copies: vec![0; classes],
                ..PblkStats::default()
            },
            recorder: Recorder::default(),
            geometry: *geometry,
            in_gc: false,
            device,
        })
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    pub fn stats(&self) -> &PblkStats {
        &self.stats
    }

    pub fn layout(&self) -> &LineLayout {
        &self.layout
    }

    pub fn device(&self) -> &OpenChannelDevice {
        &self.device
    }

    pub fn free_lines(&self) -> usize {
        self.free_lines.len()
    }

    /// Lines holding pages of more than one class right now (closed or open).
    pub fn mixed_lines(&self) -> usize {
        self.lines.iter().filter(|line| line.is_mixed()).count()
    }

    pub fn count_request(&mut self) {
        self.counters.requests += 1;
    }

    /// Buffers one page of class `label` and drains whole units.
    pub fn write(&mut self, lpn: Lpn, label: ClassId) -> Result<(), PblkError> {
        self.check(lpn)?;
        self.counters.host_pages_written += 1;
        self.counters.stream_host_pages_written[label.0 as usize] += 1;
        self.stats.class_pages[label.0 as usize] += 1;
        self.invalidate(lpn);
        self.labels[lpn.index()] = label;
        let queue = self.queue_of(label);
        let slot = self.buffer.push(queue, Entry { lpn: lpn.0, label });
        self.l2p[lpn.index()] = BUFFERED | slot;
        self.drain(queue, false)
    }

    /// Reads one page: from flash, or from the write buffer while it waits there.
    pub fn read(&mut self, lpn: Lpn) -> Result<(), PblkError> {
        self.check(lpn)?;
        let entry = self.l2p[lpn.index()];
        if entry == NONE {
            self.counters.unmapped_reads += 1;
            return Ok(());
        }
        self.counters.host_pages_read += 1;
        if entry & BUFFERED != 0 {
            return Ok(());
        }
        self.read_flash(entry)
    }

    pub fn trim(&mut self, first: Lpn, pages: u32) -> Result<(), PblkError> {
        for lpn in first.0..first.0.saturating_add(pages) {
            self.check(Lpn(lpn))?;
            self.invalidate(Lpn(lpn));
            self.l2p[lpn as usize] = NONE;
            self.counters.host_pages_trimmed += 1;
        }
        Ok(())
    }

    /// Pads and programs every partial unit.
    pub fn flush(&mut self) -> Result<(), PblkError> {
        for queue in 0..self.buffer.queues.len() {
            self.drain(queue, true)?;
        }
        Ok(())
    }

    fn check(&self, lpn: Lpn) -> Result<(), PblkError> {
        if lpn.0 >= self.logical_pages {
            return Err(PblkError::LpnOutOfRange { lpn: u64::from(lpn.0), logical_pages: self.logical_pages });
        }
        Ok(())
    }

    fn queue_of(&self, label: ClassId) -> usize {
        if self.config.separate {
            label.0 as usize
        } else {
            0
        }
    }

    /// Drops the flash copy of `lpn`, if any (a buffered copy turns stale by itself).
    fn invalidate(&mut self, lpn: Lpn) {
        let entry = self.l2p[lpn.index()];
        if entry != NONE && entry & BUFFERED == 0 {
            let line = entry / self.layout.line_pages;
            self.lines[line as usize].valid -= 1;
        }
    }

    fn read_flash(&mut self, address: u32) -> Result<(), PblkError> {
        let (line, index) = (address / self.layout.line_pages, address % self.layout.line_pages);
        let (pu, page) = self.layout.locate(index);
        self.device.read(ChunkAddr { pu, chunk: line }, page)?;
        self.counters.flash_pages_read += 1;
        self.recorder.record(FlashOpKind::Read, pu, self.in_gc);
        Ok(())
    }

    /// Programs whole units of `queue`; with `pad`, a partial last unit too.
    fn drain(&mut self, queue: usize, pad: bool) -> Result<(), PblkError> {
        let ws_min = self.layout.ws_min;
        loop {
            let waiting = self.buffer.queues[queue].len();
            if waiting == 0 || (waiting < ws_min as usize && !pad) {
                return Ok(());
            }
            let mut unit = std::mem::take(&mut self.unit);
            self.buffer.take(queue, ws_min, &mut unit);
            let result = self.program_data(queue, &unit);
            self.unit = unit;
            result?;
        }
    }

    /// Writes one unit of buffered entries (padded to `ws_min`) to the open
    /// line of `queue` and maps the entries still current.
    fn program_data(&mut self, queue: usize, unit: &[(u32, Entry)]) -> Result<(), PblkError> {
        let line_id = self.open_line(queue)?;
        let ws_min = self.layout.ws_min;
        let start = self.lines[line_id as usize].next;
        self.program(line_id, start)?;
        self.stats.padded_pages += u64::from(ws_min) - unit.len() as u64;
        let base = line_id * self.layout.line_pages;
        let line = &mut self.lines[line_id as usize];
        for (offset, (slot, entry)) in (start..).zip(unit) {
            line.labels |= 1 << entry.label.0;
            if self.l2p[entry.lpn as usize] == BUFFERED | slot {
                self.l2p[entry.lpn as usize] = base + offset;
                line.p2l[offset as usize] = entry.lpn;
                line.valid += 1;
            } else {
                self.stats.stale_buffered_pages += 1;
            }
        }
        line.next += ws_min;
        if line.next == self.layout.data_end() {
            self.close_line(line_id)?;
        }
        Ok(())
    }

    /// Programs the `ws_min` pages at line-relative `index`.
    fn program(&mut self, line: u32, index: u32) -> Result<(), PblkError> {
        let ws_min = self.layout.ws_min;
        let (pu, page) = self.layout.locate(index);
        self.device.write(ChunkAddr { pu, chunk: line }, page, ws_min)?;
        self.counters.flash_pages_programmed += u64::from(ws_min);
        for _ in 0..ws_min {
            self.recorder.record(FlashOpKind::Program, pu, self.in_gc);
        }
        Ok(())
    }

    /// The open line of `queue`, opening a free one (after GC if free lines
    /// are short) when there is none.
    fn open_line(&mut self, queue: usize) -> Result<u32, PblkError> {
        if let Some(line) = self.open[queue] {
            return Ok(line);
        }
        if !self.in_gc {
            self.in_gc = true;
            let collected = self.collect();
            self.in_gc = false;
            collected?;
            // GC's copies may have opened this queue's line already.
            if let Some(line) = self.open[queue] {
                return Ok(line);
            }
        }
        let line_id = self.free_lines.pop_front().ok_or(PblkError::OutOfSpace { lines: self.layout_lines() })?;
        let class = ClassId(u8::try_from(queue).unwrap_or(0));
        let layout = self.layout;
        let line = &mut self.lines[line_id as usize];
        line.state = LineState::Open;
        line.class = class;
        line.labels = 0;
        line.valid = 0;
        line.next = layout.smeta_pages;
        line.p2l.fill(NONE);
        for index in (0..layout.smeta_pages).step_by(layout.ws_min as usize) {
            self.program(line_id, index)?;
        }
        self.stats.metadata_pages += u64::from(layout.smeta_pages);
        self.open[queue] = Some(line_id);
        Ok(line_id)
    }

    /// Writes emeta and closes the line.
    fn close_line(&mut self, line_id: u32) -> Result<(), PblkError> {
        let layout = self.layout;
        for index in (layout.data_end()..layout.line_pages).step_by(layout.ws_min as usize) {
            self.program(line_id, index)?;
        }
        self.stats.metadata_pages += u64::from(layout.emeta_pages);
        let line = &mut self.lines[line_id as usize];
        line.state = LineState::Closed;
        line.next = layout.line_pages;
        line.closed_seq = self.stats.lines_closed;
        self.stats.lines_closed += 1;
        self.stats.mixed_lines_closed += u64::from(line.is_mixed());
        let queue = line.class.0 as usize;
        self.open[queue] = None;
        Ok(())
    }

    fn layout_lines(&self) -> u32 {
        u32::try_from(self.lines.len()).unwrap_or(u32::MAX)
    }

    /// Line-granularity GC: while free lines are short, reclaim the victim
    /// the policy picks — read its valid pages, rewrite them through the
    /// buffer into the open line of their class, reset its chunks.
    fn collect(&mut self) -> Result<(), PblkError> {
        while self.free_lines.len() < self.config.gc_free_lines as usize {
            let Some(victim) = self.config.victim.select(&self.lines, &self.layout, self.stats.lines_closed) else {
                return Ok(());
            };
            self.relocate(victim)?;
            self.reset_line(victim)?;
            self.stats.gc_lines += 1;
        }
        Ok(())
    }

    fn relocate(&mut self, victim: u32) -> Result<(), PblkError> {
        let base = victim * self.layout.line_pages;
        for index in self.layout.smeta_pages..self.layout.data_end() {
            let lpn = self.lines[victim as usize].p2l[index as usize];
            if lpn == NONE || self.l2p[lpn as usize] != base + index {
                continue;
            }
            self.read_flash(base + index)?;
            self.lines[victim as usize].valid -= 1;
            let label = self.labels[lpn as usize];
            self.counters.gc_page_copies += 1;
            self.stats.class_gc_copies[label.0 as usize] += 1;
            let queue = self.queue_of(label);
            let slot = self.buffer.push(queue, Entry { lpn, label });
            self.l2p[lpn as usize] = BUFFERED | slot;
            self.drain(queue, false)?;
        }
        Ok(())
    }

    fn reset_line(&mut self, line_id: u32) -> Result<(), PblkError> {
        for pu in 0..self.layout.pus {
            self.device.reset(ChunkAddr { pu: UnitId(pu), chunk: line_id })?;
            self.recorder.record(FlashOpKind::Erase, UnitId(pu), true);
            self.counters.erases += 1;
        }
        let line = &mut self.lines[line_id as usize];
        line.state = LineState::Free;
        line.labels = 0;
        self.free_lines.push_back(line_id);
        Ok(())
    }
}

impl TranslationLayer for Pblk {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn erase_counts(&self) -> &[u32] {
        self.device.reset_counts()
    }

    fn memory_bytes(&self) -> usize {
        let line_maps: usize = self.lines.iter().map(|line| line.p2l.capacity() * 4).sum();
        self.l2p.capacity() * 4 + self.labels.capacity() + line_maps + self.buffer.slots.capacity() * 8
    }

    fn count_request(&mut self) {
        Pblk::count_request(self);
    }

    /// The stream is the classifier's class.
    fn write(&mut self, lpn: Lpn, stream: StreamId) -> Result<(), FtlError> {
        let classes = self.stats.class_pages.len();
        if stream.index() >= classes {
            // At most CLASSES_MAX classes.
            #[allow(clippy::cast_possible_truncation)]
            return Err(FtlError::UnknownStream { stream: stream.0, streams: classes as u32 });
        }
        Ok(Pblk::write(self, lpn, ClassId(stream.0))?)
    }

    fn read(&mut self, lpn: Lpn) -> Result<(), FtlError> {
        Ok(Pblk::read(self, lpn)?)
    }

    fn trim(&mut self, first: Lpn, pages: u32) -> Result<(), FtlError> {
        Ok(Pblk::trim(self, first, pages)?)
    }

    fn flush(&mut self) -> Result<(), FtlError> {
        Ok(Pblk::flush(self)?)
    }

    fn is_mapped(&self, lpn: Lpn) -> bool {
        self.l2p.get(lpn.index()).is_some_and(|&entry| entry != NONE)
    }

    /// Every PU holds one chunk of each line: its free chunks are the free lines.
    fn free_blocks(&self, _unit: UnitId) -> u32 {
        // At most `blocks_per_plane` lines.
        #[allow(clippy::cast_possible_truncation)]
        let free = self.free_lines.len() as u32;
        free
    }

    /// pblk collects when it opens a line (its GC thread keeps pace with
    /// the writer), not in device idle time.
    fn collect_one(&mut self, _unit: UnitId) -> Result<bool, FtlError> {
        Ok(false)
    }

    fn set_recording(&mut self, on: bool) {
        self.recorder.set(on);
    }

    fn recorded(&self) -> &[FlashOp] {
        self.recorder.ops()
    }

    fn clear_recorded(&mut self) {
        self.recorder.clear();
    }
}

#[cfg(test)]
mod tests;
