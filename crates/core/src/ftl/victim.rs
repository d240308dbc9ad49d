//! Garbage-collection victim selection. Each policy keeps its own index of the
//! sealed (full, not open) blocks of every parallel unit, updated as pages are
//! invalidated, so choosing a victim never scans the whole device for the
//! policies where that matters (greedy, FIFO, random, d-choices).

use crate::units::{BlockId, UnitId};
use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

const NONE: u32 = u32::MAX;

/// Which sealed block garbage collection reclaims next (`ftl.gc_policy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VictimPolicy {
    /// Fewest valid pages first.
    #[default]
    Greedy,
    /// LFS cost-benefit (Rosenblum & Ousterhout 1992): maximise
    /// (1 − u) · age / (1 + u), u the valid fraction, age the time since the
    /// block was sealed (its youngest data).
    CostBenefit,
    /// Oldest sealed block first (a circular log).
    Fifo,
    /// A uniformly random sealed block.
    Random,
    /// The block with fewest valid pages among `ftl.d_choices` random sealed
    /// blocks (Van Houdt 2013).
    DChoices,
}

/// What the index needs to know about the blocks of the FTL when it chooses.
pub struct BlockView<'a> {
    pub valid: &'a [u32],
    pub sealed_at: &'a [u64],
    pub now: u64,
    pub pages_per_block: u32,
}

/// Per-unit victim index. A block is in the index from the moment it is sealed
/// until it is selected.
#[derive(Debug, Clone)]
pub enum VictimIndex {
    Greedy(ValidBuckets),
    Fifo(Vec<VecDeque<u32>>),
    Sampled { members: SealedSets, policy: VictimPolicy, d: u32 },
}

impl VictimIndex {
    pub fn new(policy: VictimPolicy, d: u32, units: u32, blocks: u32, pages_per_block: u32) -> Self {
        match policy {
            VictimPolicy::Greedy => Self::Greedy(ValidBuckets::new(units, blocks, pages_per_block)),
            VictimPolicy::Fifo => Self::Fifo(vec![VecDeque::new(); units as usize]),
            VictimPolicy::CostBenefit | VictimPolicy::Random | VictimPolicy::DChoices => {
                Self::Sampled { members: SealedSets::new(units, blocks), policy, d }
            }
        }
    }

    pub fn on_sealed(&mut self, unit: UnitId, block: BlockId, valid: u32) {
        match self {
            Self::Greedy(buckets) => buckets.insert(unit, block, valid),
            Self::Fifo(queues) => queues[unit.index()].push_back(block.0),
            Self::Sampled { members, .. } => members.insert(unit, block),
        }
    }

    /// A page of sealed `block` was invalidated; it now holds `valid` valid pages.
    #[inline]
    pub fn on_invalidated(&mut self, unit: UnitId, block: BlockId, valid: u32) {
        if let Self::Greedy(buckets) = self {
            buckets.remove(unit, block, valid + 1);
            buckets.insert(unit, block, valid);
        }
    }

    /// Hint: a page of `block` will be invalidated soon.
    #[inline]
    pub fn prefetch(&self, block: usize) {
        if let Self::Greedy(buckets) = self {
            super::prefetch::prefetch(&buckets.links, block);
        }
    }

    /// Removes and returns the next victim of `unit`, or `None` when the unit
    /// has no sealed block.
    pub fn select(&mut self, unit: UnitId, view: &BlockView<'_>, rng: &mut Xoshiro256PlusPlus) -> Option<BlockId> {
        match self {
            Self::Greedy(buckets) => buckets.pop_min(unit),
            Self::Fifo(queues) => queues[unit.index()].pop_front().map(BlockId),
            Self::Sampled { members, policy, d } => {
                let chosen = match policy {
                    VictimPolicy::Random => members.random(unit, rng),
                    VictimPolicy::DChoices => members.best_of_random(unit, *d, view, rng),
                    _ => members.best_cost_benefit(unit, view),
                }?;
                members.remove(unit, chosen);
                Some(chosen)
            }
        }
    }

    pub fn memory_bytes(&self) -> usize {
        match self {
            Self::Greedy(buckets) => buckets.memory_bytes(),
            Self::Fifo(queues) => queues.iter().map(|q| q.capacity() * 4).sum(),
            Self::Sampled { members, .. } => members.memory_bytes(),
        }
    }
}

/// Intrusive doubly-linked lists of sealed blocks, one per (unit, valid
/// count): greedy selection pops the lowest non-empty list, and an
/// invalidation moves a block one list down, both in O(1) per page. A
/// block's two links share one 8-byte entry, so moving it touches one
/// cache line of its own, not two.
#[derive(Debug, Clone)]
pub struct ValidBuckets {
    heads: Vec<u32>,
    links: Vec<Link>,
    buckets_per_unit: usize,
}

#[derive(Debug, Clone, Copy)]
struct Link {
    prev: u32,
    next: u32,
}

impl ValidBuckets {
    fn new(units: u32, blocks: u32, pages_per_block: u32) -> Self {
        let buckets_per_unit = pages_per_block as usize + 1;
        Self {
            heads: vec![NONE; units as usize * buckets_per_unit],
            links: vec![Link { prev: NONE, next: NONE }; blocks as usize],
            buckets_per_unit,
        }
    }

    #[inline]
    fn head_index(&self, unit: UnitId, valid: u32) -> usize {
        unit.index() * self.buckets_per_unit + valid as usize
    }

    #[inline]
    fn insert(&mut self, unit: UnitId, block: BlockId, valid: u32) {
        let head = self.head_index(unit, valid);
        let old_first = self.heads[head];
        self.links[block.index()] = Link { prev: NONE, next: old_first };
        if old_first != NONE {
            self.links[old_first as usize].prev = block.0;
        }
        self.heads[head] = block.0;
    }

    #[inline]
    fn remove(&mut self, unit: UnitId, block: BlockId, valid: u32) {
        let Link { prev: before, next: after } = self.links[block.index()];
        if before == NONE {
            let head = self.head_index(unit, valid);
            self.heads[head] = after;
        } else {
            self.links[before as usize].next = after;
        }
        if after != NONE {
            self.links[after as usize].prev = before;
        }
    }

    fn pop_min(&mut self, unit: UnitId) -> Option<BlockId> {
        let start = unit.index() * self.buckets_per_unit;
        let offset = first_occupied(&self.heads[start..start + self.buckets_per_unit])?;
        let block = BlockId(self.heads[start + offset]);
        #[allow(clippy::cast_possible_truncation)]
        self.remove(unit, block, offset as u32);
        Some(block)
    }

    fn memory_bytes(&self) -> usize {
        self.heads.capacity() * 4 + self.links.capacity() * std::mem::size_of::<Link>()
    }
}

/// The first list head of `heads` that is not empty. Greedy victims hold
/// most of a block's pages valid at steady state, so the scan passes over
/// most buckets: it tests them a chunk at a time (a chunk is all empty when
/// the AND of its heads is still `NONE`, all ones), which the compiler turns
/// into vector instructions.
#[inline]
fn first_occupied(heads: &[u32]) -> Option<usize> {
    const CHUNK: usize = 16;
    let mut skipped = 0;
    for chunk in heads.chunks(CHUNK) {
        if chunk.iter().fold(NONE, |all, &head| all & head) != NONE {
            return chunk.iter().position(|&head| head != NONE).map(|offset| skipped + offset);
        }
        skipped += chunk.len();
    }
    None
}

/// The sealed blocks of each unit as a dense array with O(1) insert, remove
/// and uniform sampling.
#[derive(Debug, Clone)]
pub struct SealedSets {
    members: Vec<Vec<u32>>,
    position: Vec<u32>,
}

impl SealedSets {
    fn new(units: u32, blocks: u32) -> Self {
        Self { members: vec![Vec::new(); units as usize], position: vec![NONE; blocks as usize] }
    }

    fn insert(&mut self, unit: UnitId, block: BlockId) {
        let set = &mut self.members[unit.index()];
        #[allow(clippy::cast_possible_truncation)]
        let slot = set.len() as u32;
        self.position[block.index()] = slot;
        set.push(block.0);
    }

    fn remove(&mut self, unit: UnitId, block: BlockId) {
        let set = &mut self.members[unit.index()];
        let slot = self.position[block.index()] as usize;
        set.swap_remove(slot);
        if let Some(&moved) = set.get(slot) {
            #[allow(clippy::cast_possible_truncation)]
            let slot = slot as u32;
            self.position[moved as usize] = slot;
        }
        self.position[block.index()] = NONE;
    }

    fn random(&self, unit: UnitId, rng: &mut Xoshiro256PlusPlus) -> Option<BlockId> {
        let set = &self.members[unit.index()];
        if set.is_empty() {
            return None;
        }
        Some(BlockId(set[rng.random_range(0..set.len())]))
    }

    fn best_of_random(
        &self,
        unit: UnitId,
        d: u32,
        view: &BlockView<'_>,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Option<BlockId> {
        let set = &self.members[unit.index()];
        if set.is_empty() {
            return None;
        }
        (0..d.max(1))
            .map(|_| set[rng.random_range(0..set.len())])
            .min_by_key(|&block| view.valid[block as usize])
            .map(BlockId)
    }

    fn best_cost_benefit(&self, unit: UnitId, view: &BlockView<'_>) -> Option<BlockId> {
        let score = |block: u32| {
            let utilization = f64::from(view.valid[block as usize]) / f64::from(view.pages_per_block);
            #[allow(clippy::cast_precision_loss)]
            let age = (view.now - view.sealed_at[block as usize]) as f64 + 1.0;
            (1.0 - utilization) * age / (1.0 + utilization)
        };
        self.members[unit.index()].iter().copied().max_by(|&a, &b| score(a).total_cmp(&score(b))).map(BlockId)
    }

    fn memory_bytes(&self) -> usize {
        self.position.capacity() * 4 + self.members.iter().map(|m| m.capacity() * 4).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_occupied_finds_the_lowest_list_in_any_chunk() {
        for len in [1, 15, 16, 17, 65, 257] {
            let mut heads = vec![NONE; len];
            assert_eq!(first_occupied(&heads), None);
            for first in (0..len).rev() {
                heads[first] = u32::try_from(first).expect("small");
                assert_eq!(first_occupied(&heads), Some(first), "{len} heads");
            }
        }
    }
}
