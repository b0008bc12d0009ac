//! Which cached heaps were used last, and their sizes: the eviction order of
//! both heap caches (the directory and the memory one).

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use super::HeapKey;
use crate::tenant::Tenant;

/// A cached heap: the same key in two tenants is two entries, so one
/// tenant's cache never answers another's read.
pub(super) type Slot = (Tenant, HeapKey);

/// Entries (heaps by default) with a value and a size each, evicted least
/// recently used first.
#[derive(Debug)]
pub(super) struct ByteLru<V, K = Slot> {
    tick: u64,
    total: u64,
    entries: HashMap<K, Entry<V>>,
    /// Use tick → key: the first entry is the least recently used.
    by_use: BTreeMap<u64, K>,
}

#[derive(Debug)]
struct Entry<V> {
    value: V,
    size: u64,
    used: u64,
}

impl<V, K> Default for ByteLru<V, K> {
    fn default() -> Self {
        Self {
            tick: 0,
            total: 0,
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
        }
    }
}

impl<V, K: Clone + Eq + Hash> ByteLru<V, K> {
    /// Sum of the sizes held.
    pub(super) fn total(&self) -> u64 {
        self.total
    }

    /// The value of `key`, which becomes the most recently used.
    pub(super) fn get(&mut self, key: &K) -> Option<&V> {
        self.tick += 1;
        let entry = self.entries.get_mut(key)?;
        self.by_use.remove(&entry.used);
        entry.used = self.tick;
        self.by_use.insert(self.tick, key.clone());
        Some(&entry.value)
    }

    /// Holds `value` as the most recently used, replacing what `key` held.
    pub(super) fn insert(&mut self, key: &K, value: V, size: u64) {
        self.remove(key);
        self.tick += 1;
        self.total += size;
        self.by_use.insert(self.tick, key.clone());
        self.entries.insert(
            key.clone(),
            Entry {
                value,
                size,
                used: self.tick,
            },
        );
    }

    pub(super) fn remove(&mut self, key: &K) -> Option<V> {
        let entry = self.entries.remove(key)?;
        self.by_use.remove(&entry.used);
        self.total -= entry.size;
        Some(entry.value)
    }

    /// Removes the least recently used entries other than `keep` until the
    /// sizes fit `max_bytes`, and returns their keys.
    pub(super) fn evict_to(&mut self, max_bytes: u64, keep: &K) -> Vec<K> {
        let mut evicted = Vec::new();
        while self.total > max_bytes {
            let Some(oldest) = self.by_use.values().find(|key| *key != keep).cloned() else {
                break;
            };
            self.remove(&oldest);
            evicted.push(oldest);
        }
        evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: char) -> Slot {
        (
            Tenant::anonymous(),
            HeapKey::parse(&c.to_string().repeat(64)).unwrap(),
        )
    }

    #[test]
    fn evicts_the_least_recently_used_first_and_never_the_kept_one() {
        let mut lru = ByteLru::default();
        lru.insert(&key('a'), 'a', 10);
        lru.insert(&key('b'), 'b', 10);
        lru.insert(&key('c'), 'c', 10);
        assert_eq!(lru.get(&key('a')), Some(&'a'));
        // Oldest first: b, c, a. b is kept, so c and a go; b then stays
        // even under a bound it alone exceeds.
        assert_eq!(lru.evict_to(15, &key('b')), vec![key('c'), key('a')]);
        assert_eq!(lru.total(), 10);
        assert_eq!(lru.evict_to(5, &key('b')), Vec::<Slot>::new());
        assert_eq!(lru.total(), 10);
    }

    #[test]
    fn replacing_an_entry_counts_its_size_once() {
        let mut lru = ByteLru::default();
        lru.insert(&key('a'), 1, 10);
        lru.insert(&key('a'), 2, 30);
        assert_eq!(lru.total(), 30);
        assert_eq!(lru.remove(&key('a')), Some(2));
        assert_eq!(lru.total(), 0);
        assert_eq!(lru.get(&key('a')), None);
    }
}
