//! kube-arbiter's filter against the real kube-scheduler's in-tree filter
//! plugins, pod by pod and node by node, on a random cluster
//! (tests/real/random_cluster.rs) held still on a real control plane.
//!
//! kube-scheduler's verdicts: it runs with the default profile and one
//! extender, a probe in this process (tests/real/probe_extender.rs) that
//! records the nodes its in-tree filters passed and answers that none fits.
//! No candidate is ever bound or nominated (their PriorityClass never
//! preempts), so all of them are created at once and judged against the
//! same cluster; each one's PodScheduled condition then counts the
//! in-tree reasons of the nodes that failed. The candidates carry no pin
//! to a node: a required node affinity on `metadata.name` would be part of
//! the pod's node affinity that topology spread honours
//! (`nodeAffinityPolicy: Honor`, the default), and so would change the
//! verdicts under test.
//!
//! kube-arbiter's verdicts: `/scheduler/filter` with every node, for the
//! pod as the API server stored it, installed as the README says next to
//! the in-tree plugins, the in-flight ledger off (`live.inFlightWaitMillis:
//! 0`: its own filter calls would otherwise widen the later answers, as
//! designed), reading the same cluster.
//!
//! Per pod: the nodes that pass must be the same, and the reasons of the
//! others, in upstream's words (tests/real/reasons.rs), counted the same.
//! kube-scheduler says which nodes pass but only counts the reasons, so
//! two nodes whose reasons were swapped would go unseen. One difference is
//! upstream's by design: when every required node selector term names
//! nodes (`matchFields` on `metadata.name`), kube-scheduler filters only
//! those, and counts the others under its PreFilter's reason whatever
//! they are; kube-arbiter's reason for those nodes is then not compared.
//! Resources are left out (kube-arbiter's filter leaves them to the
//! in-tree NodeResourcesFit): every node has room for every pod.
//!
//! `KUBE_ARBITER_DIFF_SEED`, `KUBE_ARBITER_DIFF_NODES` (below 100:
//! kube-scheduler stops looking once it has found 100 feasible nodes) and
//! `KUBE_ARBITER_DIFF_PODS` choose another cluster. The seed, the counts
//! and every disagreement are written to
//! `target/tmp/real-cluster/differential/differential.txt`.

mod common;
#[allow(dead_code)] // each story uses its own part of the harness
mod real;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::str::FromStr;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_arbiter::api::extender::UNKNOWN_NODE;
use real::cluster::wait_for;
use real::control_plane::ControlPlane;
use real::install::{Installed, Role, Setup, create, dynamic_api, install_without_scheduler};
use real::probe_extender::{PROBE_REASON, ProbeExtender};
use real::random_cluster::{self, Bound, EXISTING_ID, HOST, NAMESPACES, Size};
use real::reasons::{NOT_IN_PRE_FILTER_RESULT, parse_fit_error, pre_filter_nodes, upstream_words};
use serde_json::{Value, json};

const DEFAULT_SEED: u64 = 1;
const DEFAULT_NODES: usize = 24;
const DEFAULT_PODS: usize = 120;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn v1_37_filter_agrees_with_kube_scheduler_on_random_clusters() {
    let seed = from_env("KUBE_ARBITER_DIFF_SEED", DEFAULT_SEED);
    let nodes = from_env("KUBE_ARBITER_DIFF_NODES", DEFAULT_NODES);
    let pods = from_env("KUBE_ARBITER_DIFF_PODS", DEFAULT_PODS);
    assert!(
        (1..100).contains(&nodes),
        "KUBE_ARBITER_DIFF_NODES={nodes}: 1 to 99 (from 100 nodes on, kube-scheduler stops \
         filtering once it has found enough feasible ones)"
    );
    eprintln!(
        "differential: seed {seed}, {nodes} nodes, {pods} candidate pods \
         (KUBE_ARBITER_DIFF_SEED, _NODES and _PODS choose others)"
    );
    let cluster = random_cluster::generate(
        seed,
        Size {
            nodes,
            existing: nodes * 5 / 2,
            candidates: pods,
        },
    );
    let started = Instant::now();

    let mut plane = ControlPlane::start("differential").await;
    let arbiter = install_without_scheduler(
        &plane,
        Setup::new(Role::NextToInTreePlugins),
        "live:\n  inFlightWaitMillis: 0\n",
    )
    .await;
    let probe = ProbeExtender::start().await;
    plane.start_scheduler(&probe.scheduler_config()).await;
    let client = plane.admin.clone();
    for (name, team) in NAMESPACES {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": name, "labels": {"team": team}}});
        create(&client, namespace).await;
        plane.wait_default_service_account(name).await;
    }
    for node in &cluster.nodes {
        create(&client, node.clone()).await;
    }
    for bound in &cluster.existing {
        place(&client, bound).await;
    }
    let node_names: Vec<String> = cluster.nodes.iter().map(name_of).collect();
    wait_for_view(&arbiter, &cluster.existing.last().unwrap().pod, &node_names).await;
    let ready = started.elapsed();

    // Created after every bound pod: kube-scheduler's pod informer has
    // shown it all of them before any candidate.
    let mut candidates = Vec::new();
    for pod in &cluster.candidates {
        let (_, api) = dynamic_api(&client, pod).await;
        let object = serde_json::from_value(pod.clone()).unwrap();
        let stored = api
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("create {}: {e}", key_of(pod)));
        candidates.push(serde_json::to_value(stored).unwrap());
    }
    let mut ours = Vec::new();
    for pod in &candidates {
        ours.push(filter(&arbiter, pod, &node_names).await);
    }
    let upstream = wait_tried(&client, &candidates, node_names.len()).await;

    let mut report = Report::default();
    for (i, pod) in candidates.iter().enumerate() {
        let key = key_of(pod);
        let (ns, name) = key.split_once('/').unwrap();
        let passed = probe.passed(ns, name);
        let found = compare(pod, &node_names, &upstream[&key], &passed, &ours[i]);
        report.add(
            &cluster.candidates[i],
            &key,
            &upstream[&key],
            &ours[i],
            found,
        );
    }
    let summary = format!(
        "seed {seed}, {nodes} nodes, {} bound pods: {} (pod, node) pairs compared, {} feasible; \
         reasons {:?}; cluster ready in {ready:?}, all in {:?}\n{}",
        cluster.existing.len(),
        candidates.len() * node_names.len(),
        report.feasible,
        report.reasons,
        started.elapsed(),
        report.disagreements.join("\n")
    );
    // Beside the components' logs, also when the test passes.
    std::fs::write(plane.dir.join("differential.txt"), &summary).unwrap();
    eprintln!("differential: {summary}");
    assert!(
        report.disagreements.is_empty(),
        "seed {seed}: kube-arbiter's filter and kube-scheduler's in-tree plugins disagree \
         on {} pod(s):\n{}",
        report.disagreements.len(),
        report.disagreements.join("\n")
    );
}

/// What one pod's verdicts showed.
#[derive(Default)]
struct Found {
    disagreements: Vec<String>,
    feasible: usize,
    /// kube-scheduler's reasons for the nodes that failed.
    reasons: BTreeMap<String, usize>,
}

/// kube-scheduler's verdicts on `pod` (its message `upstream`, the nodes
/// it `passed` to the probe) against kube-arbiter's filter answer `ours`.
fn compare(
    pod: &Value,
    nodes: &[String],
    upstream: &str,
    passed: &BTreeSet<String>,
    ours: &Value,
) -> Found {
    let mut found = Found::default();
    let mut disagree = |text: String| found.disagreements.push(text);
    if let Some(error) = ours["Error"].as_str().filter(|e| !e.is_empty()) {
        disagree(format!("kube-arbiter answered with an error: {error}"));
        return found;
    }
    let (total, mut theirs) = match parse_fit_error(upstream) {
        Ok(parsed) => parsed,
        Err(e) => {
            disagree(format!("kube-scheduler: {e}"));
            return found;
        }
    };
    if total != nodes.len() {
        disagree(format!(
            "kube-scheduler judged {total} nodes, not {}",
            nodes.len()
        ));
    }
    let probed = theirs.remove(PROBE_REASON).unwrap_or(0);
    if probed != passed.len() {
        disagree(format!(
            "kube-scheduler counts {probed} nodes for the probe, which saw {passed:?}"
        ));
    }
    let feasible: BTreeSet<String> = ours["NodeNames"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect();
    let failed = failed_nodes(ours);
    for node in nodes {
        match (passed.contains(node), failed.get(node)) {
            (true, Some(reason)) => {
                disagree(format!(
                    "{node}: kube-scheduler's plugins pass it, kube-arbiter says {reason:?}"
                ));
            }
            (false, None) if feasible.contains(node) => disagree(format!(
                "{node}: kube-scheduler's plugins fail it, kube-arbiter passes it"
            )),
            (_, None) if !feasible.contains(node) => {
                disagree(format!("{node}: not in kube-arbiter's answer"));
            }
            _ => {}
        }
    }
    let filtered = pre_filter_nodes(pod);
    let mut ours_counted: BTreeMap<String, usize> = BTreeMap::new();
    for (node, reason) in &failed {
        let words = match &filtered {
            Some(filtered) if !filtered.contains(node) => NOT_IN_PRE_FILTER_RESULT.to_string(),
            _ => upstream_words(reason),
        };
        *ours_counted.entry(words).or_default() += 1;
    }
    if ours_counted != theirs {
        disagree(format!(
            "reasons counted: kube-scheduler {theirs:?}, kube-arbiter {ours_counted:?}"
        ));
    }
    found.feasible = passed.len();
    found.reasons = theirs;
    found
}

/// The tally of every pod's verdicts.
#[derive(Default)]
struct Report {
    feasible: usize,
    reasons: BTreeMap<String, usize>,
    disagreements: Vec<String>,
}

impl Report {
    fn add(&mut self, generated: &Value, key: &str, upstream: &str, ours: &Value, found: Found) {
        self.feasible += found.feasible;
        for (reason, n) in found.reasons {
            *self.reasons.entry(reason).or_default() += n;
        }
        if found.disagreements.is_empty() {
            return;
        }
        let mut text = format!("pod {key}:\n");
        for d in &found.disagreements {
            let _ = writeln!(text, "  - {d}");
        }
        let _ = writeln!(text, "  kube-scheduler: {upstream}");
        let mut failed: Vec<_> = failed_nodes(ours).into_iter().collect();
        failed.sort();
        let _ = writeln!(text, "  kube-arbiter: {failed:?}");
        let _ = write!(
            text,
            "  pod: {}",
            serde_json::to_string(&json!({"labels": generated["metadata"]["labels"],
                                          "spec": generated["spec"]}))
            .unwrap()
        );
        self.disagreements.push(text);
    }
}

/// Every node a filter answer failed, with its reason.
fn failed_nodes(answer: &Value) -> BTreeMap<String, String> {
    ["FailedNodes", "FailedAndUnresolvableNodes"]
        .iter()
        .filter_map(|map| answer[map].as_object())
        .flatten()
        .map(|(node, reason)| (node.clone(), reason.as_str().unwrap_or("").to_string()))
        .collect()
}

/// kube-arbiter's `/scheduler/filter` answer for `pod` over `nodes`, as
/// kube-scheduler asks it (NodeNames mode).
async fn filter(arbiter: &Installed, pod: &Value, nodes: &[String]) -> Value {
    let response = arbiter
        .scheduler_client
        .post(arbiter.url("/scheduler/filter"))
        .json(&json!({"Pod": pod, "NodeNames": nodes}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "filter {}", key_of(pod));
    response.json().await.unwrap()
}

/// Waits until kube-arbiter's view holds every node and the last bound
/// pod (bound pods come in the order they were created): for a pod with
/// required hostname anti-affinity to `last`, tolerating every taint, no
/// node is unknown and `last`'s node fails that rule.
async fn wait_for_view(arbiter: &Installed, last: &Value, nodes: &[String]) {
    let node = last["spec"]["nodeName"].as_str().unwrap().to_string();
    let sentinel = json!({
        "metadata": {"name": "view-sentinel", "namespace": last["metadata"]["namespace"],
                     "uid": "00000000-0000-4000-8000-000000000001"},
        "spec": {
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}],
            "tolerations": [{"operator": "Exists"}],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {EXISTING_ID: last["metadata"]["labels"][EXISTING_ID]}},
                "topologyKey": HOST,
            }]}},
        },
    });
    wait_for("kube-arbiter's view of every node and bound pod", async || {
        let failed = failed_nodes(&filter(arbiter, &sentinel, nodes).await);
        let unknown = failed.values().any(|r| r == UNKNOWN_NODE);
        let seen = failed
            .get(&node)
            .is_some_and(|r| r.starts_with("node(s) didn't match pod anti-affinity rules"));
        if seen && !unknown {
            Ok(())
        } else {
            Err(format!("failed nodes {failed:?}; {node} not failed for the anti-affinity to it, or a node unknown"))
        }
    })
    .await;
}

/// Creates a bound pod and makes it what the kubelet would have reported
/// (there is none): its phase, and for a terminating pod the deletion its
/// finalizer holds up. Each pod is complete before the next is created,
/// so a view that shows the last one shows every one as it is.
async fn place(client: &kube::Client, bound: &Bound) {
    create(client, bound.pod.clone()).await;
    let pods: Api<Pod> = Api::namespaced(
        client.clone(),
        bound.pod["metadata"]["namespace"].as_str().unwrap(),
    );
    let name = name_of(&bound.pod);
    if let Some(phase) = bound.phase {
        let now = jiff::Timestamp::now().to_string();
        let running = phase == "Running";
        let condition = |kind: &str| {
            json!({"type": kind, "status": if running { "True" } else { "False" },
                                            "lastTransitionTime": now})
        };
        let status = json!({"status": {
            "phase": phase,
            "startTime": now,
            "conditions": [condition("Initialized"), condition("ContainersReady"),
                           condition("Ready"), {"type": "PodScheduled", "status": "True"}],
        }});
        pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap_or_else(|e| panic!("status of {name}: {e}"));
    }
    if bound.terminating {
        pods.delete(&name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete {name}: {e}"));
    }
}

/// Waits until kube-scheduler has tried every candidate with all `nodes`
/// in its cache (its node informer is not ordered with its pod informer;
/// a node added later tries the pod again): each one's PodScheduled=False
/// message, by `ns/name`. A candidate that was bound panics: the probe
/// holds every pod back.
async fn wait_tried(
    client: &kube::Client,
    candidates: &[Value],
    nodes: usize,
) -> BTreeMap<String, String> {
    let wanted: BTreeSet<String> = candidates.iter().map(key_of).collect();
    let pods: Api<Pod> = Api::all(client.clone());
    wait_for("kube-scheduler to try every candidate", async || {
        let list = pods
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let mut tried = BTreeMap::new();
        for pod in list.items {
            let key = format!(
                "{}/{}",
                pod.metadata.namespace.as_deref().unwrap_or_default(),
                pod.metadata.name.as_deref().unwrap_or_default()
            );
            if !wanted.contains(&key) {
                continue;
            }
            if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_ref()) {
                panic!("{key} was bound to {node}: the probe extender did not hold it");
            }
            let condition = pod
                .status
                .and_then(|s| s.conditions)
                .into_iter()
                .flatten()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False");
            let message = condition.and_then(|c| c.message);
            if let Some(message) =
                message.filter(|m| parse_fit_error(m).map_or(true, |(total, _)| total == nodes))
            {
                tried.insert(key, message);
            }
        }
        if tried.len() == wanted.len() {
            Ok(tried)
        } else {
            Err(format!("{} of {} tried", tried.len(), wanted.len()))
        }
    })
    .await
}

fn name_of(object: &Value) -> String {
    object["metadata"]["name"].as_str().unwrap().to_string()
}

fn key_of(object: &Value) -> String {
    format!(
        "{}/{}",
        object["metadata"]["namespace"].as_str().unwrap_or_default(),
        name_of(object)
    )
}

fn from_env<T: FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text:?} is not a number")),
        Err(_) => default,
    }
}

/// The harness's reading of both sides, without a cluster.
mod reading {
    use super::*;

    #[test]
    fn a_fit_error_with_a_preemption_message() {
        let message = "0/5 nodes are available: 1 node(s) had untolerated taint(s), \
            3 node(s) didn't match Pod's node affinity/selector, 1 passed every in-tree filter. \
            preemption: not eligible due to preemptionPolicy=Never.";
        let (total, reasons) = parse_fit_error(message).unwrap();
        assert_eq!(total, 5);
        assert_eq!(
            reasons,
            BTreeMap::from([
                ("node(s) had untolerated taint(s)".to_string(), 1),
                (
                    "node(s) didn't match Pod's node affinity/selector".to_string(),
                    3
                ),
                ("passed every in-tree filter".to_string(), 1),
            ])
        );
    }

    #[test]
    fn a_fit_error_without_a_post_filter_message() {
        let message = "0/2 nodes are available: 2 node(s) didn't match pod affinity rules.";
        let (total, reasons) = parse_fit_error(message).unwrap();
        assert_eq!(total, 2);
        assert_eq!(reasons["node(s) didn't match pod affinity rules"], 2);
    }

    #[test]
    fn other_messages_are_refused_with_their_text() {
        for message in [
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
            "no nodes available to schedule pods",
            "0/x nodes are available: 1 a.",
        ] {
            let err = parse_fit_error(message).unwrap_err();
            assert!(err.contains(message), "{err}");
        }
    }

    #[test]
    fn kube_arbiters_details_are_dropped() {
        for (ours, upstream) in [
            (
                "node(s) didn't match pod anti-affinity rules: pod diff-a/e3 (app=web) in kubernetes.io/hostname=n01",
                "node(s) didn't match pod anti-affinity rules",
            ),
            (
                "node(s) didn't match pod topology spread constraints (missing required label example.com/rack)",
                "node(s) didn't match pod topology spread constraints (missing required label)",
            ),
            (
                "node(s) didn't match Pod's node affinity/selector",
                "node(s) didn't match Pod's node affinity/selector",
            ),
            (
                "node(s) didn't match pod affinity rules: node has no label example.com/rack",
                "node(s) didn't match pod affinity rules",
            ),
            (
                "node(s) had untolerated taint {dedicated: gpu}",
                "node(s) had untolerated taint {dedicated: gpu}",
            ),
        ] {
            assert_eq!(upstream_words(ours), upstream, "{ours}");
        }
    }

    fn answer(feasible: &[&str], failed: Value) -> Value {
        json!({"NodeNames": feasible, "FailedNodes": failed, "FailedAndUnresolvableNodes": {}, "Error": ""})
    }

    const MESSAGE: &str = "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, \
        2 passed every in-tree filter. preemption: not eligible due to preemptionPolicy=Never.";

    #[test]
    fn the_same_verdicts_in_both_words_agree() {
        let nodes = ["a".to_string(), "b".to_string(), "c".to_string()];
        let passed = BTreeSet::from(["a".to_string(), "b".to_string()]);
        let ours = answer(
            &["a", "b"],
            json!({"c": "node(s) didn't match pod anti-affinity rules: pod diff-a/e1 (app=web) in kubernetes.io/hostname=c"}),
        );
        let found = compare(&json!({}), &nodes, MESSAGE, &passed, &ours);
        assert_eq!(found.disagreements, Vec::<String>::new());
        assert_eq!(found.feasible, 2);
    }

    #[test]
    fn every_node_judged_otherwise_is_named() {
        let nodes = ["a".to_string(), "b".to_string(), "c".to_string()];
        let passed = BTreeSet::from(["a".to_string(), "b".to_string()]);
        let ours = answer(
            &["a", "c"],
            json!({"b": "node(s) had untolerated taint {k: v}"}),
        );
        let found = compare(&json!({}), &nodes, MESSAGE, &passed, &ours);
        assert_eq!(
            found.disagreements,
            [
                "b: kube-scheduler's plugins pass it, kube-arbiter says \"node(s) had untolerated taint {k: v}\"",
                "c: kube-scheduler's plugins fail it, kube-arbiter passes it",
                "reasons counted: kube-scheduler {\"node(s) didn't match pod anti-affinity rules\": 1}, \
                 kube-arbiter {\"node(s) had untolerated taint {k: v}\": 1}",
            ]
        );
    }

    fn pinned(terms: Value) -> Value {
        json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": terms}}}}})
    }

    #[test]
    fn nodes_left_out_by_kube_schedulers_pre_filter_have_its_reason() {
        let nodes = ["a".to_string(), "b".to_string(), "c".to_string()];
        let message = "0/3 nodes are available: 1 node(s) had untolerated taint(s), \
            2 node(s) didn't satisfy plugin(s) [NodeAffinity].";
        let pod = pinned(json!([{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["a"]}]}]));
        let taint = "node(s) had untolerated taint(s)";
        let ours = answer(
            &[],
            json!({"a": taint, "b": taint, "c": "node(s) didn't match Pod's node affinity/selector"}),
        );
        let found = compare(&pod, &nodes, message, &BTreeSet::new(), &ours);
        assert_eq!(found.disagreements, Vec::<String>::new());
    }

    #[test]
    fn pre_filter_nodes_as_upstream_node_affinity_computes_them() {
        let name =
            |op: &str, n: &str| json!({"key": "metadata.name", "operator": op, "values": [n]});
        let label = json!({"key": "disk", "operator": "Exists"});
        let set = |names: &[&str]| Some(names.iter().map(|n| n.to_string()).collect());
        for (what, pod, want) in [
            ("no node affinity", json!({}), None),
            (
                "every term names a node",
                pinned(json!([
                {"matchFields": [name("In", "a")]},
                {"matchFields": [name("In", "b")], "matchExpressions": [label]}])),
                set(&["a", "b"]),
            ),
            (
                "a term without a name",
                pinned(json!([
                {"matchFields": [name("In", "a")]}, {"matchExpressions": [label]}])),
                None,
            ),
            (
                "NotIn names no node",
                pinned(json!([{"matchFields": [name("NotIn", "a")]}])),
                None,
            ),
            (
                "names in one term intersect",
                pinned(json!([
                {"matchFields": [name("In", "a"), name("In", "a")]}])),
                set(&["a"]),
            ),
        ] {
            assert_eq!(pre_filter_nodes(&pod), want, "{what}");
        }
    }
}
