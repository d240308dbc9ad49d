//! WAO-GC's invariants, apart from the code they check: the shared page
//! maps and free lists, one open block and at most one victim per chip.

use super::{BlockState, WaoGcFtl, NONE};
use crate::ftl::check::{check_free_lists, check_open_blocks, check_sealed_full, Checker, PageMaps};
use crate::ftl::{Invariant, InvariantError};
use crate::units::UnitId;

impl WaoGcFtl {
    /// See [`crate::ftl::TranslationLayer::check_invariants`].
    pub(super) fn check_wao_gc(&self) -> Result<(), InvariantError> {
        let check = Checker("WAO-GC");
        PageMaps { l2p: &self.l2p, p2l: &self.p2l, valid: &self.valid }.check(check, &self.flash)?;
        let state = |block: usize| self.state[block];
        let free = self.chips.iter().map(|chip| &chip.free);
        check_free_lists(check, &self.flash, free, |block| state(block) == BlockState::Free)?;
        let points = (0u32..).zip(&self.chips).map(|(unit, chip)| (Some(UnitId(unit)), chip.open));
        check_open_blocks(check, &self.geometry, points, |block| state(block) == BlockState::Open)?;
        check_sealed_full(check, &self.flash, |block| matches!(state(block), BlockState::Sealed | BlockState::Victim))?;
        self.check_victims(check)
    }

    /// Each chip's victim is its own, in the victim state, and holds no
    /// live page behind the cursor (a full block is never programmed
    /// again, so what the cursor passed stays copied); no other block is a victim.
    fn check_victims(&self, check: Checker) -> Result<(), InvariantError> {
        let mut victims = 0;
        for (unit, chip) in (0u32..).zip(&self.chips) {
            let Some((victim, cursor)) = chip.victim else { continue };
            victims += 1;
            let own = self.geometry.unit_of_block(victim) == UnitId(unit);
            check.ensure(own && self.state[victim.index()] == BlockState::Victim, Invariant::Victims, || {
                format!("chip {unit}'s victim {} is not a victim block of its own", victim.0)
            })?;
            let behind = (0..cursor.min(self.geometry.pages_per_block))
                .find(|&page| self.p2l[self.geometry.page_address(victim, page).index()] != NONE);
            check.ensure(behind.is_none(), Invariant::Victims, || {
                format!("chip {unit}'s victim {} has a live page {behind:?} behind its cursor {cursor}", victim.0)
            })?;
        }
        let in_state = self.state.iter().filter(|&&state| state == BlockState::Victim).count();
        check.ensure(in_state == victims, Invariant::Victims, || {
            format!("{in_state} blocks in the victim state but {victims} chips collecting")
        })?;
        Ok(())
    }
}
