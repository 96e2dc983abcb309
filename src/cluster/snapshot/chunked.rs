//! Large snapshot lists in shared fixed-size chunks: the nodes, and the
//! shards of the pod-by-UID index.
//!
//! A watch event changes one or two entries, and the next snapshot must
//! not copy the other thousands: copying (and later dropping) every node's
//! shared handles was most of the cost of publishing one pod event. A
//! change copies only the chunks it touches; the rest are shared with the
//! previous snapshot. Reading an entry is one more array step than a flat
//! list.

use std::ops::Index;
use std::sync::Arc;

use super::NodeInfo;

/// Entries per chunk: a change copies this many.
const CHUNK: usize = 64;

/// Nodes by [`super::NodeIdx`], sorted by name.
pub type NodeList = Chunked<NodeInfo>;

/// Every entry, in order.
pub type Iter<'a, T> = std::iter::FlatMap<
    std::slice::Iter<'a, Arc<[T]>>,
    std::slice::Iter<'a, T>,
    fn(&'a Arc<[T]>) -> std::slice::Iter<'a, T>,
>;

fn chunk_iter<T>(chunk: &Arc<[T]>) -> std::slice::Iter<'_, T> {
    chunk.iter()
}

/// A list of `T` shared in chunks; indexes like a slice.
#[derive(Debug)]
pub struct Chunked<T> {
    chunks: Arc<[Arc<[T]>]>,
    len: usize,
}

impl<T> Clone for Chunked<T> {
    fn clone(&self) -> Self {
        Self {
            chunks: Arc::clone(&self.chunks),
            len: self.len,
        }
    }
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Self {
            chunks: Arc::new([]),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    pub fn iter(&self) -> Iter<'_, T> {
        self.chunks.iter().flat_map(chunk_iter::<T>)
    }

    /// Whether both share every chunk (nothing was copied).
    pub fn shares_all(&self, other: &Chunked<T>) -> bool {
        Arc::ptr_eq(&self.chunks, &other.chunks)
    }
}

impl<T: Clone> Chunked<T> {
    /// A copy with `edit` applied to the entries at `positions` (each once,
    /// in any order); chunks without such an entry are shared.
    pub fn edited(&self, positions: &[usize], mut edit: impl FnMut(usize, &mut T)) -> Self {
        let mut sorted = positions.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut chunks: Vec<Arc<[T]>> = self.chunks.to_vec();
        for group in sorted.chunk_by(|a, b| a / CHUNK == b / CHUNK) {
            let c = group[0] / CHUNK;
            let Some(chunk) = chunks.get_mut(c) else {
                continue;
            };
            let mut copy = chunk.to_vec();
            for &i in group {
                if let Some(info) = copy.get_mut(i % CHUNK) {
                    edit(i, info);
                }
            }
            *chunk = copy.into();
        }
        Self {
            chunks: chunks.into(),
            len: self.len,
        }
    }
}

impl<T> Index<usize> for Chunked<T> {
    type Output = T;

    fn index(&self, i: usize) -> &T {
        &self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl<T> FromIterator<T> for Chunked<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut chunks: Vec<Arc<[T]>> = Vec::new();
        let mut len = 0;
        let mut current: Vec<T> = Vec::with_capacity(CHUNK);
        for info in iter {
            current.push(info);
            len += 1;
            if current.len() == CHUNK {
                chunks.push(std::mem::replace(&mut current, Vec::with_capacity(CHUNK)).into());
            }
        }
        if !current.is_empty() {
            chunks.push(current.into());
        }
        Self {
            chunks: chunks.into(),
            len,
        }
    }
}

impl<'a, T> IntoIterator for &'a Chunked<T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{NodePods, PodPdbs};
    use crate::model::Node;

    fn info(name: &str) -> NodeInfo {
        let mut node = Node::default();
        node.metadata.name = name.into();
        NodeInfo {
            node: Arc::new(node),
            pods: NodePods::default(),
            pdbs: PodPdbs::default(),
        }
    }

    fn names(list: &NodeList) -> Vec<String> {
        list.iter().map(|n| n.node.name().to_string()).collect()
    }

    #[test]
    fn index_iter_and_len_agree_across_chunks() {
        let list: NodeList = (0..150).map(|i| info(&format!("n{i:03}"))).collect();
        assert_eq!(list.len(), 150);
        assert_eq!(list.iter().count(), 150);
        for i in [0, 63, 64, 127, 128, 149] {
            assert_eq!(list[i].node.name(), format!("n{i:03}"));
            assert_eq!(
                list.get(i).map(|n| n.node.name()),
                Some(list[i].node.name())
            );
        }
        assert!(list.get(150).is_none());
        assert!(NodeList::default().is_empty());
    }

    #[test]
    fn an_edit_copies_only_the_chunks_it_touches() {
        let list: NodeList = (0..150).map(|i| info(&format!("n{i:03}"))).collect();
        let edited = list.edited(&[130, 5, 5], |i, n| {
            let mut node = (*n.node).clone();
            node.metadata.name = format!("changed-{i}");
            n.node = Arc::new(node);
        });
        let mut want = names(&list);
        want[5] = "changed-5".into();
        want[130] = "changed-130".into();
        assert_eq!(names(&edited), want);
        assert_eq!(names(&list)[5], "n005", "the original is unchanged");
        assert!(
            Arc::ptr_eq(&list.chunks[1], &edited.chunks[1]),
            "untouched chunk shared"
        );
        assert!(!Arc::ptr_eq(&list.chunks[0], &edited.chunks[0]));
        assert!(!Arc::ptr_eq(&list.chunks[2], &edited.chunks[2]));
        assert!(!edited.shares_all(&list) && list.shares_all(&list.clone()));
    }
}
