//! Hash maps and sets split into shards by key, for indexes that grow with
//! history. A hash table doubles all at once: at half a million
//! disbursements one growth of the index held the journal's applier, and
//! with it every reply, for 270 ms. Split in `SHARDS`, each growth moves a
//! sixty-fourth of the entries, a few milliseconds. A small map stays one
//! table (64 near-empty ones per merchant would cost more than they save)
//! and splits once, when it reaches `SPLIT_AT` keys.

use foldhash::{HashMap, HashMapExt};
use std::hash::Hash;
use uuid::Uuid;

/// How many maps a sharded map is split into.
pub const SHARDS: usize = 64;

/// A key that picks its shard from bits that are already random (random
/// UUIDs, keyed 128-bit hashes), so no second hash is needed.
pub trait ShardKey {
    /// The shard, below `SHARDS`.
    fn shard(&self) -> usize;
}

impl ShardKey for Uuid {
    fn shard(&self) -> usize {
        (self.as_u128() % SHARDS as u128) as usize
    }
}

impl ShardKey for u128 {
    fn shard(&self) -> usize {
        (*self % SHARDS as u128) as usize
    }
}

/// Keys at which a one-table map splits into `SHARDS` (moving this many
/// entries once costs well under a millisecond).
pub const SPLIT_AT: usize = 8192;

/// A hash map in one table while small, in `SHARDS` tables once large.
pub struct ShardedMap<K, V> {
    shards: Vec<HashMap<K, V>>,
    len: usize,
}

impl<K, V> Default for ShardedMap<K, V> {
    fn default() -> Self {
        ShardedMap {
            shards: vec![HashMap::new()],
            len: 0,
        }
    }
}

impl<K: ShardKey + Hash + Eq, V> ShardedMap<K, V> {
    /// An empty map with room for `keys` keys: split already when that
    /// many would split it.
    pub fn with_capacity(keys: usize) -> Self {
        let shards = if keys >= SPLIT_AT {
            let each = keys.div_ceil(SHARDS);
            (0..SHARDS).map(|_| HashMap::with_capacity(each)).collect()
        } else {
            vec![HashMap::with_capacity(keys)]
        };
        ShardedMap { shards, len: 0 }
    }

    fn shard_of(&self, key: &K) -> usize {
        if self.shards.len() == 1 {
            0
        } else {
            key.shard()
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.shards[self.shard_of(key)].get(key)
    }

    /// True when `key` has a value.
    pub fn contains_key(&self, key: &K) -> bool {
        self.shards[self.shard_of(key)].contains_key(key)
    }

    /// Sets `key`'s value; returns the one it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if self.shards.len() == 1 && self.len >= SPLIT_AT {
            let single = std::mem::take(&mut self.shards[0]);
            self.shards = (0..SHARDS).map(|_| HashMap::new()).collect();
            for (key, value) in single {
                self.shards[key.shard()].insert(key, value);
            }
        }
        let shard = self.shard_of(&key);
        let replaced = self.shards[shard].insert(key, value);
        if replaced.is_none() {
            self.len += 1;
        }
        replaced
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let shard = self.shard_of(key);
        let removed = self.shards[shard].remove(key);
        if removed.is_some() {
            self.len -= 1;
        }
        removed
    }

    /// How many keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// How many keys fit before a shard grows, over all shards.
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.shards.iter().map(HashMap::capacity).sum()
    }

    /// True when there is no key.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every key, in no order.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.shards.iter().flat_map(|shard| shard.keys())
    }

    /// Every key and its value, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.shards.iter().flat_map(|shard| shard.iter())
    }
}

/// A hash set in `SHARDS` parts.
pub struct ShardedSet<K> {
    map: ShardedMap<K, ()>,
}

impl<K> Default for ShardedSet<K> {
    fn default() -> Self {
        ShardedSet {
            map: ShardedMap::default(),
        }
    }
}

impl<K: ShardKey + Hash + Eq> ShardedSet<K> {
    /// True when `key` is in.
    #[cfg(test)]
    pub fn contains(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }

    /// Adds `key`; true when it was not in.
    pub fn insert(&mut self, key: K) -> bool {
        self.map.insert(key, ()).is_none()
    }

    /// Removes `key`; true when it was in.
    pub fn remove(&mut self, key: &K) -> bool {
        self.map.remove(key).is_some()
    }

    /// How many keys.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Every key, in no order.
    pub fn iter(&self) -> impl Iterator<Item = &K> {
        self.map.keys()
    }
}

impl<K: ShardKey + Hash + Eq> FromIterator<K> for ShardedSet<K> {
    fn from_iter<I: IntoIterator<Item = K>>(keys: I) -> Self {
        let mut set = ShardedSet::default();
        for key in keys {
            set.insert(key);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sharded_map_and_set_keep_what_a_plain_one_would() {
        let mut map: ShardedMap<Uuid, usize> = ShardedMap::default();
        let mut set: ShardedSet<u128> = ShardedSet::default();
        // Past SPLIT_AT, so the map splits on the way.
        let ids: Vec<Uuid> = (0..SPLIT_AT + 5000).map(|_| Uuid::new_v4()).collect();
        for (n, id) in ids.iter().enumerate() {
            assert_eq!(map.insert(*id, n), None);
            assert!(set.insert(id.as_u128()));
        }
        assert!(!set.insert(ids[0].as_u128()), "already in");
        assert_eq!(map.insert(ids[0], 7), Some(0));
        let all = ids.len();
        assert_eq!((map.len(), set.len()), (all, all));
        for (n, id) in ids.iter().enumerate().skip(1) {
            assert_eq!(map.get(id), Some(&n));
            assert!(set.contains(&id.as_u128()));
        }
        for id in &ids[..2500] {
            assert!(map.remove(id).is_some());
            assert!(set.remove(&id.as_u128()));
            assert!(map.remove(id).is_none(), "removed once");
        }
        assert_eq!((map.len(), set.len()), (all - 2500, all - 2500));
        assert!(!map.contains_key(&ids[0]) && map.contains_key(&ids[all - 1]));
        let mut left: Vec<u128> = set.iter().copied().collect();
        left.sort_unstable();
        let mut expected: Vec<u128> = ids[2500..].iter().map(|id| id.as_u128()).collect();
        expected.sort_unstable();
        assert_eq!(left, expected);
        // Split, and random keys use every shard.
        assert_eq!(map.shards.len(), SHARDS);
        assert!(map.shards.iter().all(|shard| !shard.is_empty()));
        let small: ShardedSet<u128> = (0..100u128).collect();
        assert_eq!((small.map.shards.len(), small.len()), (1, 100));
        assert!((0..100u128).all(|key| small.contains(&key)));
    }

    /// A map made for many keys starts split, with room in every shard, and
    /// keeps what it is given as one grown key by key does; one made for few
    /// starts as one table.
    #[test]
    fn a_map_made_with_room_starts_split_when_that_many_keys_would_split_it() {
        let mut big: ShardedMap<Uuid, usize> = ShardedMap::with_capacity(SPLIT_AT * 2);
        assert_eq!(big.shards.len(), SHARDS);
        assert!(big.shards.iter().all(|shard| shard.capacity() >= SPLIT_AT * 2 / SHARDS));
        let ids: Vec<Uuid> = (0..1000).map(|_| Uuid::new_v4()).collect();
        for (n, id) in ids.iter().enumerate() {
            assert_eq!(big.insert(*id, n), None);
        }
        assert_eq!(big.len(), 1000);
        assert!(ids.iter().enumerate().all(|(n, id)| big.get(id) == Some(&n)));
        let small: ShardedMap<Uuid, usize> = ShardedMap::with_capacity(SPLIT_AT - 1);
        assert_eq!(small.shards.len(), 1);
        assert!(small.shards[0].capacity() >= SPLIT_AT - 1);
    }
}
