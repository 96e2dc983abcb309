//! Node name → index in the view, for the lookups of every extender request
//! (500 to 5,000 names each).
//!
//! A `HashMap<String, _>` keeps each key in its own heap allocation, so a
//! lookup reads a bucket, follows its pointer to the key and compares:
//! cache misses a served request pays for every name (perf on the served
//! binary: 8% of a 500-name filter in the lookup and its `memcmp`). Here
//! the names sit back to back in one buffer and the table holds a part of
//! each name's hash next to its index, so a lookup reads one slot and then
//! compares with memory it shares with its neighbours.

use std::hash::BuildHasher;

use foldhash::fast::FixedState;

use super::NodeIdx;

/// An empty slot; occupied slots hold `index + 1`.
const EMPTY: u32 = 0;

#[derive(Debug, Clone, Default)]
pub struct NameIndex {
    /// Every name, back to back: name `i` is `text[starts[i]..starts[i + 1]]`.
    text: String,
    starts: Vec<u32>,
    /// Open addressing, linear probing: (high half of the name's hash,
    /// index + 1). Twice as many slots as names, a power of two.
    slots: Vec<(u32, u32)>,
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
        let capacity = if count == 0 {
            0
        } else {
            (count * 2).next_power_of_two()
        };
        let mut index = Self {
            text: String::new(),
            starts: Vec::new(),
            slots: vec![(0, EMPTY); capacity],
        };
        for (i, name) in names.enumerate() {
            text.push_str(name);
            starts.push(text.len() as u32);
            index.place(name, i as NodeIdx, &text, &starts);
        }
        index.text = text;
        index.starts = starts;
        index
    }

    /// Put `name` → `idx` in its slot, over an earlier equal name.
    fn place(&mut self, name: &str, idx: NodeIdx, text: &str, starts: &[u32]) {
        let (slot, tag) = self.slot_of(name, text, starts);
        self.slots[slot] = (tag, idx + 1);
    }

    pub fn get(&self, name: &str) -> Option<NodeIdx> {
        if self.slots.is_empty() {
            return None;
        }
        let (slot, _) = self.slot_of(name, &self.text, &self.starts);
        match self.slots[slot].1 {
            EMPTY => None,
            stored => Some(stored - 1),
        }
    }

    /// [`Self::get`] of every name, in order. A served request finds the
    /// table, the offsets and the text out of cache, and looked up one
    /// by one each name's three reads wait for each other; here each step
    /// is taken for all names before the next, so the reads of one step
    /// are independent and the processor overlaps their misses.
    pub fn get_all<S: AsRef<str>>(&self, names: &[S]) -> Vec<Option<NodeIdx>> {
        if self.slots.is_empty() {
            return vec![None; names.len()];
        }
        let mask = self.slots.len() - 1;
        // The first slot each name probes, and its content.
        let first: Vec<(u32, usize, (u32, u32))> = names
            .iter()
            .map(|name| {
                let h = hash(name.as_ref());
                let slot = h as usize & mask;
                ((h >> 32) as u32, slot, self.slots[slot])
            })
            .collect();
        // Where the first slot's name lies in the text, when its tag matches.
        let spans: Vec<Option<(usize, usize)>> = first
            .iter()
            .map(|&(tag, _, (t, stored))| {
                (stored != EMPTY && t == tag).then(|| {
                    let i = (stored - 1) as usize;
                    (self.starts[i] as usize, self.starts[i + 1] as usize)
                })
            })
            .collect();
        names
            .iter()
            .zip(first)
            .zip(spans)
            .map(|((name, (tag, slot, (_, stored))), span)| {
                let name = name.as_ref();
                if stored == EMPTY {
                    return None;
                }
                if span.is_some_and(|(a, b)| &self.text[a..b] == name) {
                    return Some(stored - 1);
                }
                // A collision in the first slot: probe on as `get` does.
                let start = (slot + 1) & mask;
                match self.slots[self.probe(name, tag, start)].1 {
                    EMPTY => None,
                    stored => Some(stored - 1),
                }
            })
            .collect()
    }

    /// The slot holding `name`, or the empty one where it would go, and
    /// the name's hash tag. The table is never full (twice as many slots
    /// as names), so the probe ends.
    fn slot_of(&self, name: &str, text: &str, starts: &[u32]) -> (usize, u32) {
        let h = hash(name);
        let tag = (h >> 32) as u32;
        let slot = h as usize & (self.slots.len() - 1);
        (self.probe_in(name, tag, slot, text, starts), tag)
    }

    /// [`Self::probe_in`] of the finished index.
    fn probe(&self, name: &str, tag: u32, slot: usize) -> usize {
        self.probe_in(name, tag, slot, &self.text, &self.starts)
    }

    /// From `slot` on, the slot holding `name` (hash tag `tag`) or the
    /// empty one where it would go.
    fn probe_in(&self, name: &str, tag: u32, mut slot: usize, text: &str, starts: &[u32]) -> usize {
        let mask = self.slots.len() - 1;
        loop {
            let (t, stored) = self.slots[slot];
            if stored == EMPTY || (t == tag && name_at(text, starts, (stored - 1) as usize) == name)
            {
                return slot;
            }
            slot = (slot + 1) & mask;
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

fn name_at<'t>(text: &'t str, starts: &[u32], idx: usize) -> &'t str {
    &text[starts[idx] as usize..starts[idx + 1] as usize]
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
        let names = ["b", "a", "", "ip-10-0-0-1.eu-west-1.compute.internal"];
        let index = NameIndex::new(names.iter().copied());
        for (i, n) in names.iter().enumerate() {
            assert_eq!(index.get(n), Some(i as NodeIdx), "{n}");
        }
        assert_eq!(index.get("c"), None);
        assert_eq!(index.get("ab"), None);
        assert_eq!(index.len(), 4);
    }

    proptest! {
        /// Answers exactly what a map built by inserting the names in order
        /// answers, for present and absent names alike.
        #[test]
        fn answers_like_a_map(
            names in prop::collection::vec("[a-c]{0,3}|n[0-9]{1,4}", 0..300),
            probes in prop::collection::vec("[a-c]{0,3}|n[0-9]{1,4}", 0..50),
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
            names in prop::collection::vec("[a-c]{0,3}|n[0-9]{1,4}", 0..300),
            probes in prop::collection::vec("[a-c]{0,3}|n[0-9]{1,4}", 0..300),
        ) {
            let index = NameIndex::new(names.iter().map(String::as_str));
            let asked: Vec<&String> = probes.iter().chain(&names).collect();
            let one_by_one: Vec<_> = asked.iter().map(|n| index.get(n)).collect();
            prop_assert_eq!(index.get_all(&asked), one_by_one);
        }
    }
}
