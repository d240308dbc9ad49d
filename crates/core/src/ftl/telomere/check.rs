//! Telomere's invariants, apart from the code they check: live data sit in
//! programmed pages of owned blocks that expire no earlier than they do,
//! partitions hold what they own within budget on distinct chips, and every
//! sealed block waits in the expiry queue once.

use super::{BlockState, TelomereFtl, NONE};
use crate::ftl::check::{check_free_lists, check_open_blocks, check_sealed_full, Checker};
use crate::ftl::{Invariant, InvariantError};
use crate::units::{BlockId, Ppn, UnitId};
use std::cmp::Reverse;

impl TelomereFtl {
    /// See [`crate::ftl::TranslationLayer::check_invariants`].
    pub(super) fn check_telomere(&self) -> Result<(), InvariantError> {
        let check = Checker("Telomere");
        self.check_live_data(check)?;
        let state = |block: usize| self.state[block];
        check_free_lists(check, &self.flash, self.free.iter(), |block| state(block) == BlockState::Free)?;
        let owned_when_used =
            (0..self.state.len()).find(|&block| (state(block) == BlockState::Free) != (self.owner[block] == NONE));
        check.ensure(owned_when_used.is_none(), Invariant::BlockAccounting, || {
            format!("block {owned_when_used:?}: free and owned, or in use and unowned")
        })?;
        let points = self.partitions.iter().flat_map(|p| p.open.iter().map(|&block| (None, block)));
        check_open_blocks(check, &self.geometry, points, |block| state(block) == BlockState::Open)?;
        check_sealed_full(check, &self.flash, |block| state(block) == BlockState::Sealed)?;
        self.check_partitions(check)?;
        self.check_expiry_queue(check)
    }

    /// A logical page whose data are live maps to a programmed page of a
    /// block in use that expires no earlier than the data.
    fn check_live_data(&self, check: Checker) -> Result<(), InvariantError> {
        for (lpn, &ppn) in self.l2p.iter().enumerate() {
            if ppn == NONE || self.lpn_expires[lpn] <= self.now.0 {
                continue;
            }
            let block = self.geometry.block_of_page(Ppn(ppn)).index();
            let in_use = self.state[block] != BlockState::Free && self.flash.read(Ppn(ppn)).is_ok();
            check.ensure(in_use, Invariant::MappedProgrammed, || {
                format!("live logical page {lpn} maps to page {ppn}, not programmed in a block in use")
            })?;
            check.ensure(self.block_expires[block] >= self.lpn_expires[lpn], Invariant::Placement, || {
                format!("block {block} expires at {} ns, before its logical page {lpn}", self.block_expires[block])
            })?;
        }
        Ok(())
    }

    /// Telomere's placement rules: a partition holds exactly the blocks it
    /// owns, no more than admission control reserved, and the open blocks
    /// of its stripe are on distinct chips (Section 6.3).
    fn check_partitions(&self, check: Checker) -> Result<(), InvariantError> {
        for (index, partition) in self.partitions.iter().enumerate() {
            let owned = self.owner.iter().filter(|&&owner| owner as usize == index).count();
            check.ensure(
                partition.held as usize == owned && partition.held <= partition.budget,
                Invariant::Placement,
                || {
                    format!(
                        "partition {index} holds {} blocks, owns {owned}, may hold {}",
                        partition.held, partition.budget
                    )
                },
            )?;
            let mut units: Vec<UnitId> = Vec::with_capacity(partition.open.len());
            for &block in partition.open.iter().filter(|&&block| block != NONE) {
                let unit = self.geometry.unit_of_block(BlockId(block));
                let owner = self.owner[block as usize] as usize;
                check.ensure(owner == index && !units.contains(&unit), Invariant::Placement, || {
                    format!(
                        "partition {index}'s open block {block} (owner {owner}) shares chip {} with its stripe",
                        unit.0
                    )
                })?;
                units.push(unit);
            }
        }
        Ok(())
    }

    /// Every sealed block is in the expiry queue once, under its own expiry.
    fn check_expiry_queue(&self, check: Checker) -> Result<(), InvariantError> {
        let mut queued = vec![false; self.state.len()];
        for &Reverse((expires, block)) in &self.sealed {
            let index = block as usize;
            let once = !std::mem::replace(&mut queued[index], true);
            let sealed = self.state[index] == BlockState::Sealed && self.block_expires[index] == expires;
            check.ensure(once && sealed, Invariant::BlockAccounting, || {
                format!("the expiry queue holds block {block} at {expires} ns (once: {once}, sealed with that expiry: {sealed})")
            })?;
        }
        let sealed = self.state.iter().filter(|&&state| state == BlockState::Sealed).count();
        check.ensure(sealed == self.sealed.len(), Invariant::BlockAccounting, || {
            format!("{sealed} sealed blocks but {} in the expiry queue", self.sealed.len())
        })
    }
}
