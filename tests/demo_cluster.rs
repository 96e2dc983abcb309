//! examples/demo-cluster.yaml is the cluster the README serves and curls.
//! It must decode into the model and describe a cluster that could exist:
//! pods fit and tolerate their nodes, priorities match their classes, PDB
//! status adds up, and every pod's owner selects it. And the answers the
//! README shows for it must be the ones the server gives.

mod common;

use std::collections::BTreeMap;

use kube_arbiter::model::quantity::{CPU, MEMORY, PODS};
use kube_arbiter::model::{
    MapSelectorOwner, Namespace, Node, Pod, PodDisruptionBudget, PriorityClass, SelectorOwner,
};
use kube_arbiter::policy::taint_toleration::untolerated_taint;
use serde::de::DeserializeOwned;

#[derive(Default)]
struct Demo {
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    pdbs: Vec<PodDisruptionBudget>,
    /// The PDBs as written, for the status fields the model does not keep.
    pdb_json: Vec<serde_json::Value>,
    classes: Vec<PriorityClass>,
    namespaces: Vec<Namespace>,
    services: Vec<MapSelectorOwner>,
    replica_sets: Vec<SelectorOwner>,
}

fn decode<T: DeserializeOwned>(item: &serde_json::Value) -> T {
    serde_json::from_value(item.clone()).unwrap()
}

fn demo() -> Demo {
    #[derive(serde::Deserialize)]
    struct List {
        kind: String,
        items: Vec<serde_json::Value>,
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo-cluster.yaml");
    let list: List = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(list.kind, "List");
    let mut demo = Demo::default();
    for item in &list.items {
        match item["kind"].as_str().unwrap() {
            "Node" => demo.nodes.push(decode(item)),
            "Pod" => demo.pods.push(decode(item)),
            "PodDisruptionBudget" => {
                demo.pdbs.push(decode(item));
                demo.pdb_json.push(item.clone());
            }
            "PriorityClass" => demo.classes.push(decode(item)),
            "Namespace" => demo.namespaces.push(decode(item)),
            "Service" => demo.services.push(decode(item)),
            "ReplicaSet" => demo.replica_sets.push(decode(item)),
            other => panic!("unexpected kind {other}"),
        }
    }
    demo
}

#[test]
fn decodes_every_kind_in_the_documented_counts() {
    let d = demo();
    assert_eq!(d.nodes.len(), 9);
    assert_eq!(d.pods.len(), 24);
    assert_eq!(d.pdbs.len(), 3);
    assert_eq!(d.classes.len(), 4);
    assert_eq!(d.namespaces.len(), 5);
    assert_eq!(d.services.len(), 6);
    assert_eq!(d.replica_sets.len(), 5);
    let zones: std::collections::BTreeSet<_> = d
        .nodes
        .iter()
        .map(|n| n.label("topology.kubernetes.io/zone").unwrap())
        .collect();
    assert_eq!(zones.len(), 3);
    for ns in &d.namespaces {
        assert_eq!(
            ns.metadata.labels["kubernetes.io/metadata.name"],
            ns.metadata.name
        );
    }
}

#[test]
fn bound_pods_fit_and_tolerate_their_nodes() {
    let d = demo();
    let nodes: BTreeMap<&str, &Node> = d.nodes.iter().map(|n| (n.name(), n)).collect();
    let mut used: BTreeMap<&str, BTreeMap<String, i64>> = BTreeMap::new();
    for pod in d.pods.iter().filter(|p| !p.spec.node_name.is_empty()) {
        let node = nodes[pod.spec.node_name.as_str()];
        assert_eq!(
            untolerated_taint(&node.spec.taints, &pod.spec.tolerations),
            None,
            "{}",
            pod.metadata.key()
        );
        if pod.is_terminal() {
            continue;
        }
        let u = used.entry(node.name()).or_default();
        *u.entry(PODS.to_string()).or_default() += 1;
        for c in &pod.spec.containers {
            for (resource, amount) in &c.resources.requests {
                *u.entry(resource.clone()).or_default() += amount;
            }
        }
    }
    for (node, requests) in used {
        let allocatable = &nodes[node].status.allocatable;
        for (resource, amount) in requests {
            let room = allocatable.get(&resource).copied().unwrap_or(0);
            assert!(amount <= room, "{node}: {resource} {amount} > {room}");
        }
    }
    assert!(
        nodes
            .values()
            .all(|n| n.status.allocatable[CPU] > 0 && n.status.allocatable[MEMORY] > 0)
    );
}

#[test]
fn priorities_match_their_classes_and_one_class_is_the_default() {
    let d = demo();
    let classes: BTreeMap<&str, &PriorityClass> = d
        .classes
        .iter()
        .map(|c| (c.metadata.name.as_str(), c))
        .collect();
    assert_eq!(d.classes.iter().filter(|c| c.global_default).count(), 1);
    for pod in &d.pods {
        let class = classes[pod.spec.priority_class_name.as_str()];
        assert_eq!(
            pod.spec.priority,
            Some(class.value),
            "{}",
            pod.metadata.key()
        );
        assert_eq!(pod.spec.preemption_policy, class.preemption_policy);
    }
}

#[test]
fn pdb_status_counts_the_ready_pods_it_selects() {
    let d = demo();
    for (pdb, raw) in d.pdbs.iter().zip(&d.pdb_json) {
        let selector = pdb.spec.selector.as_ref().unwrap();
        let selected: Vec<&Pod> = d
            .pods
            .iter()
            .filter(|p| p.metadata.namespace == pdb.metadata.namespace)
            .filter(|p| selector.matches(&p.metadata.labels))
            .collect();
        let healthy = selected.iter().filter(|p| p.is_ready()).count() as i64;
        let status = &raw["status"];
        let key = pdb.metadata.key();
        assert_eq!(status["expectedPods"], selected.len() as i64, "{key}");
        assert_eq!(status["currentHealthy"], healthy, "{key}");
        let desired = status["desiredHealthy"].as_i64().unwrap();
        assert_eq!(
            i64::from(pdb.status.disruptions_allowed),
            (healthy - desired).max(0),
            "{key}"
        );
    }
}

#[test]
fn every_deployment_pod_is_selected_by_its_replica_set_and_a_service() {
    let d = demo();
    for pod in d.pods.iter().filter(|p| {
        p.metadata
            .controller()
            .is_some_and(|o| o.kind == "ReplicaSet")
    }) {
        let owner = pod.metadata.controller().unwrap();
        let rs = d
            .replica_sets
            .iter()
            .find(|rs| rs.metadata.uid == owner.uid)
            .unwrap();
        assert!(
            rs.spec
                .selector
                .as_ref()
                .unwrap()
                .matches(&pod.metadata.labels)
        );
        assert!(d.services.iter().any(|s| {
            s.metadata.namespace == pod.metadata.namespace
                && !s.spec.selector.is_empty()
                && s.spec
                    .selector
                    .iter()
                    .all(|(k, v)| pod.metadata.labels.get(k) == Some(v))
        }));
    }
}

/// One answer the README shows: the request it marks and the JSON below it.
struct ReadmeAnswer {
    path: String,
    body_file: String,
    answer: serde_json::Value,
}

const ANSWER_MARK: &str = "<!-- README answer: POST ";

/// Every `<!-- README answer: POST PATH FILE -->` in README.md with the
/// ```json block that follows it.
fn readme_answers() -> Vec<ReadmeAnswer> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let mut answers = Vec::new();
    let mut rest = readme.as_str();
    while let Some(at) = rest.find(ANSWER_MARK) {
        rest = &rest[at + ANSWER_MARK.len()..];
        let (mark, after) = rest.split_once("-->").expect("an unclosed answer mark");
        let (path, body_file) = mark.trim().split_once(' ').expect("mark: PATH FILE");
        let block = after
            .trim_start()
            .strip_prefix("```json\n")
            .unwrap_or_else(|| panic!("no ```json block after the mark for {body_file}"));
        let (json, after_block) = block.split_once("```").expect("an unclosed ```json block");
        let answer = serde_json::from_str(json)
            .unwrap_or_else(|e| panic!("README's answer for {body_file} is not JSON: {e}"));
        answers.push(ReadmeAnswer {
            path: path.to_string(),
            body_file: body_file.trim().to_string(),
            answer,
        });
        rest = after_block;
    }
    answers
}

#[tokio::test]
async fn the_answers_in_the_readme_are_what_the_server_says() {
    let answers = readme_answers();
    let shown: Vec<&str> = answers.iter().map(|a| a.body_file.as_str()).collect();
    for flagship in [
        "examples/requests/filter-node-names.json",
        "examples/requests/prioritize-node-names.json",
    ] {
        assert!(
            shown.contains(&flagship),
            "README shows no answer for {flagship}"
        );
    }

    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo-cluster.yaml");
    let server = common::Launch::file(demo).ready().await;
    let http = &server.client;

    for shown in answers {
        let file = format!("{}/{}", env!("CARGO_MANIFEST_DIR"), shown.body_file);
        let body = std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let response = http
            .post(server.url(&shown.path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{} {}", shown.path, shown.body_file);
        let got: serde_json::Value = response.json().await.unwrap();
        assert_eq!(
            got,
            shown.answer,
            "README's answer for {} {} is out of date; the server says:\n{}",
            shown.path,
            shown.body_file,
            serde_json::to_string_pretty(&got).unwrap()
        );
    }
}
