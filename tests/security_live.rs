//! The attacks of docs/security.md, tried against the built server in live
//! mode (the way it is deployed) with the in-process API server: nothing
//! an unauthenticated or unauthorized caller sends reaches the API, and
//! kube-scheduler's own binds keep working.

mod common;
#[path = "support/fake_apiserver.rs"]
mod fake_apiserver;

use common::{
    ServerProcess, TestCa, anonymous_client, client, eventually, install_provider, live_serve_args,
};
use fake_apiserver::{FakeApiServer, running_pod};
use serde_json::{Value, json};

fn node(name: &str) -> Value {
    json!({"metadata": {"name": name, "uid": format!("uid-{name}"),
           "labels": {"kubernetes.io/hostname": name}},
           "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
}

/// A pending pod of `namespace` for `scheduler`.
fn pending(namespace: &str, name: &str, scheduler: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}"),
           "labels": {"app": "secret-db"}},
           "spec": {"schedulerName": scheduler, "containers": [{"name": "c"}]},
           "status": {"phase": "Pending"}})
}

struct Live {
    api: FakeApiServer,
    _dir: tempfile::TempDir,
    server: ServerProcess,
    ca: TestCa,
}

async fn start() -> Live {
    install_provider();
    let api = FakeApiServer::start().await;
    api.load("Node", [node("n1"), node("n2")]);
    api.load(
        "Namespace",
        [
            json!({"metadata": {"name": "shop"}}),
            json!({"metadata": {"name": "tenant-b"}}),
        ],
    );
    api.load(
        "Pod",
        [
            pending("tenant-b", "victim", "default-scheduler"),
            pending("tenant-b", "gpu-job", "gpu-scheduler"),
            running_pod("web-1", "web", "n1"),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("security-live-ca");
    let args = live_serve_args(&ca, dir.path(), api.kubeconfig(), None);
    let server = ServerProcess::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let live = Live {
        api,
        _dir: dir,
        server,
        ca,
    };
    let probe = anonymous_client(&live.ca.cert_pem, live.server.addr)
        .build()
        .unwrap();
    eventually("the live view to be ready", || async {
        let r = probe.get(live.server.url("/readyz")).send().await;
        r.ok().filter(|r| r.status() == 200).map(|_| ())
    })
    .await;
    live
}

impl Live {
    async fn bind(&self, as_scheduler: bool, body: Value) -> (u16, Value) {
        let builder = if as_scheduler {
            client(&self.ca.cert_pem, self.server.addr)
        } else {
            anonymous_client(&self.ca.cert_pem, self.server.addr)
        };
        let response = builder
            .build()
            .unwrap()
            .post(self.server.url("/scheduler/bind"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }
}

fn binding(namespace: &str, name: &str, uid: &str, node: &str) -> Value {
    json!({"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node})
}

#[tokio::test]
async fn a_caller_without_certificate_cannot_bind_and_nothing_reaches_the_api() {
    let live = start().await;
    let (status, answer) = live
        .bind(false, binding("tenant-b", "victim", "uid-victim", "n2"))
        .await;
    assert_eq!(status, 401, "{answer}");
    assert!(live.api.bindings().is_empty());
}

#[tokio::test]
async fn kube_scheduler_binds_only_what_it_may() {
    let live = start().await;
    let refused = [
        (
            binding("tenant-b", "victim", "uid-wrong", "n2"),
            "has UID uid-victim",
        ),
        (binding("tenant-b", "victim", "", "n2"), "names no PodUID"),
        (
            binding("tenant-b", "gpu-job", "uid-gpu-job", "n2"),
            "gpu-scheduler",
        ),
        (
            binding("shop", "web-1", "uid-web-1", "n2"),
            "already bound to n1",
        ),
        (
            binding("tenant-b", "ghost", "uid-ghost", "n2"),
            "not in the cluster view",
        ),
        (binding("tenant-b", "victim", "uid-victim", "n9"), "node n9"),
    ];
    for (body, reason) in refused {
        let (status, answer) = live.bind(true, body.clone()).await;
        assert_eq!(status, 200, "{body}");
        let error = answer["Error"].as_str().unwrap_or_default();
        assert!(error.contains(reason), "{body}: {answer}");
    }
    assert!(
        live.api.bindings().is_empty(),
        "no refused binding reached the API"
    );

    let (status, answer) = live
        .bind(true, binding("tenant-b", "victim", "uid-victim", "n2"))
        .await;
    assert_eq!((status, &answer), (200, &json!({"Error": ""})));
    let sent = live.api.bindings();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["target"]["name"], "n2");
    // Now bound (assumed at once): a second bind of the same pod is refused.
    let (_, again) = live
        .bind(true, binding("tenant-b", "victim", "uid-victim", "n1"))
        .await;
    assert!(
        again["Error"]
            .as_str()
            .unwrap_or_default()
            .contains("already bound to n2"),
        "{again}"
    );
    assert_eq!(live.api.bindings().len(), 1);
}
