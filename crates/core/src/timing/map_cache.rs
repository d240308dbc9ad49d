//! The controller's cached mapping table as a DISCARD sees it (DFTL-style,
//! least recently used out): a DISCARD that touches a mapping page not in the
//! cache pays for loading it. Delay-D (Section 3.2) issues its merged DISCARDs
//! sorted by start LBA so that consecutive commands find their mapping pages
//! cached; this is what makes that order measurable.

use std::collections::{BTreeMap, HashMap};

/// LRU set of mapping-page numbers with a fixed capacity: each cached page
/// has a last-use stamp, and the stamps in order give the eviction order, so
/// a lookup costs O(log capacity) however large the cache is.
#[derive(Debug, Clone)]
pub struct MapCache {
    capacity: usize,
    entries_per_page: u64,
    stamp_of: HashMap<u64, u64>,
    page_at: BTreeMap<u64, u64>,
    clock: u64,
}

impl MapCache {
    /// `capacity` mapping pages of `entries_per_page` logical pages each;
    /// capacity 0 models a map held wholly in RAM (nothing ever misses).
    pub fn new(capacity: u32, entries_per_page: u32) -> Self {
        Self {
            capacity: capacity as usize,
            entries_per_page: u64::from(entries_per_page.max(1)),
            stamp_of: HashMap::new(),
            page_at: BTreeMap::new(),
            clock: 0,
        }
    }

    /// Touches the mapping pages of logical pages `first..first + pages` in
    /// order and returns how many were not cached.
    pub fn touch(&mut self, first: u64, pages: u64) -> u64 {
        if self.capacity == 0 || pages == 0 {
            return 0;
        }
        let first_map = first / self.entries_per_page;
        let last_map = (first + pages - 1) / self.entries_per_page;
        (first_map..=last_map).map(|map_page| u64::from(!self.access(map_page).cached)).sum()
    }

    /// Uses mapping page `map_page`: whether it was cached, and the page
    /// evicted to make room for it (the DFTL mode writes it back if dirty).
    pub fn access(&mut self, map_page: u64) -> Access {
        self.clock += 1;
        let cached = match self.stamp_of.insert(map_page, self.clock) {
            Some(stamp) => {
                self.page_at.remove(&stamp);
                true
            }
            None => false,
        };
        self.page_at.insert(self.clock, map_page);
        let mut evicted = None;
        if self.page_at.len() > self.capacity {
            if let Some((_, page)) = self.page_at.pop_first() {
                self.stamp_of.remove(&page);
                evicted = Some(page);
            }
        }
        Access { cached, evicted }
    }

    /// Is `map_page` cached? (Does not count as a use.)
    pub fn contains(&self, map_page: u64) -> bool {
        self.stamp_of.contains_key(&map_page)
    }
}

/// What one [`MapCache::access`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub cached: bool,
    pub evicted: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_ranges_hit_where_scattered_ones_miss() {
        // 2 cached mapping pages of 1,024 entries.
        let mut sorted = MapCache::new(2, 1024);
        let misses: u64 = (0..8).map(|i| sorted.touch(i * 100, 100)).sum();
        assert_eq!(misses, 1, "eight ranges inside the first mapping page");
        let mut scattered = MapCache::new(2, 1024);
        let misses: u64 = [0, 5, 1, 6, 2, 7, 3, 4].iter().map(|&page| scattered.touch(page * 1024, 10)).sum();
        assert_eq!(misses, 8, "every range in a mapping page evicted since");
    }

    #[test]
    fn least_recently_used_goes_first_and_zero_capacity_never_misses() {
        let mut cache = MapCache::new(2, 10);
        assert_eq!(cache.touch(0, 1), 1);
        assert_eq!(cache.touch(10, 1), 1);
        assert_eq!(cache.touch(0, 1), 0, "page 0 is cached and now most recent");
        assert_eq!(cache.touch(20, 1), 1, "evicts page 1, the least recently used");
        assert_eq!(cache.touch(0, 1), 0);
        assert_eq!(cache.touch(10, 1), 1, "page 1 was evicted");
        assert_eq!(cache.touch(5, 30), 2, "mapping pages 0 and 1 are cached, 2 and 3 are not");
        let mut whole_map = MapCache::new(0, 10);
        assert_eq!(whole_map.touch(0, 1_000_000), 0);
    }
}
