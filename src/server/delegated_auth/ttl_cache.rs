//! The bounded, expiring store behind [`super::DelegatedAuth`]: review
//! answers by a SHA-256 key, each kept for its own time to live. Time is a
//! parameter so tests step it instead of sleeping.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// A SHA-256 digest: of the token, or of the whole access question.
pub(super) type Key = [u8; 32];

pub(super) struct TtlCache<V> {
    capacity: usize,
    /// key → (expires at, answer)
    entries: Mutex<HashMap<Key, (Instant, V)>>,
}

impl<V: Clone> TtlCache<V> {
    pub(super) fn new(capacity: usize) -> Self {
        TtlCache {
            capacity,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The answer stored for `key`, unless it expired by `now`.
    pub(super) fn get(&self, key: &Key, now: Instant) -> Option<V> {
        let entries = self.lock();
        let (expires, value) = entries.get(key)?;
        (now < *expires).then(|| value.clone())
    }

    /// Store `value` for `ttl` from `now`, replacing what `key` held. A full
    /// cache first drops what has expired and, if still full, the entry
    /// nearest its end: the cache never grows past its capacity.
    pub(super) fn insert(&self, key: Key, value: V, ttl: Duration, now: Instant) {
        let mut entries = self.lock();
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, (expires, _)| now < *expires);
            let nearest_end = entries
                .iter()
                .min_by_key(|(_, (expires, _))| *expires)
                .map(|(k, _)| *k);
            if entries.len() >= self.capacity
                && let Some(k) = nearest_end
            {
                entries.remove(&k);
            }
        }
        let expires = now.checked_add(ttl).unwrap_or(now);
        entries.insert(key, (expires, value));
    }

    /// A panic elsewhere while holding the lock leaves whole entries behind:
    /// the map stays usable.
    fn lock(&self) -> MutexGuard<'_, HashMap<Key, (Instant, V)>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(10);

    fn key(n: u8) -> Key {
        [n; 32]
    }

    #[test]
    fn an_answer_is_reused_until_its_ttl_and_not_after() {
        let cache = TtlCache::new(4);
        let t0 = Instant::now();
        cache.insert(key(1), "alice", TTL, t0);
        assert_eq!(cache.get(&key(1), t0), Some("alice"));
        assert_eq!(
            cache.get(&key(1), t0 + TTL - Duration::from_millis(1)),
            Some("alice")
        );
        assert_eq!(cache.get(&key(1), t0 + TTL), None);
        assert_eq!(cache.get(&key(2), t0), None);
    }

    #[test]
    fn each_answer_keeps_its_own_ttl() {
        let cache = TtlCache::new(4);
        let t0 = Instant::now();
        cache.insert(key(1), "allowed", TTL, t0);
        cache.insert(key(2), "denied", Duration::from_secs(2), t0);
        let t3 = t0 + Duration::from_secs(3);
        assert_eq!(cache.get(&key(1), t3), Some("allowed"));
        assert_eq!(cache.get(&key(2), t3), None);
    }

    #[test]
    fn an_expired_entry_is_replaced_by_the_new_answer() {
        let cache = TtlCache::new(4);
        let t0 = Instant::now();
        cache.insert(key(1), "old", TTL, t0);
        let later = t0 + TTL + Duration::from_secs(1);
        assert_eq!(cache.get(&key(1), later), None);
        cache.insert(key(1), "new", TTL, later);
        assert_eq!(
            cache.get(&key(1), later + TTL - Duration::from_millis(1)),
            Some("new")
        );
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_full_cache_drops_expired_entries_first() {
        let cache = TtlCache::new(3);
        let t0 = Instant::now();
        cache.insert(key(1), 1, Duration::from_secs(1), t0);
        cache.insert(key(2), 2, Duration::from_secs(1), t0);
        cache.insert(key(3), 3, TTL, t0);
        let t2 = t0 + Duration::from_secs(2);
        cache.insert(key(4), 4, TTL, t2);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(&key(3), t2), Some(3));
        assert_eq!(cache.get(&key(4), t2), Some(4));
    }

    #[test]
    fn a_full_cache_of_live_answers_evicts_the_one_nearest_its_end() {
        let cache = TtlCache::new(3);
        let t0 = Instant::now();
        for n in 1..=3u8 {
            cache.insert(key(n), n, TTL, t0 + Duration::from_secs(u64::from(n)));
        }
        let t4 = t0 + Duration::from_secs(4);
        cache.insert(key(9), 9, TTL, t4);
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(&key(1), t4), None, "the oldest answer made room");
        for n in [2, 3, 9] {
            assert_eq!(cache.get(&key(n), t4), Some(n));
        }
    }

    #[test]
    fn replacing_a_key_in_a_full_cache_evicts_nothing() {
        let cache = TtlCache::new(2);
        let t0 = Instant::now();
        cache.insert(key(1), "a", TTL, t0);
        cache.insert(key(2), "b", TTL, t0);
        cache.insert(key(1), "a2", TTL, t0);
        assert_eq!(cache.get(&key(1), t0), Some("a2"));
        assert_eq!(cache.get(&key(2), t0), Some("b"));
    }

    #[test]
    fn many_distinct_keys_never_grow_it_past_its_capacity() {
        let cache = TtlCache::new(16);
        let t0 = Instant::now();
        for n in 0..=255u8 {
            cache.insert(key(n), n, TTL, t0 + Duration::from_millis(u64::from(n)));
            assert!(cache.len() <= 16);
        }
        assert_eq!(cache.get(&key(255), t0 + Duration::from_secs(1)), Some(255));
    }
}
