//! pblk's invariants, apart from the code they check: the L2P table and the
//! lines' LBA lists agree, line valid counts, line states and the free
//! list, the chunks' write pointers, and the write buffer.

use super::line::{LineState, NONE};
use super::{Pblk, BUFFERED};
use crate::device::open_channel::ChunkAddr;
use crate::ftl::check::Checker;
use crate::ftl::{Invariant, InvariantError};
use crate::units::UnitId;

impl Pblk {
    /// See [`crate::ftl::TranslationLayer::check_invariants`].
    pub(super) fn check_pblk(&self) -> Result<(), InvariantError> {
        let check = Checker("pblk");
        self.check_forward_map(check)?;
        self.check_line_maps(check)?;
        self.check_line_states(check)?;
        self.check_chunks(check)?;
        self.check_buffer(check)
    }

    /// Every L2P entry on flash points at a written page of a line in use
    /// whose LBA list names the logical page back; every buffered one at a
    /// slot holding that page.
    fn check_forward_map(&self, check: Checker) -> Result<(), InvariantError> {
        let line_pages = self.layout.line_pages;
        for (lpn, &entry) in (0u32..).zip(&self.l2p) {
            if entry == NONE {
                continue;
            }
            if entry & BUFFERED != 0 {
                let slot = self.buffer.slots.get((entry & !BUFFERED) as usize).map(|slot| slot.lpn);
                check.ensure(slot == Some(lpn), Invariant::WriteBuffer, || {
                    format!("L2P[{lpn}] points at buffer slot {} holding {slot:?}", entry & !BUFFERED)
                })?;
                continue;
            }
            let (line, index) = ((entry / line_pages) as usize, entry % line_pages);
            let named = self.lines.get(line).map(|line| (line.p2l[index as usize], line.state, line.next));
            check.ensure(
                matches!(named, Some((back, state, next)) if back == lpn && state != LineState::Free && index < next),
                Invariant::MapsAgree,
                || format!("L2P[{lpn}] = line {line} page {index}, whose LBA list, state and cursor are {named:?}"),
            )?;
            let (pu, page) = self.layout.locate(index);
            let programmed = self.device.read(ChunkAddr { pu, chunk: entry / line_pages }, page).is_ok();
            check.ensure(programmed, Invariant::MappedProgrammed, || {
                format!("logical page {lpn} maps to unprogrammed line {line} page {index}")
            })?;
        }
        Ok(())
    }

    /// A line's valid count is the pages of its LBA list the L2P still
    /// points at; a free line has none.
    fn check_line_maps(&self, check: Checker) -> Result<(), InvariantError> {
        for (line_id, line) in (0u32..).zip(&self.lines) {
            let base = line_id * self.layout.line_pages;
            let live = (0u32..)
                .zip(&line.p2l)
                .filter(|&(index, &lpn)| lpn != NONE && self.l2p[lpn as usize] == base + index)
                .count();
            check.ensure(line.valid as usize == live, Invariant::ValidCounts, || {
                format!("line {line_id}: valid count {} but {live} live pages", line.valid)
            })?;
            check.ensure(line.state != LineState::Free || line.valid == 0, Invariant::BlockAccounting, || {
                format!("free line {line_id} has {} valid pages", line.valid)
            })?;
        }
        Ok(())
    }

    /// The free list holds exactly the free lines, once each; each queue's
    /// open line is open, of its class, and they are all the open lines;
    /// GC's victim is the one line collecting; a line's cursor is within
    /// its data region while open and at its end once closed; with
    /// separation no line mixes classes.
    fn check_line_states(&self, check: Checker) -> Result<(), InvariantError> {
        let count = |state| self.lines.iter().filter(|line| line.state == state).count();
        let mut listed = vec![false; self.lines.len()];
        for &line in &self.free_lines {
            let once = !std::mem::replace(&mut listed[line as usize], true);
            check.ensure(
                once && self.lines[line as usize].state == LineState::Free,
                Invariant::BlockAccounting,
                || {
                    format!(
                        "the free list holds line {line} (once: {once}, state {:?})",
                        self.lines[line as usize].state
                    )
                },
            )?;
        }
        check.ensure(count(LineState::Free) == self.free_lines.len(), Invariant::BlockAccounting, || {
            format!("{} free lines but {} on the free list", count(LineState::Free), self.free_lines.len())
        })?;
        for (queue, &line) in self.open.iter().enumerate() {
            let Some(line) = line else { continue };
            let open = &self.lines[line as usize];
            let cursor = (self.layout.smeta_pages..self.layout.data_end()).contains(&open.next);
            check.ensure(
                open.state == LineState::Open && open.class.0 as usize == queue && cursor,
                Invariant::OpenBlocks,
                || {
                    format!(
                        "queue {queue}'s open line {line} is {:?} of class {} at {}",
                        open.state, open.class.0, open.next
                    )
                },
            )?;
        }
        let open_points = self.open.iter().flatten().count();
        check.ensure(count(LineState::Open) == open_points, Invariant::OpenBlocks, || {
            format!("{} open lines but {open_points} queues with one", count(LineState::Open))
        })?;
        let closed_at_end = self
            .lines
            .iter()
            .filter(|line| matches!(line.state, LineState::Closed | LineState::Collecting))
            .all(|line| line.next == self.layout.line_pages);
        check.ensure(closed_at_end, Invariant::OpenBlocks, || "a closed line is not written to its end".to_string())?;
        let collecting = self.collecting.map(|collecting| collecting.line);
        let victims = self.lines.iter().filter(|line| line.state == LineState::Collecting).count();
        let victim_state = collecting.map(|line| self.lines[line as usize].state);
        check.ensure(
            victims == usize::from(collecting.is_some())
                && victim_state.is_none_or(|state| state == LineState::Collecting),
            Invariant::Victims,
            || format!("{victims} lines collecting, GC is on {collecting:?}"),
        )?;
        let mixed = self.lines.iter().position(|line| self.config.separate && line.is_mixed());
        check.ensure(mixed.is_none(), Invariant::OpenBlocks, || {
            format!("line {mixed:?} mixes classes despite pblk.separate")
        })
    }

    /// The chunks agree with the lines: a line in use has all its chunks
    /// reset and written up to its cursor; a free line's chunk is erased
    /// unless marked for reset, and the erased ones are what a PU reports free.
    fn check_chunks(&self, check: Checker) -> Result<(), InvariantError> {
        let (pus, ws_opt) = (self.layout.pus, self.layout.ws_opt);
        let mut erased_free = vec![0u32; pus as usize];
        for (line_id, line) in (0u32..).zip(&self.lines) {
            let units_written = line.next / ws_opt;
            for pu in 0..pus {
                let unreset = self.unreset[self.chunk_index(line_id, pu)];
                let info = self.device.chunk_info(ChunkAddr { pu: UnitId(pu), chunk: line_id });
                let pointer = info.map(|info| info.write_pointer).ok();
                let expected = if line.state == LineState::Free {
                    erased_free[pu as usize] += u32::from(!unreset);
                    if unreset {
                        continue;
                    }
                    0
                } else {
                    units_written.saturating_sub(pu).div_ceil(pus) * ws_opt
                };
                check.ensure(!(unreset && line.state != LineState::Free), Invariant::FreeErased, || {
                    format!("line {line_id} is in use with its chunk on PU {pu} still to reset")
                })?;
                check.ensure(pointer == Some(expected), Invariant::FreeErased, || {
                    format!("line {line_id}'s chunk on PU {pu} has write pointer {pointer:?}, not {expected}")
                })?;
            }
        }
        check.ensure(erased_free == self.erased_free, Invariant::BlockAccounting, || {
            format!("erased free chunks per PU are {erased_free:?}, counted {:?}", self.erased_free)
        })
    }

    /// Each slot of the buffer is free or on exactly one queue, and no queue
    /// holds a whole write unit between calls (it would have been drained).
    fn check_buffer(&self, check: Checker) -> Result<(), InvariantError> {
        let buffer = &self.buffer;
        let mut seen = vec![false; buffer.slots.len()];
        for &slot in buffer.free.iter().chain(buffer.queues.iter().flatten()) {
            let once = seen.get(slot as usize).is_some_and(|seen| !seen);
            check.ensure(once, Invariant::WriteBuffer, || format!("buffer slot {slot} is free or queued twice"))?;
            seen[slot as usize] = true;
        }
        check.ensure(seen.iter().all(|&seen| seen), Invariant::WriteBuffer, || {
            "a buffer slot is neither free nor queued".to_string()
        })?;
        let full = buffer.queues.iter().position(|queue| queue.len() >= self.layout.ws_opt as usize);
        check.ensure(full.is_none(), Invariant::WriteBuffer, || {
            format!("queue {full:?} holds a whole write unit between calls")
        })
    }
}
