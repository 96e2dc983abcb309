//! Nodes decoded from the texts of recent Nodes-mode requests.
//!
//! With `nodeCacheCapable: false` kube-scheduler sends every candidate as
//! a full Node object, for every pod, and a Node's JSON rarely changes
//! between two pods (a kubelet rewrites its status every few minutes at
//! most). Decoding 5,000 of them was most of a Nodes-mode request, so a
//! node decoded once is kept with its exact text: an item whose text is
//! byte for byte one seen recently gets that decoding back without
//! serde reading it again. The text is compared in full, so a kept node is
//! only ever reused for the very bytes it was decoded from; a text that
//! fails to decode is not kept.
//!
//! An item can also be found where it starts in a request body, before
//! anything has looked for where it ends ([`Starts::kept_at`]): the
//! latest text kept with the same first [`START`] bytes is compared with
//! the body from there, and if the body goes on with exactly that text,
//! that text is the item, whole (a complete JSON object ends at its last
//! byte wherever it sits). kube-scheduler writes a Node's name, uid and
//! resourceVersion first, so those bytes tell its nodes apart; texts that
//! share them are found by the full hash as before.
//!
//! Memory is bounded by two generations: new and reused entries go to the
//! current one, and when it holds [`GENERATION`] entries or
//! [`GENERATION_BYTES`] of text it becomes the previous one and the oldest
//! is dropped, so a node not sent for two generations is forgotten.

use std::hash::BuildHasher;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use foldhash::HashMap;

use crate::model::Node;

/// Entries per generation: more than the nodes of a 5,000-node cluster.
const GENERATION: usize = 6_000;

/// Text per generation: 5,000 realistic Nodes are about 28 MB.
const GENERATION_BYTES: usize = 64 << 20;

/// Leading bytes of a text by which [`Starts::kept_at`] finds it.
const START: usize = 256;

/// One decoded text.
struct Decoded {
    text: Box<str>,
    node: Arc<Node>,
    /// Hash of the text's first [`START`] bytes.
    start: u64,
}

struct Generations {
    limits: Limits,
    current: HashMap<u64, Arc<Decoded>>,
    /// Text held by `current`.
    current_bytes: usize,
    previous: HashMap<u64, Arc<Decoded>>,
    /// The entry of `current` put there last, by the hash of its text's
    /// first bytes.
    starts: HashMap<u64, Arc<Decoded>>,
}

pub struct RecentNodes {
    /// Read by every item walk (both halves of a split one at once),
    /// written when texts are decoded.
    generations: RwLock<Generations>,
    hasher: foldhash::fast::RandomState,
}

/// When the current generation is full.
#[derive(Clone, Copy)]
struct Limits {
    entries: usize,
    bytes: usize,
}

/// One per server (`AppState::recent_nodes`), sized for a 5,000-node
/// cluster.
impl Default for RecentNodes {
    fn default() -> Self {
        Self::new(Limits {
            entries: GENERATION,
            bytes: GENERATION_BYTES,
        })
    }
}

impl RecentNodes {
    fn new(limits: Limits) -> Self {
        Self {
            generations: RwLock::new(Generations {
                limits,
                current: HashMap::default(),
                current_bytes: 0,
                previous: HashMap::default(),
                starts: HashMap::default(),
            }),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// How many decoded texts are kept (both generations).
    #[cfg(test)]
    pub(crate) fn kept(&self) -> usize {
        let generations = self.lock();
        generations.current.len() + generations.previous.len()
    }

    fn lock(&self) -> RwLockWriteGuard<'_, Generations> {
        self.generations.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The kept texts by their first bytes, read without a lock per item
    /// for as long as the returned index lives (one walk of a body's items;
    /// [`Self::decode`] waits for it).
    pub fn starts(&self) -> Starts<'_> {
        Starts {
            generations: self.generations.read().unwrap_or_else(|e| e.into_inner()),
            recent: self,
        }
    }

    /// Hash of the first [`START`] bytes of `bytes`, all when fewer.
    fn start(&self, bytes: &[u8]) -> u64 {
        self.hasher.hash_one(&bytes[..bytes.len().min(START)])
    }

    /// The Node in `texts`, each decoded by serde_json or taken from a
    /// recent request that sent exactly that text. The first error (in
    /// order) is returned with its item's place in `texts`.
    pub fn decode(&self, texts: &[&str]) -> Result<Vec<Arc<Node>>, (usize, serde_json::Error)> {
        let hashes: Vec<u64> = texts.iter().map(|t| self.hasher.hash_one(t)).collect();
        let kept: Vec<Option<Arc<Decoded>>> = {
            let mut generations = self.lock();
            hashes.iter().map(|h| generations.get(*h)).collect()
        };
        let mut nodes = Vec::with_capacity(texts.len());
        let mut decoded = Vec::new();
        for (i, (&text, kept)) in texts.iter().zip(kept).enumerate() {
            match kept.filter(|k| *k.text == *text) {
                Some(kept) => nodes.push(kept.node.clone()),
                None => {
                    let node = Arc::new(serde_json::from_str::<Node>(text).map_err(|e| (i, e))?);
                    decoded.push((
                        hashes[i],
                        Arc::new(Decoded {
                            text: text.into(),
                            node: node.clone(),
                            start: self.start(text.as_bytes()),
                        }),
                    ));
                    nodes.push(node);
                }
            }
        }
        if !decoded.is_empty() {
            let mut generations = self.lock();
            for (hash, entry) in decoded {
                generations.insert(hash, entry);
            }
        }
        Ok(nodes)
    }
}

/// The current generation's texts by their first [`START`] bytes
/// ([`RecentNodes::starts`]).
pub struct Starts<'r> {
    generations: RwLockReadGuard<'r, Generations>,
    recent: &'r RecentNodes,
}

impl Starts<'_> {
    /// The kept text `rest` starts with, when it is one kept with those
    /// first bytes: the item at the start of `rest` (a request body from
    /// an item's first byte on), whole.
    pub fn kept_at(&self, rest: &[u8]) -> Option<Kept> {
        let entry = self.generations.starts.get(&self.recent.start(rest))?;
        rest.starts_with(entry.text.as_bytes())
            .then(|| Kept(Arc::clone(entry)))
    }
}

/// A kept text and the Node decoded from it. A body item found to be
/// this text byte for byte is answered with this copy, so the body's
/// bytes there need no UTF-8 check of their own.
#[derive(Clone)]
pub struct Kept(Arc<Decoded>);

impl Kept {
    pub fn node(&self) -> &Arc<Node> {
        &self.0.node
    }

    pub fn text(&self) -> &str {
        &self.0.text
    }
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept")
            .field("node", &self.0.node.name())
            .field("bytes", &self.0.text.len())
            .finish()
    }
}

impl Generations {
    /// The entry for `hash`, moved to the current generation when it was
    /// in the previous one.
    fn get(&mut self, hash: u64) -> Option<Arc<Decoded>> {
        if let Some(entry) = self.current.get(&hash) {
            return Some(entry.clone());
        }
        let entry = self.previous.remove(&hash)?;
        self.insert(hash, entry.clone());
        Some(entry)
    }

    fn insert(&mut self, hash: u64, entry: Arc<Decoded>) {
        if self.current.len() >= self.limits.entries || self.current_bytes >= self.limits.bytes {
            self.previous = std::mem::take(&mut self.current);
            self.current_bytes = 0;
            self.starts.clear();
        }
        self.starts.insert(entry.start, Arc::clone(&entry));
        self.current_bytes += entry.text.len();
        if let Some(replaced) = self.current.insert(hash, entry) {
            self.current_bytes -= replaced.text.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limits = Limits {
        entries: 100,
        bytes: 20_000,
    };

    fn node(name: &str, zone: &str) -> String {
        format!(
            r#"{{"metadata":{{"name":"{name}","labels":{{"zone":"{zone}"}}}},"status":{{"allocatable":{{"cpu":"4"}}}}}}"#
        )
    }

    #[test]
    fn the_same_text_gets_the_same_decoding_and_another_text_its_own() {
        let recent = RecentNodes::new(SMALL);
        let (a, b) = (node("a", "z1"), node("b", "z1"));
        let first = recent.decode(&[&a, &b]).unwrap();
        let again = recent.decode(&[&b, &a]).unwrap();
        assert!(Arc::ptr_eq(&first[0], &again[1]));
        assert!(Arc::ptr_eq(&first[1], &again[0]));
        let moved = node("a", "z2");
        let changed = recent.decode(&[&moved]).unwrap();
        assert!(!Arc::ptr_eq(&changed[0], &first[0]));
        assert_eq!(changed[0].metadata.labels.get("zone").unwrap(), "z2");
        for (text, got) in [(&a, &first[0]), (&b, &first[1]), (&moved, &changed[0])] {
            assert_eq!(**got, serde_json::from_str::<Node>(text).unwrap());
        }
    }

    #[test]
    fn a_text_that_collides_is_decoded_not_taken() {
        let recent = RecentNodes::new(SMALL);
        let (a, b) = (node("a", "z1"), node("b", "z1"));
        let kept = recent.decode(&[&a]).unwrap();
        // Plant a's decoding under b's hash, as a hash collision would.
        let hash = recent.hasher.hash_one(b.as_str());
        let planted = recent.lock().current.values().next().unwrap().clone();
        recent.lock().current.insert(hash, planted);
        let got = recent.decode(&[&b]).unwrap();
        assert!(!Arc::ptr_eq(&got[0], &kept[0]));
        assert_eq!(got[0].metadata.name, "b");
    }

    /// The kept node and text length found at the start of `rest`; the
    /// kept copy is the body's bytes there.
    fn kept_at(recent: &RecentNodes, rest: &[u8]) -> Option<(Arc<Node>, usize)> {
        let kept = recent.starts().kept_at(rest)?;
        assert!(rest.starts_with(kept.text().as_bytes()));
        Some((kept.node().clone(), kept.text().len()))
    }

    #[test]
    fn a_kept_text_is_found_where_a_body_goes_on_with_it() {
        let recent = RecentNodes::new(SMALL);
        let pad = "x".repeat(START);
        let text = |name: &str, cpu: &str| {
            format!(
                r#"{{"metadata":{{"name":"{name}","annotations":{{"a":"{pad}"}}}},"status":{{"allocatable":{{"cpu":"{cpu}"}}}}}}"#
            )
        };
        let (a, b) = (text("a", "4"), text("b", "4"));
        let kept = recent.decode(&[&a, &b]).unwrap();
        for (t, node) in [(&a, &kept[0]), (&b, &kept[1])] {
            let (found, len) = kept_at(&recent, format!("{t}, more").as_bytes()).unwrap();
            assert!(Arc::ptr_eq(&found, node));
            assert_eq!(len, t.len());
        }
        // The same first bytes, another text: not found, and once decoded
        // it is the one found by its start.
        let a2 = text("a", "8");
        assert!(kept_at(&recent, a2.as_bytes()).is_none());
        let changed = recent.decode(&[&a2]).unwrap();
        assert!(Arc::ptr_eq(
            &kept_at(&recent, a2.as_bytes()).unwrap().0,
            &changed[0]
        ));
        assert!(kept_at(&recent, a.as_bytes()).is_none());
        // Texts that share their first bytes are all kept.
        assert!(Arc::ptr_eq(&recent.decode(&[&a]).unwrap()[0], &kept[0]));
        assert_eq!(recent.kept(), 3);
        // A body that stops inside a kept text has no item there.
        assert!(kept_at(&recent, &b.as_bytes()[..b.len() - 1]).is_none());
    }

    #[test]
    fn errors_name_their_item_and_are_not_kept() {
        let recent = RecentNodes::new(SMALL);
        let good = node("a", "z1");
        let bad = r#"{"metadata":{"name":7}}"#;
        let (at, e) = recent.decode(&[&good, bad]).unwrap_err();
        assert_eq!(at, 1);
        assert_eq!(
            e.to_string(),
            serde_json::from_str::<Node>(bad).unwrap_err().to_string()
        );
        assert!(recent.lock().current.len() <= 1);
        assert!(recent.decode(&[bad]).is_err());
    }

    #[test]
    fn two_generations_bound_what_is_kept() {
        let recent = RecentNodes::new(SMALL);
        let texts: Vec<String> = (0..SMALL.entries * 2 + 10)
            .map(|i| node(&format!("n{i}"), "z"))
            .collect();
        for chunk in texts.chunks(30) {
            let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
            recent.decode(&refs).unwrap();
        }
        let generations = recent.lock();
        assert!(generations.current.len() <= SMALL.entries);
        assert!(generations.previous.len() <= SMALL.entries);
        assert!(generations.current.len() + generations.previous.len() < texts.len());
    }

    #[test]
    fn large_texts_start_a_new_generation_sooner() {
        let recent = RecentNodes::new(SMALL);
        let big = "x".repeat(1_000);
        let texts: Vec<String> = (0..SMALL.bytes / 1_000 * 2 + 5)
            .map(|i| format!(r#"{{"metadata":{{"name":"n{i}","annotations":{{"a":"{big}"}}}}}}"#))
            .collect();
        for text in &texts {
            recent.decode(&[text]).unwrap();
        }
        let generations = recent.lock();
        let held: usize = generations.current.values().map(|d| d.text.len()).sum();
        assert_eq!(held, generations.current_bytes);
        assert!(held <= SMALL.bytes + texts[0].len());
        assert!(generations.current.len() + generations.previous.len() < texts.len());
    }
}
