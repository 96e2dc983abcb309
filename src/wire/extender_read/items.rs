//! The items of a Nodes-mode NodeList, walked where they lie in the body.
//! Each is either a text sent recently, recognised where it starts
//! (`Starts::kept_at` compares it in full; no scan for its end), or
//! scanned and then decoded with the others on all cores.
//!
//! Comparing 5,000 kept texts (38 MB) with the body was most of what
//! kube-arbiter added to a Nodes-mode filter, all on one core. A large
//! list is walked in two halves at once: the second from a place past the
//! middle where a kept text begins right after a comma, the first from the
//! list's start. The halves stand only if the first half's walk reaches
//! that place as the start of an item, where a walk of the whole list
//! would be too; otherwise the first walk goes on to the list's end alone
//! and the second is dropped. Either way the items are those of one walk.

use std::sync::Arc;

use super::super::lexer::json_scan::Scan;
use crate::model::recent_nodes::Starts;
use crate::model::{Node, RecentNodes};
use crate::wire::extender::{RawNode, decode_nodes};

/// Lists with less text after their start are walked on one core: about
/// 500 realistic Nodes, where a half takes a millisecond or more.
const SPLIT_WALK_MIN: usize = 4 << 20;

/// Places past the middle tried as the second half's start: a realistic
/// Node has a few dozen objects after commas (conditions, images).
const SPLIT_TRIES: usize = 256;

/// An item: the kept text it was recognised as, or its own text (still
/// to be decoded).
type Item<'a> = RawNode<'a>;

/// The items of the list (or `null`) where `scan` is, the list passed.
pub(super) fn items<'a>(
    scan: &mut Scan<'a>,
    recent: &RecentNodes,
) -> Option<Vec<(Arc<Node>, RawNode<'a>)>> {
    items_split_from(scan, recent, SPLIT_WALK_MIN)
}

/// [`items`], split in two when at least `split_min` bytes follow the
/// list's start.
fn items_split_from<'a>(
    scan: &mut Scan<'a>,
    recent: &RecentNodes,
    split_min: usize,
) -> Option<Vec<(Arc<Node>, RawNode<'a>)>> {
    if scan.null()? {
        return Some(Vec::new());
    }
    (scan.next_byte()? == b'[').then_some(())?;
    scan.skip_space();
    let items = if scan.text.get(scan.at) == Some(&b']') {
        scan.at += 1;
        Vec::new()
    } else {
        // The index is let go before the new texts are decoded (and kept).
        let (items, end) = walk(scan.text, scan.at, &recent.starts(), split_min)?;
        scan.at = end;
        items
    };
    let unknown: Vec<&str> = items
        .iter()
        .filter_map(|item| match item {
            RawNode::Body(text) => Some(*text),
            RawNode::Kept(_) => None,
        })
        .collect();
    let mut decoded = decode_nodes(&unknown, Some(recent)).ok()?.into_iter();
    items
        .into_iter()
        .map(|item| match item {
            RawNode::Kept(kept) => Some((kept.node().clone(), RawNode::Kept(kept))),
            RawNode::Body(_) => decoded.next(),
        })
        .collect()
}

/// The items from `at` (the first item's start) to the list's `]`, and
/// the place after it; in two halves at once when the list is large and
/// a second start is found.
fn walk<'a>(
    text: &'a [u8],
    at: usize,
    recent: &Starts<'_>,
    split_min: usize,
) -> Option<(Vec<Item<'a>>, usize)> {
    let rest = text.len() - at;
    let second = (rest >= split_min)
        .then(|| second_start(text, at + rest / 2, recent))
        .flatten();
    let Some(second) = second else {
        let (items, end, _) = walk_from(text, at, None, recent)?;
        return Some((items, end));
    };
    super::walk_in_halves(at, second, |start, stop| {
        walk_from(text, start, stop, recent)
    })
}

/// The items from `at` (an item's start) on, and where the walk ended:
/// after the list's `]`, or at `stop` when an item starts there (the
/// `bool`). `None` when the text is not a list of items from there.
fn walk_from<'a>(
    text: &'a [u8],
    at: usize,
    stop: Option<usize>,
    recent: &Starts<'_>,
) -> Option<(Vec<Item<'a>>, usize, bool)> {
    let mut scan = Scan { text, at };
    let mut items = Vec::new();
    loop {
        scan.skip_space();
        let item = match recent.kept_at(&text[scan.at..]) {
            Some(kept) => {
                scan.take(kept.text().len());
                RawNode::Kept(kept)
            }
            None => RawNode::Body(std::str::from_utf8(scan.value()?).ok()?),
        };
        items.push(item);
        match scan.next_byte()? {
            b',' => {
                scan.skip_space();
                if Some(scan.at) == stop {
                    return Some((items, scan.at, true));
                }
            }
            b']' => return Some((items, scan.at, false)),
            _ => return None,
        }
    }
}

/// A place at or after `from` where a kept text begins right after a
/// comma: likely an item's start, which the first half's walk confirms.
fn second_start(text: &[u8], from: usize, recent: &Starts<'_>) -> Option<usize> {
    memchr::memchr_iter(b'{', text.get(from..)?)
        .map(|i| from + i)
        .filter(|&p| text[..p].iter().rev().find(|b| !b.is_ascii_whitespace()) == Some(&b','))
        .take(SPLIT_TRIES)
        .find(|&p| recent.kept_at(&text[p..]).is_some())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// A Node of more than `START` bytes, its name among them: kept texts
    /// are found by those.
    fn node(name: &str) -> Value {
        json!({
            "metadata": {"name": name, "labels": {"zone": "a"}},
            "status": {
                "pad": "x".repeat(300),
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "Other"}],
                "images": [{"names": ["a"]}, {"names": ["b"]}],
            },
        })
    }

    /// (name, kept?) of each item and the place after the list, walked
    /// with splits allowed from `split_min` bytes.
    fn read(
        list: &str,
        recent: &RecentNodes,
        split_min: usize,
    ) -> Option<(Vec<(String, String)>, usize)> {
        let mut scan = Scan {
            text: list.as_bytes(),
            at: 0,
        };
        let items = items_split_from(&mut scan, recent, split_min)?;
        let items = items
            .into_iter()
            .map(|(node, raw)| (node.name().to_string(), raw.text().to_string()))
            .collect();
        Some((items, scan.at))
    }

    /// A list read in halves is the list read in one walk, whatever the
    /// items: all kept, some new, spaced out, a kept text inside another
    /// item (where the second half would start in the middle of one), or
    /// broken past the middle.
    #[test]
    fn halves_read_what_one_walk_reads() {
        let nodes: Vec<String> = (0..40)
            .map(|i| node(&format!("n{i}")).to_string())
            .collect();
        let recent = RecentNodes::default();
        let kept = format!("[{}]", nodes.join(","));
        assert!(read(&kept, &recent, usize::MAX).is_some(), "nodes kept");
        // An item that is most of the list, past its middle a comma and
        // then the text of a kept node.
        let mut inner = nodes[..3].to_vec();
        inner.push(format!(
            r#"{{"metadata":{{"name":"outer"}},"spec":{{"pad":"{}","x":[1,{}]}}}}"#,
            "p".repeat(20_000),
            nodes[26]
        ));
        inner.extend_from_slice(&nodes[3..6]);
        let mut fresh = nodes.clone();
        fresh[30] = node("new").to_string();
        let lists = [
            kept.clone(),
            format!("[ {} ]", nodes.join(" ,\n ")),
            format!("[{}]", inner.join(",")),
            format!("[{}]", fresh.join(",")),
            format!("[{},{{]", nodes.join(",")),
            format!("[{}", nodes.join(",")),
            format!("[{}]x", nodes.join(",")),
            "[]".to_string(),
            "null".to_string(),
        ];
        for list in &lists {
            let whole = read(list, &recent, usize::MAX);
            for split_min in [0, list.len() / 3] {
                assert_eq!(read(list, &recent, split_min), whole, "{list:.60}");
            }
        }
        let inner = lists[2].as_bytes();
        let nested = second_start(inner, inner.len() / 2, &recent.starts()).unwrap();
        assert!(lists[2][..nested].ends_with("[1,"), "starts inside outer");
        let whole = read(&lists[2], &recent, usize::MAX).unwrap();
        assert_eq!(whole.0.len(), 7);
    }

    /// The second start is a kept text after a comma past the middle, and
    /// none is found in a list no text of which is kept.
    #[test]
    fn the_second_half_starts_at_a_kept_item() {
        let nodes: Vec<String> = (0..10)
            .map(|i| node(&format!("n{i}")).to_string())
            .collect();
        let list = format!("[{}]", nodes.join(","));
        let recent = RecentNodes::default();
        assert_eq!(
            second_start(list.as_bytes(), list.len() / 2, &recent.starts()),
            None
        );
        read(&list, &recent, usize::MAX).unwrap();
        let at = second_start(list.as_bytes(), list.len() / 2, &recent.starts()).unwrap();
        assert!(at > list.len() / 2);
        let item = nodes.iter().find(|n| list[at..].starts_with(n.as_str()));
        assert!(item.is_some(), "{:.40} is no item's start", &list[at..]);
    }
}
