//! `kube-arbiter explain` and `/debug/explain`: for one pod, every node's
//! filter verdict (the same first-failure reason `/scheduler/filter` puts in
//! FailedNodes, with NodeResourcesFit asked where kube-scheduler asks it,
//! since a pod is most often pending for room) and, for the feasible nodes,
//! each plugin's normalized score
//! and the final 0..10 score `/scheduler/prioritize` would answer; then a
//! closing line worded like kube-scheduler's FailedScheduling event and,
//! when the pod fits nowhere, whether preemption could make room. Same
//! policy code paths as the endpoints: [`PodFilters`], [`prioritize`] and
//! the preemption policy.

mod named;
mod preemption;
mod render;
mod run;
mod summary;

use std::sync::Arc;

use jiff::Timestamp;
use serde::Serialize;

use crate::cluster::{NodeIdx, PodChange, Snapshot};
use crate::config::Config;
use crate::model::Pod;
use crate::model::requests::pod_requests;
use crate::policy::Code;
use crate::policy::domains::NodeAt;
use crate::policy::filter::PodFilters;
use crate::policy::prioritize::{NodeScores, prioritize};
use crate::policy::resources::{NodeResources, PodRequest};
use crate::policy::taint_toleration::{UNTOLERATED_TAINT_REASON, untolerated_taint};

pub use self::named::{namespaces_named, pods_in_text};
pub use self::preemption::{PreemptionCandidate, PreemptionOutlook};
pub use self::render::{render_json, render_table};
pub use self::run::{ExplainError, Output, Target, parse_pod, run_explain};
pub use self::summary::nodes_available;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// The node a pod taken from the view is already bound to; it is
    /// judged as if it were not placed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_to: Option<String>,
    /// Set when the pod itself is invalid; then `nodes` is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub feasible: usize,
    pub nodes: Vec<NodeExplanation>,
    /// "F/N nodes are available: COUNT REASON, …." as kube-scheduler words
    /// its FailedScheduling event.
    pub summary: String,
    /// Set when the pod fits on no node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption: Option<PreemptionOutlook>,
    /// The requested extended resources DeviceClasses map: checked against
    /// allocatable only on nodes that list them; elsewhere the DRA plugin
    /// decides, which kube-arbiter does not judge.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dra_extended_resources: Vec<DraExtendedResource>,
}

/// An extended resource the pod requests that a DeviceClass maps.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DraExtendedResource {
    pub resource: String,
    pub device_class: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeExplanation {
    pub node: String,
    /// `Feasible`, `Unschedulable` (preemption may help) or
    /// `UnschedulableAndUnresolvable`.
    pub result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The untolerated taint, `key=value:effect`, when `reason` is
    /// TaintToleration's (which does not name it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub taint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<Scores>,
}

/// Normalized 0..100 per plugin (`None`: the plugin does not apply to the
/// pod) and the final 0..10.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Scores {
    pub node_affinity: Option<i64>,
    pub inter_pod_affinity: Option<i64>,
    pub pod_topology_spread: Option<i64>,
    pub total: i64,
}

impl From<NodeScores> for Scores {
    fn from(s: NodeScores) -> Self {
        Self {
            node_affinity: s.node_affinity,
            inter_pod_affinity: s.pod_affinity,
            pod_topology_spread: s.topology_spread,
            total: s.total,
        }
    }
}

/// The pod `namespace/name` as the view holds it, explained; `None` when
/// the view has no such pod. A pod already bound is judged against the
/// view without it, as if it were about to be scheduled again.
pub fn explain_in_view(
    snapshot: &Snapshot,
    namespace: &str,
    name: &str,
    config: &Config,
) -> Option<Explanation> {
    let pod = Arc::clone(&snapshot.pod(namespace, name)?.pod);
    if pod.spec.node_name.is_empty() {
        return Some(explain(snapshot, &pod, config));
    }
    let without = snapshot.with_pod_changes(&[PodChange::delete(namespace, name)]);
    let mut e = explain(&without, &pod, config);
    e.bound_to = Some(pod.spec.node_name.clone());
    Some(e)
}

/// A pod the view has not shown yet, as the API server has it: judged on
/// the view, which does not hold it (so nothing is taken out first).
pub fn explain_unseen(snapshot: &Snapshot, pod: &Pod, config: &Config) -> Explanation {
    let mut e = explain(snapshot, pod, config);
    if !pod.spec.node_name.is_empty() {
        e.bound_to = Some(pod.spec.node_name.clone());
    }
    e
}

/// The taint a row failed on, `key=value:effect` as kubectl writes it:
/// upstream's reason (and so `FailedNodes`) no longer names it since
/// 1.34.2, and people want to know which one.
fn untolerated_taint_named(reason: &str, node: &crate::model::Node, pod: &Pod) -> Option<String> {
    if reason != UNTOLERATED_TAINT_REASON {
        return None;
    }
    let t = untolerated_taint(&node.spec.taints, &pod.spec.tolerations)?;
    Some(format!("{}={}:{}", t.key, t.value, t.effect))
}

/// Judge every node of the snapshot for `pod` (one pass); score the
/// feasible ones; when none is feasible, try preemption on the nodes whose
/// failure eviction might fix.
pub fn explain(snapshot: &Snapshot, pod: &Pod, config: &Config) -> Explanation {
    let settings = &config.scheduling;
    let total = snapshot.nodes().len();
    let invalid = |error: String| Explanation {
        pod: pod.metadata.key(),
        bound_to: None,
        summary: format!("0/{total} nodes are available: {error}."),
        error: Some(error),
        feasible: 0,
        nodes: Vec::new(),
        preemption: None,
        dra_extended_resources: Vec::new(),
    };
    let filters = match PodFilters::prepare(snapshot, pod, settings) {
        Ok(f) => f,
        Err(e) => return invalid(e),
    };
    let mut nodes: Vec<NodeExplanation> = Vec::with_capacity(total);
    let mut feasible: Vec<NodeAt<'_>> = Vec::new();
    let mut unschedulable: Vec<NodeIdx> = Vec::new();
    let request = PodRequest::new(
        pod_requests(pod),
        settings,
        snapshot.extended_resource_classes(),
    );
    for (idx, info) in snapshot.nodes().iter().enumerate() {
        let idx = idx as NodeIdx;
        let at = NodeAt::indexed(&info.node, idx);
        let fit = || {
            let free = &info.node.status.allocatable;
            NodeResources::new(free, info.pods.requested(), info.pods.len())
                .fits(&request.on_node(free))
        };
        let (result, reason) = match filters.check_at_with_fit(at, fit) {
            Ok(()) => {
                feasible.push(at);
                ("Feasible", None)
            }
            Err(f) => {
                let result = match f.code {
                    Code::Unschedulable => {
                        unschedulable.push(idx);
                        "Unschedulable"
                    }
                    Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
                };
                (result, Some(f.reason.to_string()))
            }
        };
        let taint = reason
            .as_deref()
            .and_then(|r| untolerated_taint_named(r, &info.node, pod));
        nodes.push(NodeExplanation {
            node: info.node.name().to_string(),
            result,
            taint,
            reason,
            scores: None,
        });
    }
    let scores = match prioritize(snapshot, pod, &feasible, settings) {
        Ok(s) => s,
        Err(e) => return invalid(e),
    };
    let mut scores = scores.into_iter();
    for n in nodes.iter_mut().filter(|n| n.result == "Feasible") {
        n.scores = scores.next().map(Scores::from);
    }
    let summary = nodes_available(
        feasible.len(),
        total,
        nodes.iter().filter_map(|n| n.reason.as_deref()),
    );
    let preemption = feasible.is_empty().then(|| {
        preemption::outlook(
            snapshot,
            pod,
            filters,
            &unschedulable,
            settings,
            Timestamp::now(),
        )
    });
    Explanation {
        pod: pod.metadata.key(),
        bound_to: None,
        error: None,
        feasible: feasible.len(),
        nodes,
        summary,
        preemption,
        dra_extended_resources: request
            .dra_backed()
            .iter()
            .map(|(resource, class)| DraExtendedResource {
                resource: resource.clone(),
                device_class: class.clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::model::Node;

    fn sample() -> (Snapshot, Pod) {
        let node = |name: &str, zone: &str, taint: bool| -> Node {
            let mut v = json!({"metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}});
            if taint {
                v["spec"] = json!({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]});
            }
            serde_json::from_value(v).unwrap()
        };
        let existing: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1"}}))
        .unwrap();
        let s = Snapshot::build(ClusterObjects {
            nodes: vec![
                node("n1", "a", false),
                node("n2", "b", false),
                node("n3", "c", true),
            ],
            pods: vec![existing],
            ..Default::default()
        });
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web-2", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}]}}))
        .unwrap();
        (s, pod)
    }

    #[test]
    fn explains_every_node_with_reasons_and_scores() {
        let (s, pod) = sample();
        let e = explain(&s, &pod, &Config::default());
        assert_eq!(e.feasible, 2);
        let n3 = e.nodes.iter().find(|n| n.node == "n3").unwrap();
        assert_eq!(n3.result, "UnschedulableAndUnresolvable");
        assert_eq!(
            n3.reason.as_deref(),
            Some("node(s) had untolerated taint(s)")
        );
        assert_eq!(n3.taint.as_deref(), Some("dedicated=gpu:NoSchedule"));
        let n2 = e.nodes.iter().find(|n| n.node == "n2").unwrap();
        let scores = n2.scores.as_ref().unwrap();
        assert_eq!(
            (
                scores.pod_topology_spread,
                scores.node_affinity,
                scores.total
            ),
            (Some(100), None, 10)
        );
    }

    #[test]
    fn table_is_aligned_and_puts_the_best_node_first() {
        let (s, pod) = sample();
        let table = render_table(&explain(&s, &pod, &Config::default()));
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "pod shop/web-2: 2 of 3 nodes feasible");
        assert!(lines[2].starts_with("NODE  RESULT"), "{table}");
        assert!(lines[3].starts_with("n2  "), "{table}");
        let col = lines[2].find("SCORE").unwrap();
        assert_eq!(&lines[3][col..col + 2], "10", "{table}");
        assert!(
            lines[5].ends_with("node(s) had untolerated taint(s) (dedicated=gpu:NoSchedule)"),
            "{table}"
        );
    }

    #[test]
    fn json_output_carries_the_same_facts() {
        let (s, pod) = sample();
        let v: serde_json::Value =
            serde_json::from_str(&render_json(&explain(&s, &pod, &Config::default()))).unwrap();
        assert_eq!(v["pod"], "shop/web-2");
        assert_eq!(v["nodes"][1]["scores"]["podTopologySpread"], 100);
        assert_eq!(v["nodes"][2]["result"], "UnschedulableAndUnresolvable");
        assert_eq!(v["nodes"][2]["reason"], "node(s) had untolerated taint(s)");
        assert_eq!(v["nodes"][2]["taint"], "dedicated=gpu:NoSchedule");
        assert!(v["nodes"][1].get("taint").is_none());
    }

    #[test]
    fn invalid_pod_is_explained_not_panicked() {
        let (s, _) = sample();
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "shop"},
            "spec": {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["x"]}]}}]}}}}))
        .unwrap();
        let e = explain(&s, &pod, &Config::default());
        assert!(e.error.unwrap().starts_with("NodeAffinity:"));
    }

    #[test]
    fn run_explain_reads_yaml_pods_and_json_state() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        std::fs::write(&state, r#"{"kind":"List","items":[{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}]}"#).unwrap();
        let pod = dir.path().join("pod.yaml");
        std::fs::write(
            &pod,
            "metadata:\n  name: p\n  namespace: default\nspec:\n  nodeSelector:\n    disk: ssd\n",
        )
        .unwrap();
        let target = Target::File {
            cluster_state: state,
            pod_file: pod,
        };
        let out = run_explain(target, Output::Table, None).unwrap();
        assert!(out.contains("n1    UnschedulableAndUnresolvable"), "{out}");
        assert!(
            out.contains("didn't match Pod's node affinity/selector"),
            "{out}"
        );
    }

    #[test]
    fn the_summary_counts_reasons_as_the_scheduler_event_does() {
        let (s, pod) = sample();
        let e = explain(&s, &pod, &Config::default());
        assert_eq!(
            e.summary,
            "2/3 nodes are available: 1 node(s) had untolerated taint(s)."
        );
        assert!(e.preemption.is_none(), "the pod fits somewhere");
        let table = render_table(&e);
        assert_eq!(table.lines().last(), Some(e.summary.as_str()), "{table}");
    }

    /// n1 and n2 each run a pod the incoming pod's anti-affinity rejects
    /// (priorities 10 and `n2_priority`); n3 is tainted.
    fn crowded(n2_priority: i32) -> Snapshot {
        let node = |name: &str, taint: bool| -> Node {
            let mut v = json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}});
            if taint {
                v["spec"] = json!({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]});
            }
            serde_json::from_value(v).unwrap()
        };
        let batch = |name: &str, node: &str, priority: i32| -> Pod {
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
                    "labels": {"app": "batch"}},
                "spec": {"nodeName": node, "priority": priority}}))
            .unwrap()
        };
        Snapshot::build(ClusterObjects {
            nodes: vec![node("n1", false), node("n2", false), node("n3", true)],
            pods: vec![batch("b1", "n1", 10), batch("b2", "n2", n2_priority)],
            ..Default::default()
        })
    }

    fn avoiding_batch(priority: i32, policy: Option<&str>) -> Pod {
        let mut v = json!({"metadata": {"name": "api", "namespace": "shop"},
            "spec": {"priority": priority, "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "batch"}}, "topologyKey": "kubernetes.io/hostname"}]}}}});
        if let Some(p) = policy {
            v["spec"]["preemptionPolicy"] = json!(p);
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn preemption_names_the_nodes_where_evictions_make_room() {
        let s = crowded(1000);
        let e = explain(&s, &avoiding_batch(100, None), &Config::default());
        assert_eq!(e.feasible, 0);
        let p = e.preemption.as_ref().unwrap();
        let found: Vec<(&str, &[String])> = p
            .candidates
            .iter()
            .map(|c| (c.node.as_str(), c.victims.as_slice()))
            .collect();
        assert_eq!(
            found,
            [("n1", &["shop/b1".to_string()][..])],
            "b2 outranks the pod"
        );
        assert_eq!(p.nominate.as_deref(), Some("n1"));
        assert_eq!(
            p.message,
            "preemption: evicting lower-priority pods makes room on 1/3 nodes; kube-scheduler would nominate n1."
        );
        let table = render_table(&e);
        assert!(table.contains("* n1: evict 1 pod(s): shop/b1"), "{table}");
    }

    #[test]
    fn preemption_that_cannot_help_is_worded_as_upstream_postfilter() {
        let cases = [
            (
                "no lower-priority pod anywhere",
                crowded(1000),
                avoiding_batch(5, None),
                "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, \
                 2 No preemption victims found for incoming pod.",
            ),
            (
                "the pod may not preempt",
                crowded(1),
                avoiding_batch(100, Some("Never")),
                "preemption: not eligible due to preemptionPolicy=Never.",
            ),
        ];
        for (name, s, pod, want) in cases {
            let e = explain(&s, &pod, &Config::default());
            let p = e.preemption.unwrap();
            assert_eq!(p.message, want, "{name}");
            assert!(p.candidates.is_empty() && p.nominate.is_none(), "{name}");
            assert!(
                e.summary
                    .starts_with("0/3 nodes are available: 1 node(s) had untolerated taint"),
                "{name}: {}",
                e.summary
            );
        }
    }

    #[test]
    fn a_pod_short_of_room_gets_kube_schedulers_reason_and_preemption_frees_it() {
        let node = |name: &str| -> Node {
            serde_json::from_value(json!({"metadata": {"name": name},
                "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}}}))
            .unwrap()
        };
        let pod = |name: &str, node: &str, priority: i32, cpu: &str| -> Pod {
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}")},
                "spec": {"nodeName": node, "priority": priority, "containers": [
                    {"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}))
            .unwrap()
        };
        let s = Snapshot::build(ClusterObjects {
            nodes: vec![node("n1"), node("n2")],
            pods: vec![pod("low", "n1", 1, "2"), pod("high", "n2", 1000, "2")],
            ..Default::default()
        });
        let e = explain(&s, &pod("new", "", 100, "1"), &Config::default());
        for n in &e.nodes {
            assert_eq!(n.result, "Unschedulable", "{}", n.node);
            let reason = n.reason.as_deref().unwrap();
            assert!(reason.starts_with("Insufficient cpu ("), "{reason}");
        }
        assert_eq!(e.summary, "0/2 nodes are available: 2 Insufficient cpu.");
        let p = e.preemption.unwrap();
        assert_eq!(p.nominate.as_deref(), Some("n1"));
        assert_eq!(p.candidates.len(), 1);
        assert_eq!(p.candidates[0].victims, ["shop/low"]);
        let e = explain(&s, &pod("huge", "", 100, "3"), &Config::default());
        assert_eq!(e.nodes[0].result, "UnschedulableAndUnresolvable");
        assert_eq!(
            e.preemption.unwrap().message,
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        );
    }

    /// NodeResourcesFitArgs `ignoredResources`: an extended resource
    /// another extender manages is not checked, so explain judges the pod
    /// on cpu and finds the victim (a GPU-sharing setup: `example.com/vgpu-mem`).
    #[test]
    fn ignored_extended_resources_are_not_checked() {
        let s = Snapshot::build(ClusterObjects {
            nodes: vec![
                serde_json::from_value(json!({"metadata": {"name": "n1"},
                    "status": {"allocatable": {"cpu": "4", "pods": "110"}}}))
                .unwrap(),
            ],
            pods: vec![
                serde_json::from_value(json!({
                    "metadata": {"name": "l", "namespace": "shop", "uid": "uid-l"},
                    "spec": {"nodeName": "n1", "priority": 0, "containers": [
                        {"name": "c", "resources": {"requests": {"cpu": "3"}}}]}}))
                .unwrap(),
            ],
            ..Default::default()
        });
        let h: Pod = serde_json::from_value(json!({
            "metadata": {"name": "h", "namespace": "shop"},
            "spec": {"priority": 1000, "containers": [{"name": "c", "resources": {"requests": {
                "cpu": "2", "example.com/vgpu-mem": "1000"}}}]}}))
        .unwrap();
        let checked = explain(&s, &h, &Config::default());
        assert_eq!(checked.nodes[0].result, "UnschedulableAndUnresolvable");
        let reason = checked.nodes[0].reason.as_deref().unwrap();
        assert!(
            reason.contains("Insufficient example.com/vgpu-mem"),
            "{reason}"
        );

        let config =
            Config::parse("scheduling:\n  ignoredResources: [example.com/vgpu-mem]\n").unwrap();
        let ignored = explain(&s, &h, &config);
        assert_eq!(ignored.nodes[0].result, "Unschedulable");
        assert_eq!(
            ignored.nodes[0].reason.as_deref().unwrap(),
            "Insufficient cpu (requests 2000m, 1000m of 4000m free)"
        );
        assert_eq!(
            ignored.preemption.unwrap().candidates[0].victims,
            ["shop/l"]
        );
    }

    /// 1.37 NodeResourcesFit (`shouldDelegateResourceToDRA`): a resource a
    /// DeviceClass maps is not checked on nodes that do not list it, so
    /// the node that has room for the cpu is feasible, the one that lacks
    /// cpu is short of cpu alone, preemption frees cpu, and the answer
    /// says the device itself was not judged.
    #[test]
    fn dra_extended_resources_are_left_to_dra_where_nodes_do_not_list_them() {
        let node = |name: &str| -> Node {
            serde_json::from_value(json!({"metadata": {"name": name},
                "status": {"allocatable": {"cpu": "4", "pods": "110"}}}))
            .unwrap()
        };
        let low: Pod = serde_json::from_value(json!({
            "metadata": {"name": "l", "namespace": "shop", "uid": "uid-l"},
            "spec": {"nodeName": "n1", "priority": 0, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "3"}}}]}}))
        .unwrap();
        let view = |classes: Vec<crate::model::DeviceClass>, nodes: Vec<Node>| {
            Snapshot::build(ClusterObjects {
                nodes,
                pods: vec![low.clone()],
                device_classes: classes,
                ..Default::default()
            })
        };
        let gpu: crate::model::DeviceClass = serde_json::from_value(json!({
            "metadata": {"name": "gpu.example.com"},
            "spec": {"extendedResourceName": "example.com/gpu"}}))
        .unwrap();
        let h: Pod = serde_json::from_value(json!({
            "metadata": {"name": "h", "namespace": "shop"},
            "spec": {"priority": 1000, "containers": [{"name": "c", "resources": {"requests": {
                "cpu": "2", "example.com/gpu": "1"}}}]}}))
        .unwrap();

        let e = explain(
            &view(vec![gpu.clone()], vec![node("n1"), node("n2")]),
            &h,
            &Config::default(),
        );
        assert_eq!(e.feasible, 1);
        assert_eq!(e.nodes[1].result, "Feasible");
        assert_eq!(
            e.nodes[0].reason.as_deref(),
            Some("Insufficient cpu (requests 2000m, 1000m of 4000m free)")
        );
        assert_eq!(
            e.dra_extended_resources,
            [DraExtendedResource {
                resource: "example.com/gpu".into(),
                device_class: "gpu.example.com".into()
            }]
        );
        let table = render_table(&e);
        assert!(
            table
                .contains("example.com/gpu (DeviceClass gpu.example.com): a DRA extended resource"),
            "{table}"
        );
        assert!(render_json(&e).contains("\"deviceClass\": \"gpu.example.com\""));

        let e = explain(&view(vec![gpu], vec![node("n1")]), &h, &Config::default());
        assert_eq!(e.preemption.unwrap().candidates[0].victims, ["shop/l"]);

        let without = explain(
            &view(vec![], vec![node("n1"), node("n2")]),
            &h,
            &Config::default(),
        );
        assert_eq!(without.feasible, 0);
        assert!(without.dra_extended_resources.is_empty());
        assert_eq!(
            without.summary,
            "0/2 nodes are available: 1 Insufficient cpu, 2 Insufficient example.com/gpu."
        );
    }

    #[test]
    fn a_pod_from_the_view_is_found_by_name_and_judged_without_itself() {
        let mut web: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}}}))
        .unwrap();
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}))
        .unwrap();
        let pending = {
            let mut p = web.clone();
            p.metadata.name = "web-2".into();
            p.spec.node_name.clear();
            p
        };
        web.metadata.uid = "uid-web-1".into();
        let s = Snapshot::build(ClusterObjects {
            nodes: vec![node],
            pods: vec![web, pending],
            ..Default::default()
        });
        let config = Config::default();
        let bound = explain_in_view(&s, "shop", "web-1", &config).unwrap();
        assert_eq!(bound.bound_to.as_deref(), Some("n1"));
        assert_eq!(bound.feasible, 1, "its own node does not count against it");
        let waiting = explain_in_view(&s, "shop", "web-2", &config).unwrap();
        assert_eq!((waiting.bound_to, waiting.feasible), (None, 0));
        assert!(explain_in_view(&s, "shop", "web-3", &config).is_none());
        assert!(explain_in_view(&s, "other", "web-1", &config).is_none());
    }

    #[test]
    fn parsed_pods_need_a_name_and_default_their_namespace() {
        let pod = parse_pod(b"metadata:\n  name: p\n").unwrap();
        assert_eq!(pod.metadata.key(), "default/p");
        let pod = parse_pod(br#" {"metadata": {"name": "p", "namespace": "shop"}}"#).unwrap();
        assert_eq!(pod.metadata.key(), "shop/p");
        let bad: [&[u8]; 5] = [
            b"{}",
            b"metadata: {}\n",
            b"{not json",
            b"- a\n- b\n",
            b"\xff\xfe",
        ];
        for bad in bad {
            assert!(
                parse_pod(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
