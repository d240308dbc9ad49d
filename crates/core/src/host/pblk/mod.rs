//! A pblk-like host-level FTL (Linux `drivers/lightnvm/pblk`, Bjørling et
//! al., FAST '17) on the [`OpenChannelDevice`]. The host owns everything the
//! device-side FTL would: the L2P table in host memory, a write buffer,
//! lines — one chunk of every parallel unit, written round-robin in
//! `ws_opt`-page units — and line-granularity garbage collection with a
//! victim policy and a rate limiter.
//!
//! Separation (Son and Ahn 2021): every buffered page carries the class a
//! [`Classifier`] gave its write. With `separate = true` each class has its
//! own write queue and open line, so journal pages never share a line with
//! data pages; GC relocates a page into the open line of its class.
//! Without it every class goes to the one data line, as stock pblk does.
//!
//! How pblk is read here (docs/journal-separation.md):
//! - The buffer is drained in whole `ws_opt` units (`min_write_pgs`) as soon
//!   as a class has one; a flush (`REQ_PREFLUSH` or a flush request) pads
//!   each partial unit to `ws_opt`, as `pblk_rb_flush` does. A buffered page
//!   overwritten before it is drained is still programmed and is invalid at
//!   once (`pblk_update_map_dev`).
//! - The rate limiter (`pblk-rl.c`) splits the buffer between user and GC
//!   writes by the free lines: all of it to the user at or above the high
//!   watermark (the over-provisioned lines), `free / high` of it below, none
//!   at or below the reserve (`pblk.gc_free_lines`), where user writes wait
//!   for GC. GC moves as many valid pages per user page as the split gives
//!   it, so its copies travel with the user writes that made room for them.
//! - A reclaimed line goes back on the free list unerased; its chunks are
//!   reset in the background ([`TranslationLayer::collect_one`], one chunk
//!   on an idle PU) or, if the line is opened first, synchronously then
//!   (pblk's erase of the next line). A flush waits for the data it covers,
//!   never for an erase it did not need.
//!
//! [`Classifier`]: crate::host::classify::Classifier

mod check;
mod line;

pub use crate::ftl::PblkError;
pub use line::{LineLayout, LineState, LineVictim, LogClass};

use crate::device::open_channel::{ChunkAddr, OpenChannelDevice, OpenChannelGeometry};
use crate::device::Geometry;
use crate::error::ConfigError;
use crate::ftl::{FlashOp, FlashOpKind, FtlError, Recorder, TranslationLayer};
use crate::host::classify::{ClassId, CLASSES_MAX};
use crate::metrics::Counters;
use crate::units::{Lpn, StreamId, UnitId};
use line::{Line, NONE};
use nandlab_convert::f64_of;
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
    /// The device's optimal write size in pages (OCSSD `ws_opt`): pblk's
    /// `min_write_pgs`, the unit it stripes and pads in.
    #[serde(default = "default_ws_opt")]
    pub ws_opt_pages: u32,
    /// Host write buffer in pages (pblk's ring buffer).
    #[serde(default = "default_buffer")]
    pub write_buffer_pages: u32,
    /// The rate limiter's reserve: at or below this many free lines user
    /// writes wait while GC reclaims a line (pblk's `rsv_blocks`).
    #[serde(default = "default_gc_free_lines")]
    pub gc_free_lines: u32,
    #[serde(default)]
    pub victim: LineVictim,
    /// With separation, the journal's young lines (a circular log) are GC
    /// victims only once wholly invalid or when no other line has anything
    /// to gain. Off by default: it holds up to one log length of dying
    /// lines, which costs more than it saves when the journal is large
    /// against the spare lines (docs/journal-separation.md).
    #[serde(default = "default_log_aware")]
    pub log_aware: bool,
    /// Each class of the classifier stage (`host.classifier`) gets its own
    /// open line (journal separation).
    #[serde(default)]
    pub separate: bool,
}

/// QEMU OCSSD 2.0's defaults (`ws_min` 4, `ws_opt` 8 sectors of 4 KiB).
fn default_ws_min() -> u32 {
    4
}
fn default_ws_opt() -> u32 {
    8
}
fn default_log_aware() -> bool {
    false
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
            ws_opt_pages: default_ws_opt(),
            write_buffer_pages: default_buffer(),
            gc_free_lines: default_gc_free_lines(),
            victim: LineVictim::default(),
            log_aware: default_log_aware(),
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
        if self.ws_opt_pages == 0
            || !self.ws_opt_pages.is_multiple_of(self.ws_min_pages)
            || !geometry.pages_per_block.is_multiple_of(self.ws_opt_pages)
        {
            return Err(ConfigError::new(
                "pblk.ws_opt_pages",
                format!(
                    "{} must be a multiple of ws_min_pages = {} and divide the {} pages of a chunk",
                    self.ws_opt_pages, self.ws_min_pages, geometry.pages_per_block
                ),
            ));
        }
        let layout = LineLayout::new(geometry.units(), geometry.pages_per_block, self.ws_opt_pages, geometry.page_size);
        if layout.smeta_pages + layout.emeta_pages >= layout.line_pages {
            return Err(ConfigError::new(
                "pblk.ws_opt_pages",
                format!(
                    "line metadata ({} + {} pages in ws_opt units) fills the whole {}-page line",
                    layout.smeta_pages, layout.emeta_pages, layout.line_pages
                ),
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
        let stripe = u64::from(self.ws_opt_pages) * u64::from(geometry.units());
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

/// Counts specific to the host-level FTL, next to the shared [`Counters`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PblkStats {
    /// Lines reclaimed by GC.
    pub gc_lines: u64,
    /// Pages programmed to pad partial units at flushes.
    pub padded_pages: u64,
    /// Padding per write queue: per class with separation, else all in
    /// queue 0 (the one data line).
    pub queue_padded_pages: Vec<u64>,
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
    /// User writes that found the free lines at the reserve and waited for
    /// GC to reclaim a line (the rate limiter gave the user nothing).
    pub user_stalls: u64,
    /// Chunk resets done in a PU's idle time, and at line open (the write
    /// that opened the line waited for them).
    pub background_resets: u64,
    pub inline_resets: u64,
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
            queue_padded_pages: minus(&self.queue_padded_pages, &earlier.queue_padded_pages),
            metadata_pages: self.metadata_pages - earlier.metadata_pages,
            stale_buffered_pages: self.stale_buffered_pages - earlier.stale_buffered_pages,
            lines_closed: self.lines_closed - earlier.lines_closed,
            mixed_lines_closed: self.mixed_lines_closed - earlier.mixed_lines_closed,
            class_pages: minus(&self.class_pages, &earlier.class_pages),
            class_gc_copies: minus(&self.class_gc_copies, &earlier.class_gc_copies),
            user_stalls: self.user_stalls - earlier.user_stalls,
            background_resets: self.background_resets - earlier.background_resets,
            inline_resets: self.inline_resets - earlier.inline_resets,
        }
    }

    /// pblk's write amplification, `(user + gc + pad) / user` (its sysfs
    /// `write_amp_mileage`): line metadata is not counted.
    pub fn pblk_wa(&self) -> Option<f64> {
        let user: u64 = self.class_pages.iter().sum();
        let gc: u64 = self.class_gc_copies.iter().sum();
        (user > 0).then(|| f64_of(user + gc + self.padded_pages) / f64_of(user))
    }

    /// GC alone: `(user + gc) / user`.
    pub fn gc_wa(&self) -> Option<f64> {
        let user: u64 = self.class_pages.iter().sum();
        let gc: u64 = self.class_gc_copies.iter().sum();
        (user > 0).then(|| f64_of(user + gc) / f64_of(user))
    }

    /// Padding's share of the pages pblk wrote, `pad / (user + gc + pad)`.
    pub fn padding_share(&self) -> Option<f64> {
        let written =
            self.class_pages.iter().sum::<u64>() + self.class_gc_copies.iter().sum::<u64>() + self.padded_pages;
        (written > 0).then(|| f64_of(self.padded_pages) / f64_of(written))
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
        }
    }
}

/// The rate limiter's watermarks in lines (`pblk-rl.c`).
#[derive(Clone, Copy, Debug)]
struct RateLimit {
    /// At or above this many free lines the user gets the whole buffer.
    high: u32,
    /// At or below this many the user gets none of it.
    reserve: u32,
}

impl RateLimit {
    /// `high` is the over-provisioned lines less one (pblk: `op_blks` less a
    /// line's blocks), never below the reserve plus one.
    fn new(lines: u32, data_pages_per_line: u32, logical_pages: u32, reserve: u32) -> Self {
        let needed = logical_pages.div_ceil(data_pages_per_line.max(1));
        let high = lines.saturating_sub(needed).saturating_sub(1).max(reserve + 1);
        Self { high, reserve }
    }
}

/// GC's progress through its victim line.
#[derive(Clone, Copy, Debug)]
struct Collecting {
    line: u32,
    /// Next line-relative page to look at.
    next: u32,
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
    /// Per line and PU (`line * pus + pu`): the chunk still holds the data
    /// of a reclaimed line and must be reset before it is written.
    unreset: Vec<bool>,
    /// Per PU: free lines whose chunk on it is erased.
    erased_free: Vec<u32>,
    open: Vec<Option<u32>>,
    l2p: Vec<u32>,
    /// Class of the data each logical page holds, kept across GC moves.
    labels: Vec<ClassId>,
    buffer: WriteBuffer,
    unit: Vec<(u32, Entry)>,
    rate: RateLimit,
    collecting: Option<Collecting>,
    /// GC pages owed to the rate limiter's share, in units of 1/free lines.
    gc_credit: u64,
    /// The class holding a circular log (the journal), for the victim choice.
    log_class: Option<ClassId>,
    counters: Counters,
    stats: PblkStats,
    /// Device commands for the timing engine: a ws_opt-page write is
    /// `ws_opt` programs on its PU, a chunk reset an erase.
    recorder: Recorder,
    geometry: Geometry,
    in_gc: bool,
}

impl Pblk {
    /// `classes`: how many classes the classifier in front of it names.
    pub fn new(geometry: &Geometry, config: &PblkConfig, classes: usize) -> Result<Self, PblkError> {
        let device = OpenChannelDevice::new(geometry, config.ws_min_pages)?;
        let exposed: OpenChannelGeometry = *device.geometry();
        let layout = LineLayout::new(exposed.pus(), exposed.pages_per_chunk, config.ws_opt_pages, exposed.page_bytes);
        let lines: Vec<Line> = (0..exposed.chunks_per_pu).map(|_| Line::new(&layout)).collect();
        let classes = classes.clamp(1, CLASSES_MAX);
        let queues = if config.separate { classes } else { 1 };
        Ok(Self {
            config: config.clone(),
            layout,
            logical_pages: geometry.logical_pages,
            free_lines: (0..exposed.chunks_per_pu).collect(),
            unreset: vec![false; lines.len() * exposed.pus() as usize],
            erased_free: vec![exposed.chunks_per_pu; exposed.pus() as usize],
            rate: RateLimit::new(
                exposed.chunks_per_pu,
                layout.data_pages(),
                geometry.logical_pages,
                config.gc_free_lines,
            ),
            lines,
            open: vec![None; queues],
            l2p: vec![NONE; geometry.logical_pages as usize],
            labels: vec![ClassId(0); geometry.logical_pages as usize],
            buffer: WriteBuffer { slots: Vec::new(), free: Vec::new(), queues: vec![VecDeque::new(); queues] },
            unit: Vec::with_capacity(layout.ws_opt as usize),
            collecting: None,
            gc_credit: 0,
            log_class: None,
            counters: Counters::new(classes),
            stats: PblkStats {
                class_pages: vec![0; classes],
                class_gc_copies: vec![0; classes],
                queue_padded_pages: vec![0; queues],
                ..PblkStats::default()
            },
            recorder: Recorder::default(),
            geometry: *geometry,
            in_gc: false,
            device,
        })
    }

    /// Names the class that holds a circular log (ext4's journal): with
    /// `pblk.separate` and `pblk.log_aware`, GC leaves its young lines to
    /// the log to overwrite (see [`LogClass`]).
    #[must_use]
    pub fn with_log_class(mut self, class: Option<ClassId>) -> Self {
        self.log_class = class.filter(|_| self.config.separate && self.config.log_aware);
        self
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

    /// The logical pages whose current copy is on flash in `line`.
    pub fn valid_pages_of_line(&self, line: u32) -> impl Iterator<Item = Lpn> + '_ {
        let base = line * self.layout.line_pages;
        let p2l = self.lines.get(line as usize).map_or(&[][..], |line| &line.p2l[..]);
        (0u32..)
            .zip(p2l)
            .filter(move |&(index, &lpn)| lpn != NONE && self.l2p[lpn as usize] == base + index)
            .map(|(_, &lpn)| Lpn(lpn))
    }

    pub fn line_count(&self) -> u32 {
        self.layout_lines()
    }

    pub fn count_request(&mut self) {
        self.counters.requests += 1;
    }

    /// Buffers one page of class `label`, drains whole units and gives GC
    /// the share of the buffer the rate limiter allows.
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
        self.drain(queue, false)?;
        self.pace_gc()
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
            verify!(self.lines[line as usize].valid > 0, "{lpn:?} is live in empty line {line}");
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
        let ws_opt = self.layout.ws_opt;
        loop {
            let waiting = self.buffer.queues[queue].len();
            if waiting == 0 || (waiting < ws_opt as usize && !pad) {
                return Ok(());
            }
            let mut unit = std::mem::take(&mut self.unit);
            self.buffer.take(queue, ws_opt, &mut unit);
            let result = self.program_data(queue, &unit);
            self.unit = unit;
            result?;
        }
    }

    /// Writes one unit of buffered entries (padded to `ws_opt`) to the open
    /// line of `queue` and maps the entries still current.
    fn program_data(&mut self, queue: usize, unit: &[(u32, Entry)]) -> Result<(), PblkError> {
        let line_id = self.open_line(queue)?;
        let ws_opt = self.layout.ws_opt;
        let start = self.lines[line_id as usize].next;
        self.program(line_id, start)?;
        let padding = u64::from(ws_opt) - unit.len() as u64;
        self.stats.padded_pages += padding;
        self.stats.queue_padded_pages[queue] += padding;
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
        line.next += ws_opt;
        if line.next == self.layout.data_end() {
            self.close_line(line_id)?;
        }
        Ok(())
    }

    /// Programs the `ws_opt` pages at line-relative `index`.
    fn program(&mut self, line: u32, index: u32) -> Result<(), PblkError> {
        let ws_opt = self.layout.ws_opt;
        let (pu, page) = self.layout.locate(index);
        self.device.write(ChunkAddr { pu, chunk: line }, page, ws_opt)?;
        self.counters.flash_pages_programmed += u64::from(ws_opt);
        for _ in 0..ws_opt {
            self.recorder.record(FlashOpKind::Program, pu, self.in_gc);
        }
        Ok(())
    }

    /// The open line of `queue`, opening the next free one when there is
    /// none: chunks the background has not reset yet are reset now.
    fn open_line(&mut self, queue: usize) -> Result<u32, PblkError> {
        if let Some(line) = self.open[queue] {
            return Ok(line);
        }
        let line_id = self.free_lines.pop_front().ok_or(PblkError::OutOfSpace { lines: self.layout_lines() })?;
        for pu in 0..self.layout.pus {
            let chunk = self.chunk_index(line_id, pu);
            if std::mem::take(&mut self.unreset[chunk]) {
                self.reset_chunk(line_id, pu)?;
                self.stats.inline_resets += 1;
            } else {
                verify!(self.erased_free[pu as usize] > 0, "PU {pu} counts no erased free chunk");
                self.erased_free[pu as usize] -= 1;
            }
        }
        let class = ClassId(u8::try_from(queue).unwrap_or(0));
        let layout = self.layout;
        let line = &mut self.lines[line_id as usize];
        line.state = LineState::Open;
        line.class = class;
        line.labels = 0;
        line.valid = 0;
        line.next = layout.smeta_pages;
        line.p2l.fill(NONE);
        for index in (0..layout.smeta_pages).step_by(layout.ws_opt as usize) {
            self.program(line_id, index)?;
        }
        self.stats.metadata_pages += u64::from(layout.smeta_pages);
        self.open[queue] = Some(line_id);
        Ok(line_id)
    }

    /// Writes emeta and closes the line.
    fn close_line(&mut self, line_id: u32) -> Result<(), PblkError> {
        let layout = self.layout;
        for index in (layout.data_end()..layout.line_pages).step_by(layout.ws_opt as usize) {
            self.program(line_id, index)?;
        }
        self.stats.metadata_pages += u64::from(layout.emeta_pages);
        let line = &mut self.lines[line_id as usize];
        line.state = LineState::Closed;
        line.next = layout.line_pages;
        line.closed_seq = self.stats.lines_closed;
        line.closed_class_pages = self.stats.class_pages.get(line.class.0 as usize).copied().unwrap_or(0);
        self.stats.lines_closed += 1;
        self.stats.mixed_lines_closed += u64::from(line.is_mixed());
        let queue = line.class.0 as usize;
        self.open[queue] = None;
        Ok(())
    }

    fn layout_lines(&self) -> u32 {
        u32::try_from(self.lines.len()).unwrap_or(u32::MAX)
    }

    fn chunk_index(&self, line: u32, pu: u32) -> usize {
        line as usize * self.layout.pus as usize + pu as usize
    }

    /// The rate limiter after a user page (`pblk_rl_update_rates`): GC's
    /// share of the buffer is `(high - free) / high`, the user's
    /// `free / high`, so GC moves `(high - free) / free` pages per user page
    /// (an integer credit); at the reserve the user waits for a whole line.
    fn pace_gc(&mut self) -> Result<(), PblkError> {
        let free = u64::try_from(self.free_lines.len()).unwrap_or(u64::MAX);
        let RateLimit { high, reserve } = self.rate;
        if free >= u64::from(high) {
            self.gc_credit = 0;
            return Ok(());
        }
        if free <= u64::from(reserve) {
            self.stats.user_stalls += 1;
            while self.free_lines.len() <= reserve as usize {
                if !self.gc_step()? {
                    break;
                }
            }
            return Ok(());
        }
        self.gc_credit += u64::from(high) - free;
        while self.gc_credit >= free {
            self.gc_credit -= free;
            if !self.gc_step()? {
                self.gc_credit = 0;
                break;
            }
        }
        Ok(())
    }

    /// Moves one valid page of the victim line (choosing a victim first if
    /// none is under way), or finishes a victim with none left. `false`
    /// when there is nothing to reclaim.
    fn gc_step(&mut self) -> Result<bool, PblkError> {
        let mut collecting = match self.collecting {
            Some(collecting) => collecting,
            None => {
                let log = self.log_state();
                let Some(line) = self.config.victim.select(&self.lines, &self.layout, self.stats.lines_closed, log)
                else {
                    return Ok(false);
                };
                self.lines[line as usize].state = LineState::Collecting;
                Collecting { line, next: self.layout.smeta_pages }
            }
        };
        let base = collecting.line * self.layout.line_pages;
        self.in_gc = true;
        let mut result = Ok(());
        while self.lines[collecting.line as usize].valid > 0 && collecting.next < self.layout.data_end() {
            let index = collecting.next;
            collecting.next += 1;
            let lpn = self.lines[collecting.line as usize].p2l[index as usize];
            if lpn != NONE && self.l2p[lpn as usize] == base + index {
                result = self.relocate(collecting.line, base + index, lpn);
                break;
            }
        }
        self.in_gc = false;
        result?;
        if self.lines[collecting.line as usize].valid == 0 {
            self.collecting = None;
            self.release_line(collecting.line);
        } else {
            self.collecting = Some(collecting);
        }
        Ok(true)
    }

    /// The log class's writes and live length, for log-aware victims.
    fn log_state(&self) -> Option<LogClass> {
        let class = self.log_class?;
        let live = self
            .lines
            .iter()
            .filter(|line| line.class == class && !line.is_mixed())
            .map(|line| u64::from(line.valid))
            .sum();
        Some(LogClass { class, written: self.stats.class_pages[class.0 as usize], live })
    }

    /// Reads one valid page of a victim and rewrites it through the buffer
    /// into the open line of its class.
    fn relocate(&mut self, victim: u32, address: u32, lpn: u32) -> Result<(), PblkError> {
        self.read_flash(address)?;
        verify!(self.lines[victim as usize].valid > 0, "GC moves a page out of empty line {victim}");
        self.lines[victim as usize].valid -= 1;
        let label = self.labels[lpn as usize];
        self.counters.gc_page_copies += 1;
        self.stats.class_gc_copies[label.0 as usize] += 1;
        let queue = self.queue_of(label);
        let slot = self.buffer.push(queue, Entry { lpn, label });
        self.l2p[lpn as usize] = BUFFERED | slot;
        self.drain(queue, false)
    }

    /// A reclaimed line goes back on the free list with its chunks still to reset.
    fn release_line(&mut self, line_id: u32) {
        for pu in 0..self.layout.pus {
            let index = self.chunk_index(line_id, pu);
            self.unreset[index] = true;
        }
        let line = &mut self.lines[line_id as usize];
        // Reclaimed (its chunks to be reset) only once nothing valid is left in it.
        verify!(line.valid == 0, "line {line_id} reclaimed with {} valid pages", line.valid);
        line.state = LineState::Free;
        line.labels = 0;
        self.free_lines.push_back(line_id);
        self.stats.gc_lines += 1;
    }

    fn reset_chunk(&mut self, line_id: u32, pu: u32) -> Result<(), PblkError> {
        self.device.reset(ChunkAddr { pu: UnitId(pu), chunk: line_id })?;
        self.recorder.record(FlashOpKind::Erase, UnitId(pu), true);
        self.counters.erases += 1;
        Ok(())
    }

    /// Resets the chunk on `pu` of the free line opened soonest that still
    /// needs it. `false` when none does.
    fn reset_next_chunk(&mut self, pu: u32) -> Result<bool, PblkError> {
        let Some(line_id) = self.free_lines.iter().copied().find(|&line| self.unreset[self.chunk_index(line, pu)])
        else {
            return Ok(false);
        };
        let index = self.chunk_index(line_id, pu);
        self.unreset[index] = false;
        self.reset_chunk(line_id, pu)?;
        self.erased_free[pu as usize] += 1;
        self.stats.background_resets += 1;
        Ok(true)
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
        self.l2p.capacity() * 4
            + self.labels.capacity()
            + line_maps
            + self.buffer.slots.capacity() * 8
            + self.unreset.capacity()
            + self.erased_free.capacity() * 4
    }

    fn count_request(&mut self) {
        Pblk::count_request(self);
    }

    /// The stream is the classifier's class.
    fn write(&mut self, lpn: Lpn, stream: StreamId) -> Result<(), FtlError> {
        let classes = self.stats.class_pages.len();
        if stream.index() >= classes {
            // At most CLASSES_MAX classes.
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

    /// Every PU holds one chunk of each line: its free chunks are the free
    /// lines whose chunk there is erased.
    fn free_blocks(&self, unit: UnitId) -> u32 {
        self.erased_free.get(unit.index()).copied().unwrap_or(0)
    }

    /// One background step on the PU: reset the chunk of the next free
    /// line still holding reclaimed data. GC's copies are not done here:
    /// they go through the write buffer at the rate limiter's pace.
    fn collect_one(&mut self, unit: UnitId) -> Result<bool, FtlError> {
        if unit.0 >= self.layout.pus {
            return Ok(false);
        }
        Ok(self.reset_next_chunk(unit.0)?)
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

    fn check_invariants(&self) -> Result<(), crate::ftl::InvariantError> {
        self.check_pblk()
    }
}

#[cfg(test)]
mod tests;
