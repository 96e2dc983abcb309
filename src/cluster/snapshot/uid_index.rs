//! Pods by UID, split into shards so that one pod change copies one small
//! shard (about 40 entries at 150,000 pods) instead of a 150,000-entry
//! map; the shard list itself is chunked so it is not copied whole either.

use std::hash::BuildHasher;
use std::sync::Arc;

use super::{Chunked, Map, PodRef};

const SHARDS: usize = 4096;

#[derive(Debug, Clone)]
pub(super) struct UidIndex {
    shards: Chunked<Arc<Map<String, PodRef>>>,
}

impl Default for UidIndex {
    fn default() -> Self {
        Self::builder().finish()
    }
}

/// A fixed seed: the shard of a UID must not change between snapshots.
fn shard_of(uid: &str) -> usize {
    (foldhash::fast::FixedState::with_seed(0x6b75_6265).hash_one(uid) as usize) % SHARDS
}

pub(super) struct UidIndexBuilder {
    shards: Vec<Map<String, PodRef>>,
}

impl UidIndexBuilder {
    /// Index `r` by its UID; pods without one (hand-written files) are only
    /// reachable by name.
    pub(super) fn insert(&mut self, r: &PodRef) {
        let uid = &r.pod.metadata.uid;
        if !uid.is_empty() {
            self.shards[shard_of(uid)].insert(uid.clone(), r.clone());
        }
    }

    pub(super) fn finish(self) -> UidIndex {
        UidIndex {
            shards: self.shards.into_iter().map(Arc::new).collect(),
        }
    }
}

impl UidIndex {
    pub(super) fn builder() -> UidIndexBuilder {
        UidIndexBuilder {
            shards: (0..SHARDS).map(|_| Map::default()).collect(),
        }
    }

    pub(super) fn get(&self, uid: &str) -> Option<&PodRef> {
        self.shards[shard_of(uid)].get(uid)
    }

    /// A copy with `removed` UIDs gone and `added` refs in; only the shards
    /// they fall in are copied.
    pub(super) fn with_changes<'a>(
        &self,
        removed: impl IntoIterator<Item = &'a str>,
        added: impl IntoIterator<Item = &'a PodRef>,
    ) -> UidIndex {
        let removed: Vec<&str> = removed.into_iter().filter(|u| !u.is_empty()).collect();
        let added: Vec<&PodRef> = added
            .into_iter()
            .filter(|r| !r.pod.metadata.uid.is_empty())
            .collect();
        let touched: Vec<usize> = removed
            .iter()
            .copied()
            .chain(added.iter().map(|r| r.pod.metadata.uid.as_str()))
            .map(shard_of)
            .collect();
        let shards = self.shards.edited(&touched, |i, shard| {
            let shard = Arc::make_mut(shard);
            for uid in removed.iter().filter(|u| shard_of(u) == i) {
                shard.remove(*uid);
            }
            for r in added.iter().filter(|r| shard_of(&r.pod.metadata.uid) == i) {
                shard.insert(r.pod.metadata.uid.clone(), (*r).clone());
            }
        });
        UidIndex { shards }
    }
}
