//! Scale-in that keeps spread, applied (docs/scale-in-controller.md): the
//! built server in live mode against the in-process API server keeps
//! pod-deletion-cost on an opted-in Deployment's pods. Each test reads the
//! pods back from the API server after kube-arbiter's patches and emulates
//! the ReplicaSet controller's choice with kube-arbiter's port of
//! upstream's `getPodsToDelete` order (`ActivePodsWithRanks`,
//! pkg/controller/replicaset/replica_set.go; `policy::scale_in`).

mod common;
#[path = "support/fake_apiserver.rs"]
mod fake_apiserver;

use std::collections::BTreeMap;

use common::{Arbiter, Launch, eventually, metric};
use fake_apiserver::{FakeApiServer, METRICS_TOKEN, api_node};
use kube_arbiter::cluster::{ClusterObjects, Snapshot};
use kube_arbiter::model::{Node, Pod};
use kube_arbiter::policy::scale_in::{ScaleInRequest, scale_in};
use kube_arbiter::testing::{ZONE, make_pod, namespace_json};
use serde_json::{Value, json};

const COST: &str = "controller.kubernetes.io/pod-deletion-cost";
const MANAGED: &str = "kube-arbiter.io/deletion-cost-managed";
const READER: &str = "system:serviceaccount:shop:sre";
const READER_TOKEN: &str = "sre-token";
const CONFIG: &str =
    "scaleIn:\n  intervalMillis: 200\n  patchesPerSecond: 100\n  leaseDurationSeconds: 3\n";
const MAX: usize = 4;

fn deployment(annotations: Value) -> Value {
    json!({"metadata": {"name": "web", "namespace": "shop", "uid": "uid-deploy-web",
           "annotations": annotations},
           "spec": {"replicas": 9, "selector": {"matchLabels": {"app": "web"}}}})
}

/// The Deployment controller's ReplicaSet, with the annotations it copied.
fn replica_set() -> Value {
    json!({"metadata": {"name": "web-7d4", "namespace": "shop", "uid": "uid-rs-web",
           "annotations": {"kube-arbiter.io/scale-in": "preserve-spread",
                           "kube-arbiter.io/scale-in-max": MAX.to_string()},
           "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                "uid": "uid-deploy-web", "controller": true}]},
           "spec": {"replicas": 9, "selector": {"matchLabels": {"app": "web"}}}})
}

/// A ready pod of `web-7d4` on `node`, ready for `ready_hours_ago`.
fn web_pod(name: &str, node: &str, ready_hours_ago: i64) -> Value {
    let ready = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(ready_hours_ago);
    make_pod("shop", name)
        .uid(&format!("uid-{name}"))
        .labels(&[("app", "web"), ("pod-template-hash", "7d4")])
        .meta("creationTimestamp", "2024-01-01T00:00:00Z".into())
        .owner("apps/v1", "ReplicaSet", "web-7d4", "uid-rs-web")
        .node(node)
        .requests(&[])
        .spread(1, ZONE, "DoNotSchedule", &[("app", "web")])
        .phase("Running")
        .ready_since(&format!("{ready:.0}"))
        .json()
}

/// Zones a/b/c hold 4/3/2 pods, one per node. Zone c's pods became ready
/// last, so the controller alone deletes them first and empties zone c.
fn cluster() -> (Vec<Value>, Vec<Value>) {
    let mut nodes = Vec::new();
    let mut pods = Vec::new();
    for (zone, n, hours) in [("a", 4, 720), ("b", 3, 480), ("c", 2, 1)] {
        for i in 0..n {
            let name = format!("{zone}{i}");
            nodes.push(api_node(&name).zone(zone).json());
            pods.push(web_pod(&format!("web-{name}"), &name, hours));
        }
    }
    // The user protects one zone-a pod with a cost of their own.
    pods[0]["metadata"]["annotations"] = json!({COST: "7"});
    (nodes, pods)
}

struct Live {
    api: FakeApiServer,
    servers: Vec<Arbiter>,
}

async fn start(replicas: usize) -> Live {
    start_with(replicas, CONFIG, cluster().1).await
}

async fn start_with(replicas: usize, config: &str, pods: Vec<Value>) -> Live {
    start_on(FakeApiServer::start().await, replicas, config, pods)
}

fn start_on(api: FakeApiServer, replicas: usize, config: &str, pods: Vec<Value>) -> Live {
    let nodes = cluster().0;
    api.load("Node", nodes);
    api.load("Namespace", [namespace_json("shop", &[])]);
    api.load(
        "Deployment",
        [deployment(
            json!({"kube-arbiter.io/scale-in": "preserve-spread",
                           "kube-arbiter.io/scale-in-max": MAX.to_string()}),
        )],
    );
    api.load("ReplicaSet", [replica_set()]);
    api.load("Pod", pods);
    api.add_token(READER_TOKEN, READER, &[]);
    api.allow(READER, "list", "pods", Some("shop"));
    let servers = (0..replicas)
        .map(|_| Launch::live(api.kubeconfig()).config(config).start())
        .collect();
    Live { api, servers }
}

impl Live {
    fn http(&self, i: usize) -> reqwest::Client {
        self.servers[i].anonymous()
    }

    /// The workload's pods as the API server holds them now.
    fn pods(&self) -> Vec<Value> {
        let names = ["a0", "a1", "a2", "a3", "b0", "b1", "b2", "c0", "c1", "c2"];
        names
            .iter()
            .filter_map(|n| self.api.get("Pod", "shop", &format!("web-{n}")))
            .collect()
    }

    fn annotated(&self) -> BTreeMap<String, (Option<String>, bool)> {
        self.pods()
            .iter()
            .map(|p| {
                let a = &p["metadata"]["annotations"];
                (
                    p["metadata"]["name"].as_str().unwrap().to_string(),
                    (
                        a[COST].as_str().map(String::from),
                        a[MANAGED].is_string() && a[MANAGED] == a[COST],
                    ),
                )
            })
            .collect()
    }

    fn patches(&self) -> usize {
        self.api
            .requests()
            .iter()
            .filter(|r| r.starts_with("PATCH "))
            .count()
    }

    async fn plan(&self, i: usize) -> Option<Value> {
        let r = self
            .http(i)
            .get(self.servers[i].url("/debug/scale-in?namespace=shop&name=web"))
            .bearer_auth(READER_TOKEN)
            .send()
            .await
            .ok()?;
        if r.status() != 200 {
            return None;
        }
        r.json().await.ok()
    }

    /// Once the pods carry exactly what the plan wants.
    async fn converged(&self) -> Value {
        eventually("the pods to carry the planned costs", || async {
            let plan = self.plan(0).await?;
            let pods = plan["workloads"][0]["pods"].as_array()?;
            let done = pods.iter().all(|p| {
                let desired = p["desired"].as_i64().map(|c| c.to_string());
                p["usersCost"] == true
                    || (p["current"].as_str().map(String::from) == desired
                        && p["managed"].as_bool() == Some(desired.is_some()))
            });
            done.then_some(plan)
        })
        .await
    }

    async fn metrics(&self, i: usize) -> String {
        let r = self
            .http(i)
            .get(self.servers[i].url("/metrics"))
            .bearer_auth(METRICS_TOKEN)
            .send()
            .await
            .unwrap();
        r.text().await.unwrap()
    }

    /// The Lease's resourceVersion: it moves on at every renewal.
    fn lease_version(&self) -> Option<u64> {
        let lease = self.api.lease("kube-system", "kube-arbiter-scale-in")?;
        lease["metadata"]["resourceVersion"].as_str()?.parse().ok()
    }

    /// Wait until the Lease holder has renewed `n` more times: the writer
    /// has had that many rounds to (wrongly) patch again.
    async fn rounds(&self, n: u64) {
        let from = self.lease_version().unwrap_or(0);
        let mut seen = 0;
        let mut last = from;
        eventually("lease renewals", || {
            if let Some(v) = self.lease_version()
                && v != last
            {
                last = v;
                seen += 1;
            }
            let done = seen >= n;
            async move { done.then_some(()) }
        })
        .await;
    }
}

/// The zone of each survivor, per zone, after the controller deletes `k`
/// of `pods` (as the API server holds them) in its own order.
fn zones_after(nodes: &[Value], pods: &[Value], k: usize) -> BTreeMap<String, i64> {
    let nodes: Vec<Node> = nodes
        .iter()
        .map(|n| serde_json::from_value(n.clone()).unwrap())
        .collect();
    let pods: Vec<Pod> = pods
        .iter()
        .map(|p| serde_json::from_value(p.clone()).unwrap())
        .collect();
    let snapshot = Snapshot::build(ClusterObjects {
        nodes,
        pods: pods.clone(),
        ..Default::default()
    });
    let refs: Vec<&Pod> = pods.iter().collect();
    let out = scale_in(
        &snapshot,
        &refs,
        ScaleInRequest {
            count: k,
            preserve_spread: None,
            now: jiff::Timestamp::now(),
        },
    );
    let mut zones: BTreeMap<String, i64> = ["a", "b", "c"].map(|z| (z.to_string(), 0)).into();
    for p in &pods {
        if out
            .victims
            .iter()
            .any(|v| v.pod.metadata.name == p.metadata.name)
        {
            continue;
        }
        *zones.get_mut(&p.spec.node_name[..1]).unwrap() += 1;
    }
    zones
}

fn skew(zones: &BTreeMap<String, i64>) -> i64 {
    zones.values().max().unwrap() - zones.values().min().unwrap()
}

#[tokio::test]
async fn every_scale_down_up_to_n_keeps_max_skew_with_the_costs_kube_arbiter_wrote() {
    let live = start(1).await;
    let (nodes, original) = cluster();
    // Without costs the controller breaks maxSkew: the test can fail.
    assert!(
        (1..=MAX).any(|k| skew(&zones_after(&nodes, &original, k)) > 1),
        "the controller alone keeps spread: nothing to test"
    );
    let plan = live.converged().await;
    let pods = live.pods();
    for k in 1..=MAX {
        let zones = zones_after(&nodes, &pods, k);
        assert!(skew(&zones) <= 1, "scale down by {k}: {zones:?}\n{plan:#}");
    }
    let annotated = live.annotated();
    // The user's own cost is left as it was, and never marked as ours.
    assert_eq!(annotated["web-a0"], (Some("7".into()), false));
    let ours = annotated.values().filter(|(_, managed)| *managed).count();
    assert!((1..=MAX).contains(&ours), "{annotated:?}");
    let workload = &plan["workloads"][0];
    assert_eq!(workload["keepsSpread"], true, "{plan:#}");
    assert_eq!(workload["optedInBy"], "Deployment shop/web");
    let text = live.metrics(0).await;
    assert_eq!(metric(&text, "kube_arbiter_scale_in_leader"), Some(1.0));
    assert_eq!(
        metric(&text, "kube_arbiter_scale_in_workloads_managed"),
        Some(1.0)
    );
    assert_eq!(
        metric(&text, "kube_arbiter_scale_in_pods_annotated"),
        Some(ours as f64)
    );
    assert!(
        text.contains("kube_arbiter_scale_in_guaranteed_skew{namespace=\"shop\",replicaset=\"web-7d4\",topology_key=\"topology.kubernetes.io/zone\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn the_scale_in_plan_needs_a_caller_allowed_to_list_the_namespaces_pods() {
    let live = start(1).await;
    let url = live.servers[0].url("/debug/scale-in?namespace=shop&name=web");
    let anonymous = live.http(0).get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let elsewhere = live.servers[0].url("/debug/scale-in?namespace=kube-system");
    let refused = live
        .http(0)
        .get(&elsewhere)
        .bearer_auth(READER_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let plan = live.converged().await;
    assert_eq!(plan["workloads"][0]["replicaSet"], "web-7d4");
}

#[tokio::test]
async fn opting_out_on_the_deployment_removes_the_costs_though_the_replica_set_keeps_its_copy() {
    let live = start(1).await;
    live.converged().await;
    // The Deployment controller never removes an annotation it copied:
    // the ReplicaSet still says preserve-spread; the Deployment decides.
    live.api.apply("Deployment", deployment(json!({})));
    eventually("kube-arbiter's costs to be removed", || async {
        let ours_gone = live
            .annotated()
            .iter()
            .all(|(name, (cost, managed))| !managed && (name == "web-a0" || cost.is_none()));
        ours_gone.then_some(())
    })
    .await;
    assert_eq!(live.annotated()["web-a0"], (Some("7".into()), false));
}

#[tokio::test]
async fn two_replicas_one_writer() {
    let live = start(2).await;
    live.converged().await;
    let leaders = eventually("one replica to hold the Lease", || async {
        let mut leaders = Vec::new();
        for i in 0..2 {
            leaders.push(metric(
                &live.metrics(i).await,
                "kube_arbiter_scale_in_leader",
            )?);
        }
        Some(leaders)
    })
    .await;
    assert_eq!(leaders.iter().sum::<f64>(), 1.0, "{leaders:?}");
    let follower = leaders.iter().position(|l| *l == 0.0).unwrap();
    let text = live.metrics(follower).await;
    assert!(
        !text.contains("kube_arbiter_scale_in_patches_total{"),
        "the follower patched: {text}"
    );
    let lease = live
        .api
        .lease("kube-system", "kube-arbiter-scale-in")
        .unwrap();
    assert!(
        lease["spec"]["holderIdentity"].as_str().is_some(),
        "{lease}"
    );
    // Both keep serving the plan.
    assert!(live.plan(follower).await.is_some());
}

#[tokio::test]
async fn a_new_or_deleted_pod_replans_with_a_bounded_number_of_patches_and_then_none() {
    let live = start(1).await;
    live.converged().await;
    let settled = live.patches();
    live.rounds(5).await;
    assert_eq!(
        live.patches(),
        settled,
        "patched again with nothing changed"
    );

    // A pod scheduled into zone c: 4/3/3.
    live.api.apply("Node", api_node("c2").zone("c").json());
    live.api.apply("Pod", web_pod("web-c2", "c2", 0));
    eventually("the new pod in the plan", || async {
        let plan = live.plan(0).await?;
        let pods = plan["workloads"][0]["pods"].as_array()?.len();
        (pods == 10).then_some(())
    })
    .await;
    live.converged().await;
    let after_new = live.patches();
    assert!(
        after_new - settled <= 2 * MAX,
        "{} patches for one new pod",
        after_new - settled
    );

    live.api.delete("Pod", "shop", "web-a1");
    eventually("the deleted pod out of the plan", || async {
        let plan = live.plan(0).await?;
        let pods = plan["workloads"][0]["pods"].as_array()?.len();
        (pods == 9).then_some(())
    })
    .await;
    live.converged().await;
    let after_delete = live.patches();
    assert!(
        after_delete - after_new <= 2 * MAX,
        "{} patches for one deleted pod",
        after_delete - after_new
    );
    live.rounds(5).await;
    assert_eq!(
        live.patches(),
        after_delete,
        "patched again with nothing changed"
    );
}

#[tokio::test]
async fn when_the_writer_stops_the_other_replica_takes_the_lease_and_writes() {
    let live = start(2).await;
    live.converged().await;
    let leader = eventually("one replica to hold the Lease", || async {
        for i in 0..2 {
            if metric(&live.metrics(i).await, "kube_arbiter_scale_in_leader") == Some(1.0) {
                return Some(i);
            }
        }
        None
    })
    .await;
    let other = 1 - leader;
    live.servers[leader].process.sigterm();
    eventually("the other replica to take the Lease", || async {
        let text = live.metrics(other).await;
        (metric(&text, "kube_arbiter_scale_in_leader") == Some(1.0)).then_some(())
    })
    .await;
    // It writes: an opt-out now is carried out by the new holder.
    live.api.apply("Deployment", deployment(json!({})));
    eventually("the new writer to remove the costs", || async {
        let gone = live.annotated().values().all(|(_, managed)| !managed);
        gone.then_some(())
    })
    .await;
    let lease = live
        .api
        .lease("kube-system", "kube-arbiter-scale-in")
        .unwrap();
    assert_eq!(lease["spec"]["leaseTransitions"], 1, "{lease}");
}

const LEASE_PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";

/// The API server takes the Lease requests and never answers: the writer
/// gives the Lease up when its renew deadline (2 s of the 3 s Lease)
/// passes, instead of showing itself the writer for ever while no other
/// replica may take over; once the API server answers, it renews again.
#[tokio::test]
async fn an_unanswered_lease_renewal_ends_the_writers_term_at_its_deadline() {
    let live = start(1).await;
    live.converged().await;
    let leader = |text: String| metric(&text, "kube_arbiter_scale_in_leader");
    assert_eq!(leader(live.metrics(0).await), Some(1.0));
    live.api.hang("GET", LEASE_PATH);
    live.api.hang("PUT", LEASE_PATH);
    eventually("the writer to give the Lease up", || async {
        (leader(live.metrics(0).await) == Some(0.0)).then_some(())
    })
    .await;
    live.api.answer_all();
    eventually("the writer to renew again", || async {
        (leader(live.metrics(0).await) == Some(1.0)).then_some(())
    })
    .await;
}

/// Pod patches that are never answered: each fails after its timeout,
/// and meanwhile the Lease goes on being renewed and the replica stays
/// the writer.
#[tokio::test]
async fn unanswered_patches_fail_in_time_and_do_not_hold_up_the_lease() {
    let api = FakeApiServer::start().await;
    api.hang("PATCH", "/api/v1/namespaces/shop/pods/");
    let live = start_on(api, 1, CONFIG, cluster().1);
    live.rounds(3).await;
    let failed = "kube_arbiter_scale_in_patches_total{result=\"failed\"}";
    eventually("a patch to time out", || async {
        let text = live.metrics(0).await;
        (metric(&text, failed) >= Some(1.0)).then_some(())
    })
    .await;
    // The renewals went on while patches hung.
    live.rounds(3).await;
    let text = live.metrics(0).await;
    assert_eq!(metric(&text, "kube_arbiter_scale_in_leader"), Some(1.0));
    assert_eq!(
        metric(
            &text,
            "kube_arbiter_scale_in_patches_total{result=\"applied\"}"
        ),
        None,
        "{text}"
    );
}

#[tokio::test]
async fn turned_off_it_removes_its_own_costs_and_sets_none() {
    let mut pods = cluster().1;
    pods[5]["metadata"]["annotations"] = json!({COST: "-3", MANAGED: "-3"});
    let config = format!("{CONFIG}  manageDeletionCost: false\n");
    let live = start_with(1, &config, pods).await;
    eventually("its old cost to be removed", || async {
        let annotated = live.annotated();
        (annotated["web-b1"] == (None, false)).then_some(())
    })
    .await;
    live.rounds(5).await;
    let annotated = live.annotated();
    assert!(
        annotated.values().all(|(_, managed)| !managed),
        "{annotated:?}"
    );
    assert_eq!(annotated["web-a0"], (Some("7".into()), false));
    let plan = live.plan(0).await.unwrap();
    assert_eq!(plan["writes"], false, "{plan:#}");
}

/// File mode: the plan from the state file's ReplicaSet (its own, copied
/// annotation: there are no Deployments in the view), and no writer.
#[tokio::test]
async fn file_mode_shows_the_plan_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, pods) = cluster();
    let items: Vec<Value> = nodes
        .into_iter()
        .map(|mut n| {
            n["kind"] = json!("Node");
            n["apiVersion"] = json!("v1");
            n
        })
        .chain(pods.into_iter().map(|mut p| {
            p["kind"] = json!("Pod");
            p["apiVersion"] = json!("v1");
            p
        }))
        .chain([{
            let mut rs = replica_set();
            rs["kind"] = json!("ReplicaSet");
            rs["apiVersion"] = json!("apps/v1");
            rs
        }])
        .collect();
    let state = dir.path().join("cluster.json");
    std::fs::write(
        &state,
        json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
    )
    .unwrap();
    let server = Launch::file(&state).start();
    let http = server.anonymous();
    let plan: Value = eventually("the plan", || async {
        let r = http
            .get(server.url("/debug/scale-in?namespace=shop&name=web-7d4"))
            .send()
            .await
            .ok()?;
        if r.status() != 200 {
            return None;
        }
        r.json().await.ok()
    })
    .await;
    assert_eq!(plan["writes"], false, "{plan:#}");
    let workload = &plan["workloads"][0];
    assert_eq!(workload["optedInBy"], "ReplicaSet shop/web-7d4", "{plan:#}");
    assert_eq!(workload["keepsSpread"], true, "{plan:#}");
    let planned = workload["pods"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["desired"].is_i64())
        .count();
    assert_eq!(planned, MAX, "{plan:#}");
}
