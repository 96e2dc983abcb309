//! `kube-arbiter explain [--kubeconfig F] -n NS POD` as a user runs it: the
//! built binary against an in-process API server that speaks the real
//! protocol. Checks stdout, stderr and the exit codes (0 answered, 1 the
//! cluster could not be read or has no such pod, 2 bad configuration).

mod common;
#[path = "support/fake_apiserver.rs"]
mod fake_apiserver;

use std::process::Output;

use fake_apiserver::{FakeApiServer, api_node};
use kube_arbiter::testing::{make_pod, namespace_json};
use serde_json::{Value, json};

fn node(name: &str, taint: bool) -> Value {
    let node = api_node(name);
    let node = if taint {
        node.taint("dedicated", "gpu", "NoSchedule")
    } else {
        node
    };
    node.json()
}

fn pod(name: &str, node: &str, labels: Value, priority: i32, extra: Value) -> Value {
    let phase = if node.is_empty() {
        "Pending"
    } else {
        "Running"
    };
    let mut pod = make_pod("shop", name)
        .uid(&format!("uid-{name}"))
        .node(node)
        .priority(priority)
        .phase(phase)
        .requests(&[]);
    for (key, value) in labels.as_object().into_iter().flatten() {
        pod = pod.label(key, value.as_str().unwrap_or_default());
    }
    for (field, value) in extra.as_object().into_iter().flatten() {
        pod = pod.spec(field, value.clone());
    }
    pod.json()
}

/// n1 runs a low-priority batch pod, n2 a high-priority one, n3 is
/// tainted; shop/api (pending) refuses to share a node with batch pods.
async fn cluster() -> FakeApiServer {
    let api = FakeApiServer::start().await;
    api.load(
        "Node",
        [node("n1", false), node("n2", false), node("n3", true)],
    );
    api.load("Namespace", [namespace_json("shop", &[])]);
    let away_from_batch = json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "batch"}}, "topologyKey": "kubernetes.io/hostname"}]}}});
    api.load(
        "Pod",
        [
            pod("batch-low", "n1", json!({"app": "batch"}), 10, json!({})),
            pod("batch-high", "n2", json!({"app": "batch"}), 1000, json!({})),
            pod("api", "", json!({"app": "api"}), 100, away_from_batch),
        ],
    );
    api
}

/// The built binary, run off the async workers so the API server keeps
/// answering.
async fn explain(args: &[&str]) -> Output {
    let mut all = vec!["explain".to_string()];
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
async fn a_pending_pod_is_explained_from_the_api_server() {
    let api = cluster().await;
    let kubeconfig = api.kubeconfig().to_str().unwrap();
    let out = explain(&["--kubeconfig", kubeconfig, "-n", "shop", "api"]).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "pod shop/api: 0 of 3 nodes feasible", "{stdout}");
    assert!(
        lines.iter().any(|l| l.starts_with("n3 ")
            && l.ends_with("node(s) had untolerated taint(s) (dedicated=gpu:NoSchedule)")),
        "{stdout}"
    );
    assert!(
        lines.contains(
            &"0/3 nodes are available: 1 node(s) had untolerated taint(s), \
              2 node(s) didn't match pod anti-affinity rules."
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "preemption: evicting lower-priority pods makes room on 1/3 nodes; kube-scheduler would nominate n1.\n\
             * n1: evict 1 pod(s): shop/batch-low\n"
        ),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_output_and_the_kubeconfig_environment_variable() {
    let api = cluster().await;
    let kubeconfig = api.kubeconfig().to_str().unwrap().to_string();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(common::BIN)
            .args(["explain", "-n", "shop", "api", "--output", "json"])
            .env("KUBECONFIG", kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["pod"], "shop/api");
    assert_eq!(got["feasible"], 0);
    assert_eq!(got["nodes"].as_array().unwrap().len(), 3);
    assert_eq!(got["preemption"]["nominate"], "n1");
    assert_eq!(
        got["preemption"]["candidates"][0]["victims"],
        json!(["shop/batch-low"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_pod_is_named_and_exits_1() {
    let api = cluster().await;
    let kubeconfig = api.kubeconfig().to_str().unwrap();
    for (args, named) in [
        (vec!["-n", "shop", "ghost"], "pod shop/ghost not found"),
        (vec!["api"], "pod default/api not found"),
    ] {
        let mut all = vec!["--kubeconfig", kubeconfig];
        all.extend(args);
        let out = explain(&all).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(named), "{stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_that_cannot_be_listed_is_a_runtime_error() {
    let api = cluster().await;
    api.set_unavailable("PodDisruptionBudget", true);
    let kubeconfig = api.kubeconfig().to_str().unwrap();
    let out = explain(&["--kubeconfig", kubeconfig, "-n", "shop", "api"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot list PodDisruptionBudget from the Kubernetes API server at http://{}",
            api.addr
        )),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_api_server_says_what_was_tried() {
    let dir = tempfile::tempdir().unwrap();
    // A port that was free a moment ago: nothing listens there.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://{addr}\n\
             users:\n- name: u\n  user: {{}}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
             current-context: c\n"
        ),
    )
    .unwrap();
    let out = explain(&["--kubeconfig", kubeconfig.to_str().unwrap(), "api"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot reach the Kubernetes API server at http://{addr}"
        )),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuration_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("kubeconfig");
    std::fs::write(&broken, "clusters: [not, a, kubeconfig").unwrap();
    let missing = dir.path().join("missing");
    for kubeconfig in [&broken, &missing] {
        let out = explain(&["--kubeconfig", kubeconfig.to_str().unwrap(), "api"]).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("cannot read kubeconfig {}", kubeconfig.display())),
            "{stderr}"
        );
    }
    let out = explain(&["--cluster-state", "c.yaml", "-n", "shop", "api"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
