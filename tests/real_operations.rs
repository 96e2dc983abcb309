//! Operating kube-arbiter on a real Kubernetes control plane (the harness
//! of tests/real/, as tests/real_cluster.rs): preemption with a
//! PodDisruptionBudget, scale-in applied by the real ReplicaSet
//! controller, the people endpoints behind real tokens and RBAC, and
//! restarts of kube-apiserver and of kube-arbiter in the middle of a
//! burst. `scripts/e2e.sh` runs them one at a time; plain `cargo test`
//! lists them as ignored.

mod common;
#[allow(dead_code)] // each story uses its own part of the harness
mod real;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use futures::TryStreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use real::cluster::{
    self, Grant, account_with_rules, deployment, deployment_annotated, hard_spread, nodes,
    priority_class, wait_bound, wait_for,
};
use real::control_plane::ControlPlane;
use real::install::{Installed, Role, Setup, install};
use real::kubelet::Kubelet;
use serde_json::{Value, json};

const NS: &str = "ops";
const ZONE: &str = "topology.kubernetes.io/zone";
const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";
const MANAGED: &str = "kube-arbiter.io/deletion-cost-managed";

async fn cluster_with(name: &str, setup: Setup) -> (ControlPlane, Installed) {
    let mut plane = ControlPlane::start(name).await;
    let arbiter = install(&mut plane, setup).await;
    plane.namespace(NS).await;
    (plane, arbiter)
}

fn name_of(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap()
}

fn node_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref()?.node_name.clone()
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// The pods of `app: NAME` not being deleted.
async fn live_pods(client: &kube::Client, app: &str) -> Vec<Pod> {
    cluster::pods(client, NS, app)
        .await
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

/// The largest difference between two zones' counts.
fn zone_skew(zones: &BTreeMap<String, usize>) -> usize {
    zones.values().max().unwrap() - zones.values().min().unwrap()
}

/// A pod spec pinned to `node` (by its hostname label) asking for `cpu`,
/// with this PriorityClass.
fn pinned(node: &str, cpu: &str, class: &str) -> Value {
    json!({
        "nodeSelector": {"kubernetes.io/hostname": node},
        "priorityClassName": class,
        "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}],
    })
}

/// A ServiceAccount token that may read kube-arbiter's /metrics.
async fn metrics_token(client: &kube::Client) -> String {
    let rules = json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]);
    account_with_rules(client, NS, "scraper", Grant::ClusterWide, rules).await
}

/// Preemption through the real kube-scheduler, with the Kubelet played so
/// every pod is Ready and the disruption controller gives the PDB a real
/// `disruptionsAllowed`. Two 4-CPU nodes are full of priority-100 pods:
/// za-n0 runs `guarded` (2 × 2 CPU, a PDB with minAvailable 2, so
/// disruptionsAllowed 0), zb-n0 runs `free` (2 × 1.5 CPU, no PDB). A pod of
/// priority 1,000,000 asking for 3 CPU fits nowhere; on either node it
/// needs both pods gone (one given back would leave too little room), so
/// the two candidates have the same victim priorities and counts and
/// differ in PDB violations (2 on za-n0, 0 on zb-n0): upstream's
/// `pickOneNodeForPreemption` takes zb-n0 by its first rule, and only
/// start times (its fifth) would decide without the PDB. Asserted: kube-scheduler asked kube-arbiter's `preempt`, the pod
/// is nominated to zb-n0, both `free` pods are deleted, both `guarded`
/// pods stay, and the pod binds on zb-n0.
async fn preemption_honours_a_pdb(name: &str, role: Role) {
    let (plane, arbiter) = cluster_with(name, Setup::new(role)).await;
    let client = plane.admin.clone();
    let _kubelet = Kubelet::start(client.clone());
    cluster::node(&client, "za-n0", "za", json!({})).await;
    cluster::node(&client, "zb-n0", "zb", json!({})).await;
    priority_class(&client, "low", 100).await;
    priority_class(&client, "urgent", 1_000_000).await;
    deployment(&client, NS, "guarded", 2, pinned("za-n0", "2", "low")).await;
    deployment(&client, NS, "free", 2, pinned("zb-n0", "1500m", "low")).await;
    let pdb: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "guarded", "namespace": NS},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}},
    }))
    .unwrap();
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), NS);
    pdbs.create(&PostParams::default(), &pdb).await.unwrap();
    wait_bound(&client, NS, "guarded", 2).await;
    wait_bound(&client, NS, "free", 2).await;
    wait_for(
        "the disruption controller counts 2 healthy guarded pods",
        async || {
            let status = pdbs
                .get("guarded")
                .await
                .unwrap()
                .status
                .unwrap_or_default();
            match (status.current_healthy, status.disruptions_allowed) {
                (2, 0) => Ok(()),
                other => Err(format!("(currentHealthy, disruptionsAllowed) = {other:?}")),
            }
        },
    )
    .await;
    let guarded: BTreeSet<String> = live_pods(&client, "guarded")
        .await
        .iter()
        .map(|p| p.metadata.uid.clone().unwrap())
        .collect();
    let free: BTreeSet<String> = live_pods(&client, "free")
        .await
        .iter()
        .map(|p| p.metadata.uid.clone().unwrap())
        .collect();

    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let events = watcher(
        pods.clone(),
        watcher::Config::default().fields("metadata.name=urgent"),
    );
    let mut events = std::pin::pin!(events.applied_objects());
    let urgent: Pod = serde_json::from_value(json!({
        "metadata": {"name": "urgent"},
        "spec": {"priorityClassName": "urgent",
                 "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": "3", "memory": "64Mi"}}}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &urgent).await.unwrap();
    // Every version of the pod, until it is bound: the nomination may be
    // gone by then.
    let mut nominated = BTreeSet::new();
    let bound_to = tokio::time::timeout(cluster::BIND_PATIENCE, async {
        while let Some(pod) = events.try_next().await.unwrap() {
            nominated.extend(
                pod.status
                    .as_ref()
                    .and_then(|s| s.nominated_node_name.clone()),
            );
            if let Some(node) = node_of(&pod) {
                return node;
            }
        }
        unreachable!("the watch ended")
    })
    .await
    .unwrap_or_else(|_| panic!("urgent not bound; nominated {nominated:?}"));
    let all = pods.list(&Default::default()).await.unwrap().items;
    let left = |uids: &BTreeSet<String>| -> usize {
        all.iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| uids.contains(p.metadata.uid.as_ref().unwrap()))
            .count()
    };
    assert_eq!(
        (nominated, bound_to.as_str(), left(&free), left(&guarded)),
        (BTreeSet::from(["zb-n0".to_string()]), "zb-n0", 0, 2),
        "(nominated to, bound to, free pods left, guarded pods left)"
    );
    let metrics = arbiter.metrics(&client).await;
    let preempt = r#"kube_arbiter_http_requests_total{route="/scheduler/preempt",status="200"} "#;
    assert!(
        metrics.lines().any(|l| l.starts_with(preempt)),
        "kube-arbiter's preempt was not called"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn preemption_honours_a_pdb_next_to_in_tree_plugins() {
    preemption_honours_a_pdb("preempt-pdb-next-to", Role::NextToInTreePlugins).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn preemption_honours_a_pdb_as_enforcer() {
    preemption_honours_a_pdb("preempt-pdb-enforcer", Role::Enforcer).await;
}

/// Scale-in applied by the real ReplicaSet controller. Zone za has one
/// node, zb and zc four each; 9 replicas under a hard zone spread land
/// 3/3/3, za's three stacked on za-n0, every other pod alone on its node
/// (asserted before going on). The controller's own order
/// (`ActivePodsWithRanks.Less` in pkg/controller/controller_utils.go,
/// sorted by `getPodsToDelete` in pkg/controller/replicaset) puts
/// unassigned, then not-Running, then not-Ready pods first (none here: the
/// Kubelet is played), then the lower pod-deletion-cost, then the pod with
/// more active pods of the workload on its node; ready time and age only
/// break ties after that. Without costs, scaling 9 to 6 therefore deletes
/// the three pods of za-n0 (rank 3 against 1) and leaves zones 0/3/3, skew
/// 3. With `kube-arbiter.io/scale-in: preserve-spread` (and
/// `scale-in-max: "3"`) kube-arbiter's costs must make it 2/2/2. A user's
/// own cost on a zb pod is never touched; opting out removes every cost
/// kube-arbiter set and keeps that one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn scale_in_keeps_zone_spread_and_opt_out_keeps_the_users_cost() {
    let (plane, _arbiter) =
        cluster_with("scale-in-applied", Setup::new(Role::NextToInTreePlugins)).await;
    let client = plane.admin.clone();
    let _kubelet = Kubelet::start(client.clone());
    cluster::node(&client, "za-n0", "za", json!({})).await;
    for zone in ["zb", "zc"] {
        for i in 0..4 {
            cluster::node(&client, &format!("{zone}-n{i}"), zone, json!({})).await;
        }
    }
    let opted_in = json!({"kube-arbiter.io/scale-in": "preserve-spread",
                          "kube-arbiter.io/scale-in-max": "3"});
    deployment_annotated(&client, NS, "web", 9, opted_in, hard_spread("web", ZONE)).await;
    let ready = |pod: &Pod| {
        pod.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    };
    let placed: Vec<Pod> = wait_for("9 web pods bound and Ready", async || {
        let pods = live_pods(&client, "web").await;
        let ready_count = pods.iter().filter(|p| ready(p)).count();
        if pods.len() == 9 && ready_count == 9 {
            Ok(pods)
        } else {
            Err(format!("{} pods, {ready_count} Ready", pods.len()))
        }
    })
    .await;
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for pod in &placed {
        *per_node.entry(node_of(pod).unwrap()).or_default() += 1;
    }
    assert!(
        per_node["za-n0"] == 3 && per_node.values().filter(|&&n| n > 1).count() == 1,
        "the start this story needs is za-n0 with 3 pods and every other pod alone: {per_node:?}"
    );

    // A user's own cost, high: this pod is to be kept.
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let users = placed
        .iter()
        .find(|p| node_of(p).unwrap().starts_with("zb-"))
        .map(name_of)
        .unwrap();
    let users_cost = json!({"metadata": {"annotations": {DELETION_COST: "100"}}});
    pods.patch(&users, &PatchParams::default(), &Patch::Merge(&users_cost))
        .await
        .unwrap();

    let managed = |pods: &[Pod]| -> Vec<String> {
        pods.iter()
            .filter(|p| {
                annotation(p, MANAGED).is_some_and(|m| annotation(p, DELETION_COST) == Some(m))
            })
            .map(name_of)
            .collect()
    };
    wait_for("kube-arbiter's costs on 3 pods", async || {
        let pods = live_pods(&client, "web").await;
        match managed(&pods) {
            m if m.len() == 3 => Ok(()),
            m => Err(format!("managed: {m:?}")),
        }
    })
    .await;

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let six = json!({"spec": {"replicas": 6}});
    deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(&six))
        .await
        .unwrap();
    let kept = wait_for("6 web pods left, none terminating", async || {
        let all = cluster::pods(&client, NS, "web").await;
        if all.len() == 6 && all.iter().all(|p| p.metadata.deletion_timestamp.is_none()) {
            Ok(all)
        } else {
            Err(format!("{} pods", all.len()))
        }
    })
    .await;
    let zones = cluster::per_zone(&kept.iter().filter_map(node_of).collect::<Vec<_>>());
    assert!(
        zones.len() == 3 && zone_skew(&zones) <= 1,
        "after scaling to 6: {zones:?}"
    );
    let users_pod = kept
        .iter()
        .find(|p| name_of(p) == users)
        .expect("the pod with the user's high cost was deleted");
    // kube-arbiter may have costed that pod before the user's patch; the
    // companion then still names kube-arbiter's value, not the user's.
    assert_eq!(annotation(users_pod, DELETION_COST), Some("100"));
    assert_ne!(annotation(users_pod, MANAGED), Some("100"));

    // Six pods, two on za-n0: the controller's order would empty za again,
    // so kube-arbiter keeps costs; then the Deployment opts out.
    wait_for("kube-arbiter's costs on the 6 pods", async || {
        let m = managed(&live_pods(&client, "web").await);
        if m.is_empty() { Err("none") } else { Ok(()) }
    })
    .await;
    let opt_out = json!({"metadata": {"annotations": {"kube-arbiter.io/scale-in": null}}});
    deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(&opt_out))
        .await
        .unwrap();
    wait_for("only the user's cost left after opting out", async || {
        let pods = live_pods(&client, "web").await;
        let costs: BTreeMap<String, Option<&str>> = pods
            .iter()
            .filter(|p| annotation(p, DELETION_COST).is_some() || annotation(p, MANAGED).is_some())
            .map(|p| (name_of(p), annotation(p, DELETION_COST)))
            .collect();
        if costs == BTreeMap::from([(users.clone(), Some("100"))]) {
            Ok(())
        } else {
            Err(format!("{costs:?}"))
        }
    })
    .await;
}

/// `GET /debug/explain`, `GET /debug/scale-in` and `GET /metrics` with
/// real ServiceAccount tokens, reviewed by the real API server under real
/// RBAC: `viewer` (a Role allowing get and list pods in `ops`) is answered
/// in `ops` (200), refused in `tenant-b` (403, naming it) and on /metrics
/// (403); `scraper` (a ClusterRole allowing `get` on the nonResourceURL
/// /metrics, nothing else) reads /metrics and is refused explain; without
/// a token every one is 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn people_endpoints_follow_real_tokens_and_rbac() {
    let (plane, arbiter) = cluster_with("people-rbac", Setup::new(Role::NextToInTreePlugins)).await;
    let client = plane.admin.clone();
    plane.namespace("tenant-b").await;
    nodes(&client, &["za", "zb"], 1).await;
    let opted_in = json!({"kube-arbiter.io/scale-in": "preserve-spread"});
    deployment_annotated(&client, NS, "shop", 2, opted_in, hard_spread("shop", ZONE)).await;
    deployment(&client, "tenant-b", "ledger", 1, json!({})).await;
    wait_bound(&client, NS, "shop", 2).await;
    wait_bound(&client, "tenant-b", "ledger", 1).await;
    let shop = name_of(&cluster::pods(&client, NS, "shop").await[0]);
    let ledger = name_of(&cluster::pods(&client, "tenant-b", "ledger").await[0]);

    let pod_reader = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]);
    let viewer = account_with_rules(&client, NS, "viewer", Grant::InNamespace, pod_reader).await;
    let scraper = metrics_token(&client).await;

    let get = |path: String, token: Option<String>| {
        let request = arbiter.anonymous.get(arbiter.url(&path));
        async move {
            let request = match token {
                Some(token) => request.bearer_auth(token),
                None => request,
            };
            let answer = request.send().await.unwrap();
            let status = answer.status().as_u16();
            let challenge = answer.headers().get("www-authenticate").cloned();
            (status, challenge, answer.text().await.unwrap())
        }
    };
    let viewer = Some(viewer);
    let scraper = Some(scraper);
    let own_pod = format!("/debug/explain?namespace={NS}&name={shop}");
    let other_pod = format!("/debug/explain?namespace=tenant-b&name={ledger}");
    let own_plan = format!("/debug/scale-in?namespace={NS}&name=shop");
    let other_plan = "/debug/scale-in?namespace=tenant-b".to_string();

    // The view lags the API server: 404 until the pod (and the opted-in
    // Deployment) are in it.
    let explained = wait_for(
        "explain answers viewer for its own pod",
        async || match get(own_pod.clone(), viewer.clone()).await {
            (200, _, body) => Ok(body),
            (status, _, body) => Err(format!("{status} {body}")),
        },
    )
    .await;
    let explained: Value = serde_json::from_str(&explained).unwrap();
    assert_eq!(explained["pod"], format!("{NS}/{shop}"));
    assert!(explained["boundTo"].is_string(), "{explained}");
    let plan = wait_for(
        "/debug/scale-in answers viewer for its namespace",
        async || match get(own_plan.clone(), viewer.clone()).await {
            (200, _, body) => Ok(body),
            (status, _, body) => Err(format!("{status} {body}")),
        },
    )
    .await;
    let plan: Value = serde_json::from_str(&plan).unwrap();
    assert_eq!(plan["namespace"], NS, "{plan}");
    assert_eq!(plan["workloads"].as_array().unwrap().len(), 1, "{plan}");

    for path in [&other_pod, &other_plan] {
        let (status, _, body) = get(path.clone(), viewer.clone()).await;
        assert_eq!(status, 403, "viewer on {path}: {body}");
        assert!(body.contains("tenant-b"), "viewer on {path}: {body}");
    }
    let (status, _, body) = get("/metrics".into(), viewer.clone()).await;
    assert_eq!(status, 403, "viewer on /metrics: {body}");

    let (status, _, body) = get("/metrics".into(), scraper.clone()).await;
    assert_eq!(status, 200, "scraper on /metrics: {body}");
    assert!(body.contains("kube_arbiter_"), "{body}");
    let (status, _, body) = get(own_pod.clone(), scraper.clone()).await;
    assert_eq!(status, 403, "scraper on explain: {body}");

    assert_eq!(arbiter.warnings(), Vec::<String>::new());
    let tokenless = [own_pod, other_pod, own_plan, other_plan, "/metrics".into()];
    for path in &tokenless {
        let (status, challenge, body) = get(path.clone(), None).await;
        assert_eq!(status, 401, "no token on {path}: {body}");
        assert_eq!(
            challenge.as_ref().and_then(|c| c.to_str().ok()),
            Some("Bearer"),
            "no token on {path}"
        );
    }
    // A caller without a credential is logged (WARN `refused:`, its
    // address and the reason), as docs/troubleshooting.md says of the
    // extender routes; the 403s above are answers, and log nothing.
    let warnings = arbiter.warnings();
    assert_eq!(warnings.len(), tokenless.len(), "{warnings:#?}");
    for (line, path) in warnings.iter().zip(&tokenless) {
        let path = path.split('?').next().unwrap();
        assert!(
            line.contains("refused: this route needs a bearer token")
                && line.contains("peer=\"127.0.0.1:")
                && line.contains(&format!("path={path}")),
            "{line}"
        );
    }
}

/// A kube-apiserver restart is one outage in kube-arbiter's log, as
/// docs/live-source.md says: one WARN when the watches break, one INFO
/// when the API server answers again, and "errors the server answers while
/// it is still coming up count as part of the same outage, not as new
/// warnings" (a real kube-apiserver answers 403 for a moment after its
/// start, until its RBAC authorizer has synced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn apiserver_restart_is_one_warning_in_kube_arbiters_log() {
    let (mut plane, arbiter) = cluster_with(
        "restart-apiserver-log",
        Setup::new(Role::NextToInTreePlugins),
    )
    .await;
    plane.restart_apiserver().await;
    let marker = "API server reachable again after";
    wait_for(&format!("kube-arbiter logs {marker:?}"), async || {
        arbiter.warnings_after(marker).ok_or("not yet")
    })
    .await;
    let warnings = arbiter.warnings();
    assert!(
        warnings.len() == 1 && warnings[0].contains("API server unreachable"),
        "{} WARN/ERROR lines for one restart: {warnings:#?}",
        warnings.len()
    );
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Restarted {
    ApiServer,
    KubeArbiter,
}

/// A 30-replica burst under a hard zone spread over three zones of four
/// nodes, with kube-apiserver or kube-arbiter killed and started again
/// once the first pod is bound (and before all are), the Kubelet played.
/// Every pod binds, the zones end at most one pod apart (two across a
/// kube-apiserver restart, see below), and kube-arbiter is quiet
/// afterwards. "Quiet" means: no WARN or ERROR line after the line that
/// says its view is connected again (`API server reachable again after`
/// once kube-apiserver is back, `connected to the API server after` in the
/// restarted kube-arbiter's log), up to the moment its view shows every
/// pod of the burst bound where the API server says (each asked through
/// `/debug/explain`). The outage's own WARN, before that line, is the one
/// docs/live-source.md promises.
async fn burst_survives_a_restart(name: &str, role: Role, restarted: Restarted) {
    let (mut plane, mut arbiter) = cluster_with(name, Setup::new(role)).await;
    let client = plane.admin.clone();
    let _kubelet = Kubelet::start(client.clone());
    nodes(&client, &["za", "zb", "zc"], 4).await;
    let pod_reader = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]);
    let observer =
        account_with_rules(&client, NS, "observer", Grant::ClusterWide, pod_reader).await;
    deployment(&client, NS, "web", 30, hard_spread("web", ZONE)).await;
    // Watched, not polled: the burst takes about a second.
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), NS);
    let events = watcher(pods_api, watcher::Config::default().labels("app=web"));
    let mut events = std::pin::pin!(events.applied_objects());
    while let Some(pod) = events.try_next().await.unwrap() {
        if node_of(&pod).is_some() {
            break;
        }
    }
    let before = live_pods(&client, "web")
        .await
        .iter()
        .filter(|p| node_of(p).is_some())
        .count();
    let started = Instant::now();
    let marker = match restarted {
        Restarted::ApiServer => {
            plane.restart_apiserver().await;
            "API server reachable again after"
        }
        Restarted::KubeArbiter => {
            arbiter.restart().await;
            "connected to the API server after"
        }
    };
    let restart_took = started.elapsed();
    assert!(before < 30, "the burst was over before the restart");
    // The ReplicaSet controller may create a few pods too many around
    // kube-apiserver's restart (a create answered with an error that went
    // through) and deletes them again: settled is 30 pods, all bound.
    let pods = wait_for("30 web pods, all bound, none terminating", async || {
        let all = cluster::pods(&client, NS, "web").await;
        let bound = all.iter().filter(|p| node_of(p).is_some()).count();
        if all.len() == 30 && bound == 30 {
            Ok(all)
        } else {
            Err(format!("{} pods, {bound} bound", all.len()))
        }
    })
    .await;
    eprintln!(
        "{before} pods bound before the restart ({restart_took:?}), all 30 {:?} after it began",
        started.elapsed()
    );
    let zones = cluster::per_zone(&pods.iter().filter_map(node_of).collect::<Vec<_>>());
    // A Binding whose answer kube-apiserver's restart cut may have been
    // made: whoever posted it (kube-scheduler next to the in-tree plugins,
    // kube-arbiter as the enforcer) cannot tell, and the pod is scheduled
    // again on a view that does not count it yet. kube-scheduler alone has
    // the same window, so a zone may end one pod over maxSkew then.
    let allowed = match restarted {
        Restarted::ApiServer => 2,
        Restarted::KubeArbiter => 1,
    };
    assert!(
        zones.len() == 3 && zone_skew(&zones) <= allowed,
        "zone skew: {zones:?}"
    );

    // Settled: kube-arbiter's view has every pod bound where it is.
    for pod in &pods {
        let path = format!("/debug/explain?namespace={NS}&name={}", name_of(pod));
        let node = node_of(pod).unwrap();
        wait_for(&format!("kube-arbiter sees {path} on {node}"), async || {
            let answer = arbiter
                .anonymous
                .get(arbiter.url(&path))
                .bearer_auth(&observer)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            let status = answer.status();
            let body: Value = answer.json().await.unwrap_or_default();
            if status == 200 && body["boundTo"] == node.as_str() {
                Ok(())
            } else {
                Err(format!("{status} {body}"))
            }
        })
        .await;
    }
    let after = arbiter
        .warnings_after(marker)
        .unwrap_or_else(|| panic!("kube-arbiter never logged {marker:?}:\n{}", arbiter.log()));
    // The same cut answer, as the enforcer: kube-scheduler's retry of a
    // pod whose Binding was made is refused, by kube-arbiter's guard when
    // its view shows the pod bound, else by the API server.
    let after: Vec<String> = after
        .into_iter()
        .filter(|l| {
            !(restarted == Restarted::ApiServer
                && (l.contains("is already bound to") || l.contains("is already assigned to node")))
        })
        .collect();
    assert_eq!(after, Vec::<String>::new(), "WARN/ERROR after {marker:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn burst_survives_an_apiserver_restart_next_to_in_tree_plugins() {
    burst_survives_a_restart(
        "restart-apiserver-next-to",
        Role::NextToInTreePlugins,
        Restarted::ApiServer,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn burst_survives_an_apiserver_restart_as_enforcer() {
    burst_survives_a_restart(
        "restart-apiserver-enforcer",
        Role::Enforcer,
        Restarted::ApiServer,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn burst_survives_a_kube_arbiter_restart_next_to_in_tree_plugins() {
    burst_survives_a_restart(
        "restart-arbiter-next-to",
        Role::NextToInTreePlugins,
        Restarted::KubeArbiter,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn burst_survives_a_kube_arbiter_restart_as_enforcer() {
    burst_survives_a_restart(
        "restart-arbiter-enforcer",
        Role::Enforcer,
        Restarted::KubeArbiter,
    )
    .await;
}
