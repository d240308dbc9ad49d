//! The controller's cached mapping table (DFTL-style, least recently used
//! out), the one model of it: the DFTL mode of the page FTL
//! (`ftl.discard = "dftl"`, `ftl.map_cache_fraction`) keeps its translation
//! pages here, and a host write, read or DISCARD whose page is not cached
//! pays for loading it. Delay-D (Section 3.2) issues its merged DISCARDs
//! sorted by start LBA so that consecutive commands find their mapping
//! pages cached; this is what makes that order measurable.

use std::collections::{BTreeMap, HashMap};

/// LRU set of mapping-page numbers with a fixed capacity: each cached page
/// has a last-use stamp, and the stamps in order give the eviction order, so
/// a lookup costs O(log capacity) however large the cache is.
#[derive(Debug, Clone)]
pub struct MapCache {
    capacity: usize,
    stamp_of: HashMap<u64, u64>,
    page_at: BTreeMap<u64, u64>,
    clock: u64,
}

impl MapCache {
    /// A cache of `capacity` mapping pages.
    pub fn new(capacity: u32) -> Self {
        Self { capacity: capacity as usize, stamp_of: HashMap::new(), page_at: BTreeMap::new(), clock: 0 }
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

    /// Whether the cache holds at most its capacity, each page once with one stamp.
    pub fn is_within_capacity(&self) -> bool {
        self.stamp_of.len() == self.page_at.len() && self.page_at.len() <= self.capacity
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
    fn least_recently_used_goes_first() {
        let mut cache = MapCache::new(2);
        assert!(!cache.access(0).cached);
        assert!(!cache.access(1).cached);
        assert_eq!(cache.access(0), Access { cached: true, evicted: None }, "page 0 is cached and now most recent");
        assert_eq!(
            cache.access(2),
            Access { cached: false, evicted: Some(1) },
            "evicts page 1, the least recently used"
        );
        assert!(cache.access(0).cached);
        assert!(!cache.contains(1), "page 1 was evicted");
        assert_eq!(cache.access(1), Access { cached: false, evicted: Some(2) });
    }
}
