//! Node name → index in the view, for the lookups of every extender request
//! (500 to 5,000 names each).
//!
//! A `HashMap<String, _>` keeps each key in its own heap allocation, so a
//! lookup reads a bucket, follows its pointer to the key and compares:
//! cache misses a served request pays for every name (perf on the served
//! binary: 8% of a 500-name filter in the lookup and its `memcmp`). Here
//! each slot is one cache line holding a part of the name's hash, its
//! index, its length and its first bytes: a lookup of a name that fits
//! (cloud host names are about 40 bytes) reads that one line. Longer names
//! compare their rest with the names kept back to back in one buffer.

use std::hash::BuildHasher;

use foldhash::fast::FixedState;

use super::NodeIdx;

/// An empty slot; occupied slots hold `index + 1`.
const EMPTY: u32 = 0;

/// How many bytes of a name its slot holds: what is left of a 64-byte line.
const HEAD: usize = 52;

/// One open-addressing slot, a cache line.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Slot {
    /// The high half of the name's hash.
    tag: u32,
    /// The name's index + 1, or [`EMPTY`].
    stored: u32,
    len: u32,
    /// The name's first `min(len, HEAD)` bytes.
    head: [u8; HEAD],
}

const EMPTY_SLOT: Slot = Slot {
    tag: 0,
    stored: EMPTY,
    len: 0,
    head: [0; HEAD],
};

#[derive(Debug, Clone, Default)]
pub struct NameIndex {
    /// Every name, back to back: name `i` is `text[starts[i]..starts[i + 1]]`.
    /// Read only for the part of a name past its slot's [`HEAD`] bytes.
    text: String,
    starts: Vec<u32>,
    /// Linear probing; twice as many slots as names, a power of two.
    slots: Vec<Slot>,
}

fn hash(name: &str) -> u64 {
    FixedState::with_seed(0x6b75_6265_2d61_7262).hash_one(name)
}

impl NameIndex {
    /// The index of names in order: name `i` maps to `i`. A name given
    /// twice maps to its last position, as inserting into a map would.
    pub fn new<'a>(names: impl ExactSizeIterator<Item = &'a str> + Clone) -> Self {
        let count = names.len();
        let mut text = String::with_capacity(names.clone().map(str::len).sum());
        let mut starts = Vec::with_capacity(count + 1);
        starts.push(0);
        for name in names.clone() {
            text.push_str(name);
            starts.push(text.len() as u32);
        }
        let capacity = if count == 0 {
            0
        } else {
            (count * 2).next_power_of_two()
        };
        let mut index = Self {
            text,
            starts,
            slots: vec![EMPTY_SLOT; capacity],
        };
        for (i, name) in names.enumerate() {
            let (slot, tag) = index.slot_of(name);
            let mut head = [0; HEAD];
            let kept = name.len().min(HEAD);
            head[..kept].copy_from_slice(&name.as_bytes()[..kept]);
            index.slots[slot] = Slot {
                tag,
                stored: i as u32 + 1,
                len: name.len() as u32,
                head,
            };
        }
        index
    }

    pub fn get(&self, name: &str) -> Option<NodeIdx> {
        if self.slots.is_empty() {
            return None;
        }
        let (slot, _) = self.slot_of(name);
        match self.slots[slot].stored {
            EMPTY => None,
            stored => Some(stored - 1),
        }
    }

    /// [`Self::get`] of every name, in order. A served request finds the
    /// table out of cache; looked up one by one, each name's compare waits
    /// for its slot. Here every slot is read first (independent reads, so
    /// the processor overlaps their misses), then each name is compared
    /// with its slot, now in cache.
    pub fn get_all<S: AsRef<str>>(&self, names: &[S]) -> Vec<Option<NodeIdx>> {
        if self.slots.is_empty() {
            return vec![None; names.len()];
        }
        let mask = self.slots.len() - 1;
        // The first slot each name probes, its tag and what that slot holds.
        let first: Vec<(u32, usize, u32, u32)> = names
            .iter()
            .map(|name| {
                let h = hash(name.as_ref());
                let slot = h as usize & mask;
                let s = &self.slots[slot];
                ((h >> 32) as u32, slot, s.tag, s.stored)
            })
            .collect();
        names
            .iter()
            .zip(first)
            .map(|(name, (tag, slot, t, stored))| {
                let name = name.as_ref();
                if stored == EMPTY {
                    return None;
                }
                if t == tag && self.holds(&self.slots[slot], name) {
                    return Some(stored - 1);
                }
                // Another name in the first slot: probe on as `get` does.
                match self.slots[self.probe(name, tag, (slot + 1) & mask)].stored {
                    EMPTY => None,
                    stored => Some(stored - 1),
                }
            })
            .collect()
    }

    /// The slot holding `name`, or the empty one where it would go, and
    /// the name's hash tag. The table is never full (twice as many slots
    /// as names), so the probe ends.
    fn slot_of(&self, name: &str) -> (usize, u32) {
        let h = hash(name);
        let tag = (h >> 32) as u32;
        let slot = h as usize & (self.slots.len() - 1);
        (self.probe(name, tag, slot), tag)
    }

    /// From `slot` on, the slot holding `name` (hash tag `tag`) or the
    /// empty one where it would go.
    fn probe(&self, name: &str, tag: u32, mut slot: usize) -> usize {
        let mask = self.slots.len() - 1;
        loop {
            let s = &self.slots[slot];
            if s.stored == EMPTY || (s.tag == tag && self.holds(s, name)) {
                return slot;
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Whether the occupied slot `s` is `name`'s.
    fn holds(&self, s: &Slot, name: &str) -> bool {
        let name = name.as_bytes();
        if s.len as usize != name.len() {
            return false;
        }
        let kept = name.len().min(HEAD);
        if s.head[..kept] != name[..kept] {
            return false;
        }
        kept == name.len() || {
            let idx = (s.stored - 1) as usize;
            let from = self.starts[idx] as usize + HEAD;
            self.text.as_bytes()[from..self.starts[idx + 1] as usize] == name[HEAD..]
        }
    }

    /// How many names were given.
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn empty_index_finds_nothing() {
        let index = NameIndex::new(std::iter::empty());
        assert_eq!(index.get("n1"), None);
        assert_eq!(index.get(""), None);
        assert!(index.is_empty());
    }

    #[test]
    fn empty_index_finds_none_of_many() {
        let index = NameIndex::new(std::iter::empty());
        assert_eq!(index.get_all(&["n1", ""]), vec![None, None]);
    }

    #[test]
    fn finds_each_name_at_its_position() {
        let long = "ip-10-0-0-1.eu-west-1.compute.internal.of-a-cluster-with-long-names";
        let names = ["b", "a", "", "ip-10-0-0-1.eu-west-1.compute.internal", long];
        let index = NameIndex::new(names.iter().copied());
        for (i, n) in names.iter().enumerate() {
            assert_eq!(index.get(n), Some(i as NodeIdx), "{n}");
        }
        assert_eq!(index.get("c"), None);
        assert_eq!(index.get("ab"), None);
        // Past the bytes a slot holds: the rest decides.
        assert_eq!(index.get(&format!("{long}x")), None);
        assert_eq!(index.get(&long.replace("long-names", "long-namez")), None);
        assert_eq!(index.get(&long[..HEAD]), None);
        assert_eq!(index.len(), 5);
    }

    /// A slot is a name's only when the whole name matches: two names of
    /// one length and the same first [`HEAD`] bytes differ in the rest
    /// (hashes that collide send both to the same slot).
    #[test]
    fn a_slot_compares_the_rest_of_a_long_name() {
        let long = format!("{}-a", "p".repeat(HEAD));
        let index = NameIndex::new([long.as_str(), "short"].into_iter());
        let slot = |name: &str| &index.slots[index.slot_of(name).0];
        assert!(index.holds(slot(&long), &long));
        assert!(!index.holds(slot(&long), &format!("{}-b", "p".repeat(HEAD))));
        assert!(!index.holds(slot(&long), &long[..HEAD]));
        assert!(index.holds(slot("short"), "short"));
        assert!(!index.holds(slot("short"), "shorT"));
    }

    /// Short names, and long ones that share more than a slot's [`HEAD`]
    /// bytes and differ only after them.
    const NAMES: &str = "[a-c]{0,3}|n[0-9]{1,4}|p{50}[a-c]{0,6}";

    proptest! {
        /// Answers exactly what a map built by inserting the names in order
        /// answers, for present and absent names alike.
        #[test]
        fn answers_like_a_map(
            names in prop::collection::vec(NAMES, 0..300),
            probes in prop::collection::vec(NAMES, 0..50),
        ) {
            let index = NameIndex::new(names.iter().map(String::as_str));
            let mut map = HashMap::new();
            for (i, n) in names.iter().enumerate() {
                map.insert(n.as_str(), i as NodeIdx);
            }
            for n in names.iter().chain(&probes) {
                prop_assert_eq!(index.get(n), map.get(n.as_str()).copied(), "{}", n);
            }
        }

        /// Answers, name for name, what `get` answers, with names present
        /// and absent, repeated, and colliding in a small table.
        #[test]
        fn get_all_answers_as_get_does(
            names in prop::collection::vec(NAMES, 0..300),
            probes in prop::collection::vec(NAMES, 0..300),
        ) {
            let index = NameIndex::new(names.iter().map(String::as_str));
            let asked: Vec<&String> = probes.iter().chain(&names).collect();
            let one_by_one: Vec<_> = asked.iter().map(|n| index.get(n)).collect();
            prop_assert_eq!(index.get_all(&asked), one_by_one);
        }
    }
}
