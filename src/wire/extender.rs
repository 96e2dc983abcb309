//! Wire types of `k8s.io/kube-scheduler/extender/v1` (ExtenderArgs,
//! ExtenderFilterResult, HostPriority). Their JSON keys are the Go field
//! names; Go's decoder matches keys case-insensitively, so the top-level
//! keys (and the NodeList's `items`) are accepted in any case here too.
//!
//! In full `Nodes` mode each node is kept twice: decoded as our lean
//! [`Node`] for the policies, and as the request's raw JSON text (borrowed,
//! not copied) so the answer can hand kube-scheduler back its own objects.
//! The serde reading here is what tells a body it refuses what is wrong;
//! `extender_read` picks it or the reading in parts for each body.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{Error as _, SerializeMap};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::model::shared::unpooled;
use crate::model::{Kept, Node, Pod, Reason, RecentNodes};

/// `ExtenderArgs`: the pod and its candidates, either as full Nodes or as
/// names (`nodeCacheCapable: true`). The pod is shared so the in-flight
/// ledger keeps the one the handler decoded.
#[derive(Debug, Default)]
pub struct ExtenderArgs<'a> {
    pub pod: Option<Arc<Pod>>,
    pub nodes: Option<NodeList<'a>>,
    pub node_names: Option<Vec<NodeName<'a>>>,
    /// Every name in `node_names` is its own JSON string (no `"`, `\` or
    /// control character): the large-body reader checked the whole array
    /// at once (`extender_read`). False when not known.
    pub node_names_plain: bool,
}

/// A node name as the request sent it: borrowed from the body (no copy, no
/// allocation per name) unless it had to be unescaped.
pub type NodeName<'a> = Cow<'a, str>;

/// A v1 NodeList: each item decoded and its raw JSON text.
#[derive(Debug, Default)]
pub struct NodeList<'a> {
    pub items: Vec<(Arc<Node>, RawNode<'a>)>,
}

/// One node's JSON text as the request carries it. A [`Node`] was decoded
/// from it, so it is one valid JSON value; an answer writes it back
/// verbatim. An item recognised as a text kept from an earlier request is
/// that kept copy, equal to the body's bytes there: holding it spares
/// those bytes a UTF-8 check (tens of MB in a Nodes-mode body).
#[derive(Debug, Clone)]
pub enum RawNode<'a> {
    Body(&'a str),
    Kept(Kept),
}

impl RawNode<'_> {
    pub fn text(&self) -> &str {
        match self {
            Self::Body(text) => text,
            Self::Kept(kept) => kept.text(),
        }
    }
}

impl PartialEq for RawNode<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

impl Eq for RawNode<'_> {}

impl Serialize for RawNode<'_> {
    /// The text as a `RawValue`, which serde_json writes as is. Making one
    /// reads the text once more; the answer's own writer
    /// (`filter_answer`) copies the text instead.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(self.text()).map_err(S::Error::custom)?;
        raw.serialize(s)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ExtenderArgs<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ArgsVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ArgsVisitor<'a> {
            type Value = ExtenderArgs<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an ExtenderArgs object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut args = ExtenderArgs::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key.eq_ignore_ascii_case("pod") {
                        args.pod = map
                            .next_value::<Option<Pod>>()
                            .map_err(|e| de::Error::custom(format!("Pod: {e}")))?
                            .map(Arc::new);
                    } else if key.eq_ignore_ascii_case("nodes") {
                        args.nodes = map.next_value()?;
                    } else if key.eq_ignore_ascii_case("nodenames") {
                        args.node_names = map.next_value::<Option<Names<'a>>>()?.map(|n| n.0);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(args)
            }
        }
        d.deserialize_map(ArgsVisitor(std::marker::PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for NodeList<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ListVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ListVisitor<'a> {
            type Value = NodeList<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a v1 NodeList object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut list = NodeList::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key.eq_ignore_ascii_case("items") {
                        list.items = map.next_value::<Option<Items<'a>>>()?.unwrap_or_default().0;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(list)
            }
        }
        d.deserialize_map(ListVisitor(std::marker::PhantomData))
    }
}

/// `NodeNames`, each borrowed from the body when it can be.
pub(super) struct Names<'a>(pub(super) Vec<NodeName<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for Names<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NamesVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for NamesVisitor<'a> {
            type Value = Names<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of node names")
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
                let mut names = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(name) = seq.next_element::<Name<'a>>()? {
                    names.push(name.0);
                }
                Ok(Names(names))
            }
        }
        d.deserialize_seq(NamesVisitor(std::marker::PhantomData))
    }
}

struct Name<'a>(NodeName<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for Name<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NameVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for NameVisitor<'a> {
            type Value = Name<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a node name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(v)))
            }
        }
        d.deserialize_str(NameVisitor(std::marker::PhantomData))
    }
}

#[derive(Default)]
struct Items<'a>(Vec<(Arc<Node>, RawNode<'a>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Items<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ItemsVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ItemsVisitor<'a> {
            type Value = Items<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of Nodes")
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
                let mut raws = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                    raws.push(raw.get());
                }
                decode_nodes(&raws, None)
                    .map(Items)
                    .map_err(de::Error::custom)
            }
        }
        d.deserialize_seq(ItemsVisitor(std::marker::PhantomData))
    }
}

/// Below this many nodes one thread decodes them all.
pub(super) const PARALLEL_DECODE_MIN: usize = 512;

/// Decode every node of a NodeList, each with its text. A full 5,000-node
/// list is tens of MB of JSON, mostly fields we skip; decoding is the bulk
/// of a Nodes-mode request, so large lists are split over the machine's
/// cores, and with `recent` a text sent before is not decoded again
/// (`model::recent_nodes`). Their parts are not pooled. The error names the
/// first bad item (the same error with or without `recent`: a kept node
/// is one that decoded).
pub(super) fn decode_nodes<'a>(
    texts: &[&'a str],
    recent: Option<&RecentNodes>,
) -> Result<Vec<(Arc<Node>, RawNode<'a>)>, String> {
    let parts = crate::parallel::map_parts(texts, PARALLEL_DECODE_MIN, |offset, part| {
        unpooled(|| match recent {
            Some(recent) => recent.decode(part),
            None => decode_each(part),
        })
        .map_err(|(i, e)| format!("Nodes.items[{}]: {e}", offset + i))
    })?;
    Ok(parts
        .into_iter()
        .flatten()
        .zip(texts)
        .map(|(node, &text)| (node, RawNode::Body(text)))
        .collect())
}

/// Each of `texts` decoded by serde_json; the first error with its place.
fn decode_each(texts: &[&str]) -> Result<Vec<Arc<Node>>, (usize, serde_json::Error)> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            serde_json::from_str::<Node>(text)
                .map(Arc::new)
                .map_err(|e| (i, e))
        })
        .collect()
}

/// `ExtenderFilterResult`, answered in the mode asked: `Nodes` (the
/// request's own objects) or `NodeNames`.
#[derive(Debug, Default, Serialize)]
pub struct ExtenderFilterResult<'a> {
    #[serde(rename = "Nodes")]
    pub nodes: Option<NodeListOut<'a>>,
    #[serde(rename = "NodeNames")]
    pub node_names: Option<Vec<NodeName<'a>>>,
    #[serde(rename = "FailedNodes")]
    pub failed_nodes: FailedNodes<'a>,
    #[serde(rename = "FailedAndUnresolvableNodes")]
    pub failed_and_unresolvable_nodes: FailedNodes<'a>,
    #[serde(rename = "Error")]
    pub error: String,
    /// Every node name in the answer is its own JSON string (they are the
    /// request's names, read as plain: `ExtenderArgs::node_names_plain`),
    /// so the encoder copies them without checking each again: that check
    /// was ~40 % of encoding a 5,000-name answer.
    #[serde(skip)]
    pub node_names_plain: bool,
}

impl<'a> ExtenderFilterResult<'a> {
    /// An extender-level failure: no candidate judged, `Error` set.
    pub fn error(message: String) -> Self {
        Self {
            error: message,
            ..Default::default()
        }
    }

    /// At least one candidate passed (by name or as a Node).
    pub fn has_feasible_node(&self) -> bool {
        self.node_names.as_ref().is_some_and(|n| !n.is_empty())
            || self.nodes.as_ref().is_some_and(|n| !n.items.is_empty())
    }

    /// `later`'s failures after this answer's, each in its map (the
    /// candidates `later` judged came after these).
    pub fn append_failures(&mut self, later: Self) {
        self.failed_nodes.append(later.failed_nodes);
        self.failed_and_unresolvable_nodes
            .append(later.failed_and_unresolvable_nodes);
    }
}

/// Node name → reason, encoded as a JSON object in the order the nodes
/// were asked about. A list, not a map: with thousands of failed nodes,
/// ordered-map inserts were a visible share of a filter answer, and the
/// names are unique already (kube-scheduler sends each node once).
/// Reasons are shared texts: the nodes of one failing domain hold one.
///
/// The members may also be written as JSON already (`write_members`, in
/// wire/filter_answer.rs), where they were judged: each core of a split
/// check writes its own, and the answer sends those runs as they are.
#[derive(Debug)]
pub struct FailedNodes<'a> {
    pub(super) list: Vec<(NodeName<'a>, Reason)>,
    /// Every member of `list` as JSON text (`"node":"reason"` with commas
    /// between), in runs, in order; `None` when some are not written.
    pub(super) written: Option<Vec<bytes::Bytes>>,
}

impl Default for FailedNodes<'_> {
    fn default() -> Self {
        Self {
            list: Vec::new(),
            written: Some(Vec::new()),
        }
    }
}

impl<'a> FailedNodes<'a> {
    pub fn insert(&mut self, node: NodeName<'a>, reason: impl Into<Reason>) {
        self.list.push((node, reason.into()));
        self.written = None;
    }

    /// Room for `additional` more (thousands of failed nodes grew the list,
    /// and copied it, a dozen times).
    pub fn reserve(&mut self, additional: usize) {
        self.list.reserve(additional);
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn contains_key(&self, node: &str) -> bool {
        self.list.iter().any(|(n, _)| n == node)
    }

    /// Every (node, reason), in the order recorded.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.list.iter().map(|(n, r)| (&**n, &**r))
    }

    pub fn get(&self, node: &str) -> Option<&str> {
        self.list.iter().find(|(n, _)| n == node).map(|(_, r)| &**r)
    }

    /// `later`'s members after these; written runs stay written when both
    /// lists are.
    fn append(&mut self, mut later: Self) {
        self.list.append(&mut later.list);
        self.written = match (self.written.take(), later.written) {
            (Some(mut runs), Some(more)) => {
                runs.extend(more);
                Some(runs)
            }
            _ => None,
        };
    }
}

impl Serialize for FailedNodes<'_> {
    /// A plain map in recorded order. The server writes filter answers with
    /// `ExtenderFilterResult::to_json` (wire/filter_answer.rs, which encodes
    /// each shared reason once); this is the reference it is tested against.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.list.len()))?;
        for (node, reason) in &self.list {
            map.serialize_entry(node, &**reason)?;
        }
        map.end()
    }
}

#[derive(Debug, Default, Serialize)]
pub struct NodeListOut<'a> {
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: BTreeMap<String, String>,
    pub items: Vec<RawNode<'a>>,
}

impl<'a> NodeListOut<'a> {
    pub fn new(items: Vec<RawNode<'a>>) -> Self {
        Self {
            api_version: "v1",
            kind: "NodeList",
            metadata: BTreeMap::new(),
            items,
        }
    }
}

/// One entry of a `HostPriorityList`. The host is the request's own text
/// where it can be (NodeNames): a copy per node was an allocation and a
/// free per candidate of every prioritize.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPriority<'a> {
    #[serde(rename = "Host")]
    pub host: NodeName<'a>,
    #[serde(rename = "Score")]
    pub score: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_decode_in_any_case() {
        for body in [
            r#"{"Pod":{"metadata":{"name":"p"}},"NodeNames":["a","b"]}"#,
            r#"{"pod":{"metadata":{"name":"p"}},"nodenames":["a","b"]}"#,
            r#"{"POD":{"metadata":{"name":"p"}},"nodeNames":["a","b"],"extra":1}"#,
        ] {
            let args = serde_json::from_str::<ExtenderArgs>(body).unwrap();
            assert_eq!(args.pod.unwrap().metadata.name, "p", "{body}");
            assert_eq!(args.node_names.unwrap(), ["a", "b"]);
            assert!(args.nodes.is_none());
        }
    }

    #[test]
    fn nodes_mode_keeps_each_item_raw_and_decoded() {
        let body = r#"{"pod":{},"nodes":{"kind":"NodeList","Items":[
            {"metadata":{"name":"n1","labels":{"z":"a"}},"status":{"images":[{"names":["x"]}]}},
            {"metadata":{"name":"n2"}}]}}"#;
        let args = serde_json::from_str::<ExtenderArgs>(body).unwrap();
        let items = args.nodes.unwrap().items;
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].0.label("z"), Some("a"));
        assert!(items[0].1.text().contains("images"));
        assert_eq!(items[1].0.name(), "n2");
    }

    #[test]
    fn null_fields_are_absent() {
        let args = serde_json::from_slice::<ExtenderArgs>(
            br#"{"Pod":null,"Nodes":null,"NodeNames":null}"#,
        )
        .unwrap();
        assert!(args.pod.is_none() && args.nodes.is_none() && args.node_names.is_none());
    }

    #[test]
    fn bad_node_item_names_its_index() {
        let err = serde_json::from_slice::<ExtenderArgs>(
            br#"{"Nodes":{"items":[{"metadata":{"name":"ok"}},{"metadata":{"name":5}}]}}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("Nodes.items[1]"), "{err}");
    }

    #[test]
    fn results_use_go_field_names() {
        let r = ExtenderFilterResult {
            node_names: Some(vec!["a".into()]),
            ..Default::default()
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"Nodes": null, "NodeNames": ["a"], "FailedNodes": {},
                               "FailedAndUnresolvableNodes": {}, "Error": ""})
        );
        let h = serde_json::to_string(&HostPriority {
            host: "a".into(),
            score: 3,
        })
        .unwrap();
        assert_eq!(h, r#"{"Host":"a","Score":3}"#);
    }
}
