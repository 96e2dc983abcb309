//! `kube-arbiter fit [--kubeconfig F]` against an in-process API server
//! that speaks the real protocol: a live Deployment scaled up (only the
//! new replicas placed, joining its current ReplicaSet), a manifest
//! against the live cluster, and the exit codes when the workload or the
//! server is not there.

mod common;
#[path = "support/fake_apiserver.rs"]
mod fake_apiserver;

use std::process::Output;

use fake_apiserver::{FakeApiServer, api_node};
use kube_arbiter::testing::{make_pod, namespace_json};
use serde_json::{Value, json};

fn web_pod(name: &str, node: &str) -> Value {
    make_pod("shop", name)
        .uid(&format!("uid-{name}"))
        .labels(&[("app", "web"), ("pod-template-hash", "abc12")])
        .owner("apps/v1", "ReplicaSet", "web-abc12", "uid-rs")
        .node(node)
        .priority(0)
        .requests(&[("cpu", "1")])
        .phase("Running")
        .json()
}

/// Two nodes of 4 cpu in two zones; shop/web runs 2 replicas of 1 cpu,
/// one per node, owned by its ReplicaSet web-abc12.
async fn cluster() -> FakeApiServer {
    let api = FakeApiServer::start().await;
    api.load(
        "Node",
        [
            api_node("n1").zone("z1").json(),
            api_node("n2").zone("z2").json(),
        ],
    );
    api.load("Namespace", [namespace_json("shop", &[])]);
    api.load(
        "Pod",
        [web_pod("web-abc12-1", "n1"), web_pod("web-abc12-2", "n2")],
    );
    api.load(
        "ReplicaSet",
        [json!({"metadata": {"name": "web-abc12", "namespace": "shop", "uid": "uid-rs",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                     "uid": "uid-deploy", "controller": true}]},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "abc12"}}}})],
    );
    api.load(
        "Deployment",
        [json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "uid": "uid-deploy"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}})],
    );
    api
}

/// The built binary, off the async workers so the API server answers.
async fn fit(args: &[&str]) -> Output {
    let mut all = vec!["fit".to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = all.iter().map(String::as_str).collect();
        common::run(&args)
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_a_live_deployment_places_only_the_new_replicas() {
    let api = cluster().await;
    let kubeconfig = api.kubeconfig().to_str().unwrap();
    let args = [
        "--kubeconfig",
        kubeconfig,
        "-n",
        "shop",
        "deployment/web",
        "--replicas",
        "7",
        "-o",
        "json",
    ];
    let out = fit(&args).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["workload"], "Deployment shop/web");
    // 8 cpu, 2 taken: room for 6, 5 asked.
    assert_eq!((&v["replicas"], &v["placed"]), (&json!(5), &json!(5)));
    let first = &v["placements"][0];
    assert_eq!(first["replica"], 2, "numbered after the running ones");
    assert!(
        first["pod"]
            .as_str()
            .unwrap()
            .starts_with("shop/web-abc12-fit-"),
        "joins the current ReplicaSet: {first}"
    );
    let zones = &v["zones"];
    assert_eq!(
        zones,
        &json!([{"name": "z1", "replicas": 3}, {"name": "z2", "replicas": 2}]),
        "{v}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_is_placed_on_the_live_cluster_and_missing_things_are_named() {
    let api = cluster().await;
    let kubeconfig = api.kubeconfig().to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("batch.yaml");
    std::fs::write(
        &manifest,
        "kind: Job\nmetadata: {name: crunch, namespace: shop}\nspec:\n  parallelism: 3\n  template:\n    spec:\n      containers: [{name: c, resources: {requests: {cpu: '1'}}}]\n",
    )
    .unwrap();
    let out = fit(&["--kubeconfig", kubeconfig, manifest.to_str().unwrap()]).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with("Job shop/crunch: 3 of 3 replicas fit;"),
        "{stdout}"
    );

    let out = fit(&["--kubeconfig", kubeconfig, "-n", "shop", "deployment/nope"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot get deployment shop/nope") && stderr.contains("not found"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_that_is_not_there_is_exit_1_naming_it() {
    let mut api = cluster().await;
    api.stop().await;
    let kubeconfig = api.kubeconfig().to_str().unwrap().to_string();
    let out = fit(&["--kubeconfig", &kubeconfig, "-n", "shop", "deployment/web"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot reach the Kubernetes API server"),
        "{stderr}"
    );
}
