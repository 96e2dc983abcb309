//! NodeAffinity: `spec.nodeSelector` plus required node affinity (filter)
//! and preferred node affinity terms (score), as kube-scheduler's
//! NodeAffinity plugin and component-helpers' `nodeaffinity` package decide.
//!
//! Terms are parsed once per pod. A required term that does not parse (bad
//! operator, bad value count, non-integer Gt/Lt operand, invalid label key or
//! value) never matches while the other ORed terms still count; a preferred
//! term that does not parse makes scoring fail for the pod, as upstream's
//! PreScore does.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cluster::{NodeIdx, NodeSet, Snapshot, TopologyIndex};
use crate::model::pod::{NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm};
use crate::model::{Node, Pod};

use super::domains::NodeAt;
use super::{Failure, Verdict};

pub const REASON: &str = "node(s) didn't match Pod's node affinity/selector";

/// The pod's required placement: nodeSelector AND required node affinity.
#[derive(Debug, Clone, Default)]
pub struct RequiredNodeAffinity {
    node_selector: Vec<(String, String)>,
    /// `None`: no required node affinity. `Some(terms)`: ORed terms, where
    /// an empty list (or a list of empty terms) matches no node.
    terms: Option<Vec<ParsedTerm>>,
}

/// One nodeSelectorTerm, or why it never matches.
type ParsedTerm = Result<TermMatcher, String>;

#[derive(Debug, Clone)]
struct TermMatcher {
    labels: Vec<LabelRequirement>,
    fields: Vec<FieldRequirement>,
}

#[derive(Debug, Clone)]
enum LabelRequirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
    Gt(String, i64),
    Lt(String, i64),
}

/// `metadata.name` is the only node field; other keys read as empty.
#[derive(Debug, Clone)]
enum FieldRequirement {
    Equals(String, String),
    NotEquals(String, String),
}

impl RequiredNodeAffinity {
    pub fn of(pod: &Pod) -> Self {
        let required = pod.node_affinity().and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
        Self {
            node_selector: pod
                .spec
                .node_selector
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            terms: required.map(|ns| {
                ns.node_selector_terms
                    .iter()
                    .filter(|t| !is_empty_term(t))
                    .map(parse_term)
                    .collect()
            }),
        }
    }

    /// True when the pod constrains nodes at all (else the plugin is skipped).
    pub fn is_set(&self) -> bool {
        !self.node_selector.is_empty() || self.terms.is_some()
    }

    /// [`Self::matches`] for every node of the view, by [`NodeIdx`]. A label
    /// requirement depends only on the node's value for its key, so it is
    /// decided once per value the view knows (the snapshot's interned
    /// domains) and then read per node from an array: preparing a spread
    /// rule over 5,000 nodes costs lookups, not 5,000 label-map searches.
    pub fn matching_nodes(&self, snapshot: &Snapshot) -> Vec<bool> {
        let nodes = snapshot.nodes();
        let topology = snapshot.topology();
        let mut all = vec![true; nodes.len()];
        for (key, value) in &self.node_selector {
            narrow(&mut all, topology, key, |v| v == Some(value.as_str()));
        }
        let Some(terms) = &self.terms else {
            return all;
        };
        let mut any = vec![false; nodes.len()];
        for term in terms.iter().flatten() {
            let mut this = all.clone();
            for r in &term.labels {
                narrow(&mut this, topology, r.key(), |v| r.matches_value(v));
            }
            if !term.fields.is_empty() {
                for (ok, info) in this.iter_mut().zip(nodes.iter()) {
                    let name = info.node.name();
                    *ok = *ok && (name.is_empty() || term.fields.iter().all(|f| f.matches(name)));
                }
            }
            for (a, t) in any.iter_mut().zip(this) {
                *a |= t;
            }
        }
        any
    }

    /// [`Self::matching_nodes`] for `self` built from `pod` ([`Self::of`]),
    /// decided once per set of node constraints and node labels: the view's
    /// topology index remembers it (see [`crate::cluster::NodeSets`]).
    pub fn admitted_nodes(&self, pod: &Pod, snapshot: &Snapshot) -> Arc<NodeSet> {
        let required = pod.node_affinity().and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
        snapshot
            .topology()
            .node_sets()
            .get_or(&pod.spec.node_selector, required, || {
                self.matching_nodes(snapshot)
            })
    }

    /// `RequiredNodeAffinity.Match`, parse errors counting as "no match".
    pub fn matches(&self, node: &Node) -> bool {
        let labels = &node.metadata.labels;
        if !self
            .node_selector
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
        {
            return false;
        }
        match &self.terms {
            None => true,
            Some(terms) => terms
                .iter()
                .any(|t| t.as_ref().is_ok_and(|t| t.matches(node))),
        }
    }
}

/// Prepared NodeAffinity filter of one pod. It does not depend on other
/// pods, so preemption's what-if needs no add/remove for it.
#[derive(Debug, Clone)]
pub struct NodeAffinityFilter {
    required: RequiredNodeAffinity,
    /// The nodes of the view the filter was prepared on that it admits.
    admitted: Option<Arc<NodeSet>>,
}

/// `None` when the pod has neither a nodeSelector nor required node affinity.
pub fn prepare_filter(pod: &Pod) -> Option<NodeAffinityFilter> {
    let required = RequiredNodeAffinity::of(pod);
    required.is_set().then_some(NodeAffinityFilter {
        required,
        admitted: None,
    })
}

impl NodeAffinityFilter {
    /// Decide every node of `snapshot` now, so judging one of them (by
    /// index, [`Self::filter_at`]) is an array lookup.
    pub fn for_view(mut self, pod: &Pod, snapshot: &Snapshot) -> Self {
        self.admitted = Some(self.required.admitted_nodes(pod, snapshot));
        self
    }

    pub fn filter(&self, node: &Node) -> Verdict {
        self.filter_at(NodeAt::unindexed(node))
    }

    /// [`Self::filter`]; a node of the view given by index is looked up in
    /// what [`Self::for_view`] decided.
    pub fn filter_at(&self, at: NodeAt<'_>) -> Verdict {
        let decided = at
            .idx
            .zip(self.admitted.as_deref())
            .and_then(|(idx, admitted)| admitted.get(idx as usize));
        if decided.unwrap_or_else(|| self.required.matches(at.node())) {
            Ok(())
        } else {
            Err(Failure::unresolvable(REASON))
        }
    }
}

/// Prepared NodeAffinity score: the preferred terms with their weights.
#[derive(Debug, Clone)]
pub struct NodeAffinityScore {
    terms: Vec<(i64, TermMatcher)>,
}

/// `None` when the pod has no preferred term with a weight and a non-empty
/// preference; `Err` when one of them does not parse.
pub fn prepare_score(pod: &Pod) -> Result<Option<NodeAffinityScore>, String> {
    let Some(affinity) = pod.node_affinity() else {
        return Ok(None);
    };
    let mut terms = Vec::new();
    let mut errors = Vec::new();
    for (i, t) in affinity
        .preferred_during_scheduling_ignored_during_execution
        .iter()
        .enumerate()
    {
        if t.weight == 0 || is_empty_term(&t.preference) {
            continue;
        }
        match parse_term(&t.preference) {
            Ok(m) => terms.push((i64::from(t.weight), m)),
            Err(e) => errors.push(format!("preferred node affinity term {i}: {e}")),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("; "));
    }
    Ok((!terms.is_empty()).then_some(NodeAffinityScore { terms }))
}

impl NodeAffinityScore {
    /// Sum of the weights of the preferred terms the node matches.
    pub fn score(&self, node: &Node) -> i64 {
        self.terms
            .iter()
            .filter(|(_, t)| t.matches(node))
            .map(|(w, _)| w)
            .sum()
    }

    /// Upstream's DefaultNormalizeScore: `100 * raw / max`, all 0 when max is 0.
    pub fn normalize(raw: &[i64]) -> Vec<i64> {
        let max = raw.iter().copied().max().unwrap_or(0);
        raw.iter()
            .map(|&r| if max == 0 { 0 } else { 100 * r / max })
            .collect()
    }
}

fn is_empty_term(t: &NodeSelectorTerm) -> bool {
    t.match_expressions.is_empty() && t.match_fields.is_empty()
}

fn parse_term(t: &NodeSelectorTerm) -> ParsedTerm {
    Ok(TermMatcher {
        labels: t
            .match_expressions
            .iter()
            .map(parse_label_requirement)
            .collect::<Result<_, _>>()?,
        fields: t
            .match_fields
            .iter()
            .map(parse_field_requirement)
            .collect::<Result<_, _>>()?,
    })
}

/// The checks `labels.NewRequirement` makes on a node selector requirement.
fn parse_label_requirement(r: &NodeSelectorRequirement) -> Result<LabelRequirement, String> {
    use NodeSelectorOperator as Op;
    validate_label_key(&r.key)?;
    if let Some(bad) = r.values.iter().find(|v| !is_valid_label_value(v)) {
        return Err(format!("key {:?}: invalid label value {bad:?}", r.key));
    }
    let key = r.key.clone();
    let values = || -> Result<Vec<String>, String> {
        if r.values.is_empty() {
            Err(format!(
                "key {:?}: operator {:?} needs values",
                r.key, r.operator
            ))
        } else {
            Ok(r.values.clone())
        }
    };
    let no_values = || -> Result<(), String> {
        if r.values.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "key {:?}: operator {:?} takes no values",
                r.key, r.operator
            ))
        }
    };
    let integer = || -> Result<i64, String> {
        match r.values.as_slice() {
            [v] => v.parse::<i64>().map_err(|_| {
                format!(
                    "key {:?}: operator {:?} needs an integer, got {v:?}",
                    r.key, r.operator
                )
            }),
            _ => Err(format!(
                "key {:?}: operator {:?} needs exactly one value",
                r.key, r.operator
            )),
        }
    };
    Ok(match r.operator {
        Op::In => LabelRequirement::In(key, values()?),
        Op::NotIn => LabelRequirement::NotIn(key, values()?),
        Op::Exists => no_values().map(|()| LabelRequirement::Exists(key))?,
        Op::DoesNotExist => no_values().map(|()| LabelRequirement::DoesNotExist(key))?,
        Op::Gt => LabelRequirement::Gt(key, integer()?),
        Op::Lt => LabelRequirement::Lt(key, integer()?),
        Op::Invalid => return Err(format!("key {:?}: unsupported operator", r.key)),
    })
}

fn parse_field_requirement(r: &NodeSelectorRequirement) -> Result<FieldRequirement, String> {
    let value = match r.values.as_slice() {
        [v] => v.clone(),
        _ => return Err(format!("field {:?}: values must have one element", r.key)),
    };
    match r.operator {
        NodeSelectorOperator::In => Ok(FieldRequirement::Equals(r.key.clone(), value)),
        NodeSelectorOperator::NotIn => Ok(FieldRequirement::NotEquals(r.key.clone(), value)),
        op => Err(format!(
            "field {:?}: operator {op:?} not supported (In, NotIn)",
            r.key
        )),
    }
}

impl TermMatcher {
    fn matches(&self, node: &Node) -> bool {
        let labels = &node.metadata.labels;
        // Upstream skips field requirements for a node without a name.
        let fields_ok =
            node.name().is_empty() || self.fields.iter().all(|f| f.matches(node.name()));
        fields_ok && self.labels.iter().all(|r| r.matches(labels))
    }
}

/// Clear `ok[idx]` for every node whose value for `key` (`None`: no such
/// label) `matches` refuses, deciding once per distinct value.
fn narrow(
    ok: &mut [bool],
    topology: &TopologyIndex,
    key: &str,
    matches: impl Fn(Option<&str>) -> bool,
) {
    let Some(domains) = topology.key(key) else {
        if !matches(None) {
            ok.fill(false);
        }
        return;
    };
    let by_value: Vec<bool> = domains.iter().map(|(v, _)| matches(Some(v))).collect();
    let missing = matches(None);
    for (idx, ok) in ok.iter_mut().enumerate() {
        if *ok {
            *ok = domains
                .of_node(idx as NodeIdx)
                .map_or(missing, |id| by_value[id as usize]);
        }
    }
}

impl LabelRequirement {
    fn key(&self) -> &str {
        match self {
            Self::In(k, _)
            | Self::NotIn(k, _)
            | Self::Exists(k)
            | Self::DoesNotExist(k)
            | Self::Gt(k, _)
            | Self::Lt(k, _) => k,
        }
    }

    /// The requirement on a node whose value for the key is `value`.
    fn matches_value(&self, value: Option<&str>) -> bool {
        let int = || value.and_then(|v| v.parse::<i64>().ok());
        match self {
            Self::In(_, vs) => value.is_some_and(|v| vs.iter().any(|w| w == v)),
            Self::NotIn(_, vs) => value.is_none_or(|v| !vs.iter().any(|w| w == v)),
            Self::Exists(_) => value.is_some(),
            Self::DoesNotExist(_) => value.is_none(),
            Self::Gt(_, n) => int().is_some_and(|v| v > *n),
            Self::Lt(_, n) => int().is_some_and(|v| v < *n),
        }
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let int = |k: &String| labels.get(k).and_then(|v| v.parse::<i64>().ok());
        match self {
            Self::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Self::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Self::Exists(k) => labels.contains_key(k),
            Self::DoesNotExist(k) => !labels.contains_key(k),
            Self::Gt(k, n) => int(k).is_some_and(|v| v > *n),
            Self::Lt(k, n) => int(k).is_some_and(|v| v < *n),
        }
    }
}

impl FieldRequirement {
    fn matches(&self, node_name: &str) -> bool {
        let field = |k: &str| if k == "metadata.name" { node_name } else { "" };
        match self {
            Self::Equals(k, v) => field(k) == v,
            Self::NotEquals(k, v) => field(k) != v,
        }
    }
}

/// A qualified name: optional DNS-subdomain prefix and `/`, then a name of
/// at most 63 alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
fn validate_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            })
    });
    if prefix_ok && !name.is_empty() && is_valid_label_value(name) {
        Ok(())
    } else {
        Err(format!("invalid label key {key:?}"))
    }
}

fn is_valid_label_value(v: &str) -> bool {
    let b = v.as_bytes();
    v.is_empty()
        || (b.len() <= 63
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, labels: serde_json::Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
    }

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}))
            .unwrap()
    }

    fn required(terms: serde_json::Value) -> Pod {
        pod(json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}))
    }

    fn passes(p: &Pod, n: &Node) -> bool {
        prepare_filter(p).is_none_or(|f| f.filter(n).is_ok())
    }

    /// The admitted set is remembered for as long as node labels hold, and
    /// decided again when they change.
    #[test]
    fn admitted_nodes_follow_label_changes_and_survive_pod_changes() {
        use crate::cluster::{ClusterObjects, PodChange};
        let a = node("a", json!({"zone": "z1"}));
        let b = node("b", json!({"zone": "z2"}));
        let s = Snapshot::build(ClusterObjects {
            nodes: vec![a, b.clone()],
            ..Default::default()
        });
        let p = required(json!([{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["z1"]}]}]));
        let required = RequiredNodeAffinity::of(&p);
        let members = |s: &Snapshot| required.admitted_nodes(&p, s).members().to_vec();
        assert_eq!(members(&s), [0]);

        let with_pod = s.with_pod_changes(&[PodChange::upsert(Arc::new(pod(json!({}))))]);
        assert!(Arc::ptr_eq(
            &required.admitted_nodes(&p, &s),
            &required.admitted_nodes(&p, &with_pod)
        ));

        let mut moved = b.clone();
        moved.metadata.labels.insert("zone".into(), "z1".into());
        let relabeled = with_pod.with_node_changes(&[Arc::new(moved)]).unwrap();
        assert_eq!(members(&relabeled), [0, 1]);
        assert_eq!(members(&with_pod), [0], "the earlier view keeps its set");

        let mut tainted = b;
        tainted.spec.unschedulable = true;
        let same_labels = with_pod.with_node_changes(&[Arc::new(tainted)]).unwrap();
        assert!(Arc::ptr_eq(
            &required.admitted_nodes(&p, &with_pod),
            &required.admitted_nodes(&p, &same_labels)
        ));
    }

    #[test]
    fn required_node_affinity_table() {
        let labels = json!({"foo": "bar", "zone": "z1", "cpus": "8", "text": "abc"});
        let cases: Vec<(&str, Pod, bool)> = vec![
            ("no constraints passes everywhere", pod(json!({})), true),
            (
                "node selector matches",
                pod(json!({"nodeSelector": {"foo": "bar"}})),
                true,
            ),
            (
                "node selector with other value fails",
                pod(json!({"nodeSelector": {"foo": "baz"}})),
                false,
            ),
            (
                "node selector key missing fails",
                pod(json!({"nodeSelector": {"gpu": "yes"}})),
                false,
            ),
            (
                "In matches",
                required(
                    json!([{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["x", "bar"]}]}]),
                ),
                true,
            ),
            (
                "NotIn matches absent key",
                required(
                    json!([{"matchExpressions": [{"key": "absent", "operator": "NotIn", "values": ["x"]}]}]),
                ),
                true,
            ),
            (
                "NotIn rejects listed value",
                required(
                    json!([{"matchExpressions": [{"key": "foo", "operator": "NotIn", "values": ["bar"]}]}]),
                ),
                false,
            ),
            (
                "Exists matches",
                required(json!([{"matchExpressions": [{"key": "foo", "operator": "Exists"}]}])),
                true,
            ),
            (
                "DoesNotExist rejects present key",
                required(
                    json!([{"matchExpressions": [{"key": "foo", "operator": "DoesNotExist"}]}]),
                ),
                false,
            ),
            (
                "Gt compares integers",
                required(
                    json!([{"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["4"]}]}]),
                ),
                true,
            ),
            (
                "Gt is strict",
                required(
                    json!([{"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["8"]}]}]),
                ),
                false,
            ),
            (
                "Lt compares integers",
                required(
                    json!([{"matchExpressions": [{"key": "cpus", "operator": "Lt", "values": ["10"]}]}]),
                ),
                true,
            ),
            (
                "Gt with non-integer node label fails",
                required(
                    json!([{"matchExpressions": [{"key": "text", "operator": "Gt", "values": ["1"]}]}]),
                ),
                false,
            ),
            (
                "Gt with missing key fails",
                required(
                    json!([{"matchExpressions": [{"key": "absent", "operator": "Gt", "values": ["1"]}]}]),
                ),
                false,
            ),
            (
                "Gt with non-integer operand never matches",
                required(
                    json!([{"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["a"]}]}]),
                ),
                false,
            ),
            (
                "Gt with two values never matches",
                required(
                    json!([{"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["1", "2"]}]}]),
                ),
                false,
            ),
            (
                "bad term does not hide a good ORed term",
                required(json!([
                {"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["a"]}]},
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}])),
                true,
            ),
            (
                "unknown operator never matches",
                required(
                    json!([{"matchExpressions": [{"key": "foo", "operator": "Foo", "values": ["bar"]}]}]),
                ),
                false,
            ),
            (
                "NotIn without values never matches",
                required(
                    json!([{"matchExpressions": [{"key": "absent", "operator": "NotIn", "values": []}]}]),
                ),
                false,
            ),
            (
                "invalid label key never matches",
                required(
                    json!([{"matchExpressions": [{"key": "a b", "operator": "DoesNotExist"}]}]),
                ),
                false,
            ),
            (
                "expressions in a term are ANDed",
                required(json!([{"matchExpressions": [
                {"key": "foo", "operator": "In", "values": ["bar"]},
                {"key": "zone", "operator": "In", "values": ["z2"]}]}])),
                false,
            ),
            (
                "terms are ORed",
                required(json!([
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]},
                {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}])),
                true,
            ),
            (
                "empty term list matches nothing",
                required(json!([])),
                false,
            ),
            (
                "only empty terms match nothing",
                required(json!([{}, {"matchExpressions": []}])),
                false,
            ),
            (
                "matchFields name In matches",
                required(
                    json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]),
                ),
                true,
            ),
            (
                "matchFields name In other node fails",
                required(
                    json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]),
                ),
                false,
            ),
            (
                "matchFields name NotIn other node passes",
                required(
                    json!([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n2"]}]}]),
                ),
                true,
            ),
            (
                "matchFields with two values never matches",
                required(
                    json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]}]),
                ),
                false,
            ),
            (
                "matchFields Exists is not supported",
                required(
                    json!([{"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}]),
                ),
                false,
            ),
            (
                "matchFields and matchExpressions are ANDed",
                required(json!([{
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
                "matchExpressions": [{"key": "foo", "operator": "In", "values": ["nope"]}]}])),
                false,
            ),
            (
                "node selector and affinity are ANDed",
                {
                    let mut p = required(
                        json!([{"matchExpressions": [{"key": "foo", "operator": "Exists"}]}]),
                    );
                    p.spec.node_selector.insert("zone".into(), "z2".into());
                    p
                },
                false,
            ),
        ];
        let n = node("n1", labels);
        for (name, p, want) in cases {
            assert_eq!(passes(&p, &n), want, "{name}");
        }
    }

    #[test]
    fn failure_is_unresolvable_with_upstream_reason() {
        let p = pod(json!({"nodeSelector": {"foo": "bar"}}));
        let err = prepare_filter(&p)
            .unwrap()
            .filter(&node("n", json!({})))
            .unwrap_err();
        assert_eq!(err.code, super::super::Code::UnschedulableAndUnresolvable);
        assert_eq!(&*err.reason, REASON);
    }

    fn preferred(terms: serde_json::Value) -> Pod {
        pod(
            json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}}),
        )
    }

    #[test]
    fn preferred_terms_sum_matching_weights_and_normalize_to_max() {
        let p = preferred(json!([
            {"weight": 2, "preference": {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}},
            {"weight": 4, "preference": {"matchExpressions": [{"key": "key", "operator": "In", "values": ["value"]}]}},
            {"weight": 5, "preference": {"matchExpressions": [{"key": "az", "operator": "In", "values": ["az1"]}]}},
        ]));
        let s = prepare_score(&p).unwrap().unwrap();
        let nodes = [
            node("n1", json!({"foo": "bar"})),
            node("n2", json!({"key": "value"})),
            node("n3", json!({"foo": "bar", "key": "value", "az": "az1"})),
        ];
        let raw: Vec<i64> = nodes.iter().map(|n| s.score(n)).collect();
        assert_eq!(raw, [2, 4, 11]);
        assert_eq!(NodeAffinityScore::normalize(&raw), [18, 36, 100]);
    }

    #[test]
    fn no_node_matching_a_preference_scores_zero_everywhere() {
        assert_eq!(NodeAffinityScore::normalize(&[0, 0]), [0, 0]);
    }

    #[test]
    fn zero_weight_and_empty_preferences_are_ignored() {
        let p = preferred(json!([
            {"weight": 0, "preference": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}},
            {"weight": 3, "preference": {}},
        ]));
        assert!(prepare_score(&p).unwrap().is_none());
        assert!(prepare_score(&pod(json!({}))).unwrap().is_none());
    }

    #[test]
    fn preferred_term_that_does_not_parse_fails_scoring() {
        let p = preferred(json!([
            {"weight": 1, "preference": {"matchExpressions": [{"key": "foo", "operator": "Lt", "values": ["x"]}]}},
        ]));
        let err = prepare_score(&p).unwrap_err();
        assert!(err.contains("integer"), "{err}");
    }

    #[test]
    fn preferred_match_fields_score_by_node_name() {
        let p = preferred(json!([
            {"weight": 7, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}},
        ]));
        let s = prepare_score(&p).unwrap().unwrap();
        assert_eq!(s.score(&node("n1", json!({}))), 0);
        assert_eq!(s.score(&node("n2", json!({}))), 7);
    }

    #[test]
    fn label_keys_and_values_are_validated_like_the_apiserver() {
        assert!(validate_label_key("topology.kubernetes.io/zone").is_ok());
        assert!(validate_label_key("zone").is_ok());
        assert!(validate_label_key("/zone").is_err());
        assert!(validate_label_key("Upper.Case/zone").is_err());
        assert!(validate_label_key("-a").is_err());
        assert!(is_valid_label_value(""));
        assert!(!is_valid_label_value("-1"));
        assert!(!is_valid_label_value(&"a".repeat(64)));
    }

    mod for_every_node {
        use proptest::prelude::*;
        use serde_json::{Value, json};

        use super::*;
        use crate::cluster::ClusterObjects;

        const KEYS: [&str; 3] = ["zone", "size", "pool"];
        const VALUES: [&str; 4] = ["a", "b", "3", "12"];

        fn requirement() -> impl Strategy<Value = Value> {
            let ops =
                prop::sample::select(vec!["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]);
            (
                prop::sample::select(KEYS.to_vec()),
                ops,
                prop::collection::vec(prop::sample::select(VALUES.to_vec()), 0..3),
            )
                .prop_map(|(key, op, values)| {
                    let values = match op {
                        "Exists" | "DoesNotExist" => vec![],
                        "Gt" | "Lt" => vec!["5"],
                        _ => values,
                    };
                    json!({"key": key, "operator": op, "values": values})
                })
        }

        fn term() -> impl Strategy<Value = Value> {
            (prop::collection::vec(requirement(), 0..3), prop::option::of(0usize..6)).prop_map(
                |(expressions, name)| match name {
                    Some(n) => json!({"matchExpressions": expressions, "matchFields": [
                        {"key": "metadata.name", "operator": if n % 2 == 0 { "In" } else { "NotIn" },
                         "values": [format!("n{n}")]}]}),
                    None => json!({"matchExpressions": expressions}),
                },
            )
        }

        proptest! {
            /// Deciding per label value over the whole view gives, node by
            /// node, what matching each node's labels gives.
            #[test]
            fn matching_nodes_agrees_with_matches(
                labels in prop::collection::vec(prop::collection::btree_map(
                    prop::sample::select(KEYS.to_vec()), prop::sample::select(VALUES.to_vec()), 0..3), 1..8),
                selector in prop::collection::btree_map(
                    prop::sample::select(KEYS.to_vec()), prop::sample::select(VALUES.to_vec()), 0..2),
                terms in prop::option::of(prop::collection::vec(term(), 0..3)),
            ) {
                let nodes: Vec<Node> = labels.iter().enumerate()
                    .map(|(i, l)| node(&format!("n{i}"), json!(l)))
                    .collect();
                let mut spec = json!({"nodeSelector": selector});
                if let Some(terms) = terms {
                    spec["affinity"] = json!({"nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
                }
                let required = RequiredNodeAffinity::of(&pod(spec));
                let s = Snapshot::build(ClusterObjects { nodes, ..Default::default() });
                let all = required.matching_nodes(&s);
                prop_assert_eq!(all.len(), s.nodes().len());
                for (info, got) in s.nodes().iter().zip(all) {
                    prop_assert_eq!(got, required.matches(&info.node), "{}", info.node.name());
                }
            }
        }
    }
}
