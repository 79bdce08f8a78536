//! Bloom filters over keys that are already uniformly random (keyed hashes,
//! random ids), so placing a key needs no hashing: the bit layout the index
//! runs on disk use, and a filter that grows with what it is given.
//!
//! It answers "certainly never inserted" or "maybe": never a false "never".
//! A merchant actor keeps one per kind of idempotency key, so a key that is
//! new (nearly every key) is known new without asking storage, at about two
//! bytes a key where an exact set of hashes costs thirty.

/// Keys the first stage holds before a second one is added.
const FIRST_STAGE_KEYS: usize = 128;
/// Bits per key of the first stage; each later stage has one more, so
/// the false positives of all stages together stay near 2%: stage `i`,
/// once full, lets through about `0.6185^(10 + i)` of the keys it never
/// saw, and those sum to `0.0082 / (1 - 0.6185)`.
const FIRST_STAGE_BITS_PER_KEY: usize = 10;

/// A growing filter: stages of doubling size, the newest taking the inserts.
#[derive(Default)]
pub struct GrowingBloom {
    stages: Vec<Stage>,
}

/// One fixed-size Bloom filter.
struct Stage {
    words: Box<[u64]>,
    probes: u64,
    capacity: usize,
    len: usize,
}

impl Stage {
    fn new(capacity: usize, bits_per_key: usize) -> Stage {
        // The number of probes that minimises false positives: bits per key × ln 2.
        let probes = (bits_per_key as f64 * std::f64::consts::LN_2).round() as u64;
        Stage {
            words: vec![0; (capacity * bits_per_key).div_ceil(64)].into_boxed_slice(),
            probes,
            capacity,
            len: 0,
        }
    }

    fn insert(&mut self, hash: u128) {
        set(&mut self.words, hash as u64, self.probes);
        self.len += 1;
    }

    fn may_contain(&self, hash: u128) -> bool {
        holds(&self.words, hash as u64, self.probes)
    }
}

/// Sets the `probes` bits of a key whose 8 random bytes are `random`.
pub fn set(words: &mut [u64], random: u64, probes: u64) {
    for bit in probe_bits(random, words.len(), probes) {
        words[bit / 64] |= 1 << (bit % 64);
    }
}

/// False only when the key whose 8 random bytes are `random` was never set.
pub fn holds(words: &[u64], random: u64, probes: u64) -> bool {
    probe_bits(random, words.len(), probes).all(|bit| words[bit / 64] & (1 << (bit % 64)) != 0)
}

/// The bits of a key in a filter of `words` words: probe `i` is
/// `(h1 + i * h2) % bits`, `h1` and `h2` the halves of `random` (`h2`
/// odd), the layout every index run on disk was written with. Computed by
/// stepping, with two divisions instead of one per probe: `h1` and `h2`
/// are below 2^32, so `h1 + i * h2` never wraps, and each step stays below
/// `2 * bits`.
pub fn probe_bits(random: u64, words: usize, probes: u64) -> impl Iterator<Item = usize> {
    let (h1, h2) = (random & 0xffff_ffff, (random >> 32) | 1);
    let bits = (words * 64) as u64;
    let step = h2 % bits;
    let mut bit = h1 % bits;
    (0..probes).map(move |_| {
        let probe = bit;
        bit += step;
        if bit >= bits {
            bit -= bits;
        }
        probe as usize
    })
}

impl GrowingBloom {
    /// An empty filter: it holds no memory until the first insert.
    pub fn new() -> GrowingBloom {
        GrowingBloom::default()
    }

    /// False only when `hash` was certainly never inserted.
    pub fn may_contain(&self, hash: u128) -> bool {
        self.stages.iter().any(|stage| stage.may_contain(hash))
    }

    /// Adds `hash`.
    pub fn insert(&mut self, hash: u128) {
        let full = self.stages.last().is_none_or(|stage| stage.len >= stage.capacity);
        if full {
            let capacity = self.stages.last().map_or(FIRST_STAGE_KEYS, |stage| stage.capacity * 2);
            let bits_per_key = FIRST_STAGE_BITS_PER_KEY + self.stages.len();
            self.stages.push(Stage::new(capacity, bits_per_key));
        }
        self.stages.last_mut().expect("a stage was just ensured").insert(hash);
    }

    /// Keys inserted (a key inserted twice counts twice).
    pub fn len(&self) -> usize {
        self.stages.iter().map(|stage| stage.len).sum()
    }

    /// Bytes of filter held.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.stages.iter().map(|stage| stage.words.len() * 8).sum()
    }
}

impl FromIterator<u128> for GrowingBloom {
    fn from_iter<I: IntoIterator<Item = u128>>(iter: I) -> GrowingBloom {
        let mut filter = GrowingBloom::new();
        for hash in iter {
            filter.insert(hash);
        }
        filter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Uniformly random 128-bit values, reproducible (splitmix64, twice).
    fn hashes(seed: u64, n: usize) -> Vec<u128> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        (0..n)
            .map(|_| (u128::from(next()) << 64) | u128::from(next()))
            .collect()
    }

    #[test]
    fn every_inserted_key_is_found_at_every_size() {
        for n in [0, 1, 127, 128, 129, 1_000, 50_000] {
            let inserted = hashes(n as u64, n);
            let filter: GrowingBloom = inserted.iter().copied().collect();
            assert_eq!(filter.len(), n);
            assert!(inserted.iter().all(|hash| filter.may_contain(*hash)), "{n} keys");
        }
    }

    #[test]
    fn keys_never_inserted_are_mostly_refused_at_two_or_three_bytes_a_key() {
        let filter: GrowingBloom = hashes(1, 200_000).into_iter().collect();
        let strangers = hashes(2, 100_000);
        let let_through = strangers.iter().filter(|hash| filter.may_contain(**hash)).count();
        assert!(let_through < 3_000, "{let_through} of 100,000 let through");
        let bytes_a_key = filter.bytes() as f64 / 200_000.0;
        assert!(bytes_a_key < 3.5, "{bytes_a_key:.2} bytes a key");
    }

    #[test]
    fn an_empty_filter_refuses_everything_and_holds_nothing() {
        let filter = GrowingBloom::new();
        assert_eq!(filter.len(), 0);
        assert_eq!(filter.bytes(), 0);
        assert!(hashes(3, 1_000).iter().all(|hash| !filter.may_contain(*hash)));
    }
}
