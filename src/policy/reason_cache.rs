//! Failure texts already written for a domain. Every node of a failing zone
//! fails with the same text, and formatting it per node cost more than the
//! rule check itself; looking it up in one locked map still cost a quarter
//! of a 500-name check, and both cores of a split check took that lock.
//!
//! So the first [`DENSE_DOMAINS`] domain ids of each rule slot (constraint,
//! term or key) have a table of their own, read without a lock once made.
//! Keys with few values (zones, racks) are all there. On keys with many
//! (hostname) a domain is mostly one node whose text is asked once, and the
//! ids past the table, like slots past the ones the rule declared, fall back
//! to the locked map.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::cluster::DomainId;

use super::domains::Domain;

/// Domain ids per slot with a lock-free entry: every zone or rack of a
/// cluster, at 1.5 KiB per slot that fails at all.
const DENSE_DOMAINS: usize = 64;

/// The texts of one slot's first [`DENSE_DOMAINS`] domain ids.
type DenseTexts = Box<[OnceLock<Arc<str>>]>;

/// Failure texts per (rule slot, domain) of one prepared rule. Clones start
/// empty, and state changes clear it.
#[derive(Debug, Default)]
pub struct ReasonCache {
    /// Per slot below the declared count, its table, made on its first
    /// failure.
    dense: Box<[OnceLock<DenseTexts>]>,
    /// Texts of later slots and of domain ids past the tables.
    rest: Mutex<foldhash::HashMap<(usize, DomainId), Arc<str>>>,
}

impl Clone for ReasonCache {
    fn clone(&self) -> Self {
        Self::new(self.dense.len())
    }
}

impl ReasonCache {
    /// A cache whose slots `0..slots` have lock-free tables.
    pub fn new(slots: usize) -> Self {
        Self {
            dense: (0..slots).map(|_| OnceLock::new()).collect(),
            rest: Mutex::default(),
        }
    }

    /// The cached text for (`slot`, `domain`), made by `make` the first
    /// time; domains the view does not know are not cached.
    pub fn get_or(
        &self,
        slot: usize,
        domain: Domain<'_>,
        make: impl FnOnce() -> String,
    ) -> Arc<str> {
        let Domain::Known(id) = domain else {
            return make().into();
        };
        if let Some(table) = self.dense.get(slot)
            && let Some(text) = table
                .get_or_init(|| (0..DENSE_DOMAINS).map(|_| OnceLock::new()).collect())
                .get(id as usize)
        {
            return Arc::clone(text.get_or_init(|| make().into()));
        }
        let mut rest = self.rest.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(rest.entry((slot, id)).or_insert_with(|| make().into()))
    }

    /// Forget every text (the counts behind them changed).
    pub fn clear(&mut self) {
        for table in self.dense.iter_mut() {
            table.take();
        }
        self.rest
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many times `make` ran over `asks` of the same cache.
    fn made(cache: &ReasonCache, asks: &[(usize, Domain<'_>)]) -> usize {
        let mut made = 0;
        for &(slot, domain) in asks {
            let text = cache.get_or(slot, domain, || {
                made += 1;
                format!("{slot} {domain:?}")
            });
            assert_eq!(&*text, format!("{slot} {domain:?}"));
        }
        made
    }

    #[test]
    fn reasons_are_made_once_per_known_domain_and_cleared() {
        let mut cache = ReasonCache::new(2);
        let known = Domain::Known(1);
        assert_eq!(made(&cache, &[(0, known), (0, known), (0, known)]), 1);
        assert_eq!(made(&cache, &[(1, known), (0, known)]), 1, "other slot");
        let unknown = Domain::Unknown("x");
        assert_eq!(
            made(&cache, &[(0, unknown), (0, unknown)]),
            2,
            "never cached"
        );
        cache.clear();
        assert_eq!(made(&cache, &[(0, known), (0, known)]), 1, "cleared");
        assert_eq!(made(&cache.clone(), &[(0, known)]), 1, "clones start empty");
    }

    /// Slots past the declared ones and ids past the tables are cached in
    /// the locked map, each text still made once and kept apart.
    #[test]
    fn slots_and_domains_past_the_tables_are_cached_too() {
        let mut cache = ReasonCache::new(1);
        let far = Domain::Known(DENSE_DOMAINS as DomainId + 5);
        let near = Domain::Known(DENSE_DOMAINS as DomainId - 1);
        let asks = [(0, far), (0, near), (7, near), (1 << 20, far)];
        assert_eq!(made(&cache, &asks), 4);
        assert_eq!(made(&cache, &asks), 0);
        cache.clear();
        assert_eq!(made(&cache, &asks), 4);
        assert_eq!(made(&ReasonCache::default(), &asks), 4, "no slots declared");
    }

    /// Both cores of a split check ask the same texts: each is made once.
    #[test]
    fn threads_sharing_a_cache_make_each_text_once() {
        let cache = ReasonCache::new(1);
        let made = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for id in 0..2 * DENSE_DOMAINS as DomainId {
                        cache.get_or(0, Domain::Known(id), || {
                            made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            id.to_string()
                        });
                    }
                });
            }
        });
        assert_eq!(made.into_inner(), 2 * DENSE_DOMAINS);
    }
}
