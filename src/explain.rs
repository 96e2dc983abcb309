//! `kube-arbiter explain`: for one pod, every node's filter verdict (the
//! same first-failure reason `/scheduler/filter` puts in FailedNodes) and,
//! for the feasible nodes, each plugin's normalized score and the final
//! 0..10 score `/scheduler/prioritize` would answer. Same policy code paths
//! as the endpoints: [`PodFilters`] and [`prioritize`].

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::cluster::{NodeIdx, Snapshot};
use crate::config::Config;
use crate::model::Pod;
use crate::policy::Code;
use crate::policy::domains::NodeAt;
use crate::policy::filter::PodFilters;
use crate::policy::prioritize::{NodeScores, prioritize};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// Set when the pod itself is invalid; then `nodes` is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub feasible: usize,
    pub nodes: Vec<NodeExplanation>,
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

/// Judge every node of the snapshot for `pod`; score the feasible ones.
pub fn explain(snapshot: &Snapshot, pod: &Pod, config: &Config) -> Explanation {
    let settings = &config.scheduling;
    let invalid = |error: String| Explanation {
        pod: pod.metadata.key(),
        error: Some(error),
        feasible: 0,
        nodes: Vec::new(),
    };
    let filters = match PodFilters::prepare(snapshot, pod, settings) {
        Ok(f) => f,
        Err(e) => return invalid(e),
    };
    let mut nodes: Vec<NodeExplanation> = Vec::with_capacity(snapshot.nodes().len());
    let mut feasible: Vec<NodeAt<'_>> = Vec::new();
    for (idx, info) in snapshot.nodes().iter().enumerate() {
        let at = NodeAt::indexed(&info.node, idx as NodeIdx);
        let (result, reason) = match filters.check_at(at) {
            Ok(()) => {
                feasible.push(at);
                ("Feasible", None)
            }
            Err(f) => (
                match f.code {
                    Code::Unschedulable => "Unschedulable",
                    Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
                },
                Some(f.reason.to_string()),
            ),
        };
        nodes.push(NodeExplanation {
            node: info.node.name().to_string(),
            result,
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
    Explanation {
        pod: pod.metadata.key(),
        error: None,
        feasible: feasible.len(),
        nodes,
    }
}

/// An aligned table: feasible nodes first, best score first, then the
/// failed ones by name.
pub fn render_table(e: &Explanation) -> String {
    let mut out = String::new();
    if let Some(err) = &e.error {
        let _ = writeln!(out, "pod {}: cannot be scheduled anywhere: {err}", e.pod);
        return out;
    }
    let _ = writeln!(
        out,
        "pod {}: {} of {} nodes feasible\n",
        e.pod,
        e.feasible,
        e.nodes.len()
    );
    let mut rows: Vec<&NodeExplanation> = e.nodes.iter().collect();
    rows.sort_by_key(|n| {
        (
            n.scores.is_none(),
            std::cmp::Reverse(n.scores.as_ref().map(|s| s.total)),
        )
    });
    let cell = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    let table: Vec<[String; 7]> = rows
        .iter()
        .map(|n| {
            let s = n.scores.as_ref();
            [
                n.node.clone(),
                n.result.to_string(),
                cell(s.and_then(|s| s.node_affinity)),
                cell(s.and_then(|s| s.inter_pod_affinity)),
                cell(s.and_then(|s| s.pod_topology_spread)),
                cell(s.map(|s| s.total)),
                n.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let header = [
        "NODE",
        "RESULT",
        "NODE-AFFINITY",
        "POD-AFFINITY",
        "SPREAD",
        "SCORE",
        "REASON",
    ];
    let mut widths: [usize; 7] = header.map(str::len);
    for row in &table {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut line = |cells: [&str; 7]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 6 {
                l.push_str(c);
            } else {
                let _ = write!(l, "{c:<w$}  ", w = widths[i]);
            }
        }
        let _ = writeln!(out, "{}", l.trim_end());
    };
    line(header);
    for row in &table {
        line(row.each_ref().map(String::as_str));
    }
    out
}

pub fn render_json(e: &Explanation) -> String {
    serde_json::to_string_pretty(e).unwrap_or_else(|err| format!("{{\"error\":\"{err}\"}}"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Table,
    Json,
}

/// The `explain` subcommand: load the state file, the pod (YAML or JSON)
/// and the optional config, and render the explanation.
pub fn run_explain(
    cluster_state: &Path,
    pod_file: &Path,
    output: Output,
    config: Option<&Path>,
) -> anyhow::Result<String> {
    let config = match config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    let snapshot = crate::cluster::file::load(cluster_state)?;
    let pod = read_pod(pod_file)?;
    let e = explain(&snapshot, &pod, &config);
    Ok(match output {
        Output::Table => render_table(&e),
        Output::Json => render_json(&e),
    })
}

fn read_pod(path: &Path) -> anyhow::Result<Pod> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read pod file {}: {e}", path.display()))?;
    let parsed = if text.trim_start().starts_with('{') {
        serde_json::from_str(&text).map_err(|e| e.to_string())
    } else {
        serde_saphyr::from_str(&text).map_err(|e| e.to_string())
    };
    parsed.map_err(|e| anyhow::anyhow!("pod file {}: {e}", path.display()))
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
                "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}}});
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
            Some("node(s) had untolerated taint {dedicated: gpu}")
        );
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
            lines[5].ends_with("node(s) had untolerated taint {dedicated: gpu}"),
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
        let out = run_explain(&state, &pod, Output::Table, None).unwrap();
        assert!(out.contains("n1    UnschedulableAndUnresolvable"), "{out}");
        assert!(
            out.contains("didn't match Pod's node affinity/selector"),
            "{out}"
        );
    }
}
