//! kube-arbiter on a real Kubernetes control plane (etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler built from Go modules by
//! `scripts/k8s-build.sh`), installed as the README tells an operator, each
//! test a user's story. `scripts/e2e.sh` builds what is missing and runs
//! them one at a time (each starts its own control plane); plain `cargo
//! test` lists them as ignored. docs/real-cluster.md maps stories to tests.

mod common;
#[allow(dead_code)] // each story uses its own part of the harness
mod real;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, Patch, PatchParams, PostParams};
use real::cluster::{
    self, create_deployment, deployment, deployment_object, hard_spread, nodes,
    required_anti_affinity, wait_bound,
};
use real::control_plane::ControlPlane;
use real::install::{Installed, Role, Setup, install};
use serde_json::{Value, json};

const NS: &str = "e2e";

async fn cluster_with(name: &str, setup: Setup) -> (ControlPlane, Installed) {
    let mut plane = ControlPlane::start(name).await;
    let arbiter = install(&mut plane, setup).await;
    plane.namespace(NS).await;
    (plane, arbiter)
}

/// 30 replicas created at once under a hard zone spread: every pod binds
/// and the zones end at most one pod apart. As the enforcer (kube-arbiter
/// binds), not one bind is refused: no FailedScheduling event, no WARN.
async fn burst_under_zone_spread(name: &str, role: Role) {
    let (plane, arbiter) = cluster_with(name, Setup::new(role)).await;
    let client = plane.admin.clone();
    nodes(&client, &["za", "zb", "zc"], 4).await;
    deployment(
        &client,
        NS,
        "web",
        30,
        hard_spread("web", "topology.kubernetes.io/zone"),
    )
    .await;
    let placed = wait_bound(&client, NS, "web", 30).await;
    let zones = cluster::per_zone(&placed);
    let (min, max) = (zones.values().min().unwrap(), zones.values().max().unwrap());
    assert!(max - min <= 1, "zone skew {zones:?}");
    if role == Role::Enforcer {
        burst_was_clean(&arbiter, &client).await;
    }
}

/// As the enforcer (kube-arbiter binds): no FailedScheduling event, no
/// WARN line, and every bind kube-scheduler asked for was made (none
/// refused); how many needed the API server's copy of a pod or node the
/// view had not shown yet is printed, the measure of the watch's lag
/// behind kube-scheduler.
async fn burst_was_clean(arbiter: &Installed, client: &kube::Client) {
    assert_eq!(
        cluster::failed_scheduling(client, NS).await,
        Vec::<String>::new()
    );
    assert_eq!(arbiter.warnings(), Vec::<String>::new());
    let metrics = arbiter.metrics(client).await;
    let refused = common::metric(&metrics, "kube_arbiter_bindings_refused_total");
    assert_eq!(refused, Some(0.0), "{metrics}");
    let read_through: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("kube_arbiter_view_read_through_total{") && !l.ends_with(" 0"))
        .collect();
    eprintln!("reads through to the API server in this burst: {read_through:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn burst_under_zone_spread_next_to_in_tree_plugins() {
    burst_under_zone_spread("burst-spread-next-to", Role::NextToInTreePlugins).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn burst_under_zone_spread_as_enforcer_binds_every_pod_first_time() {
    burst_under_zone_spread("burst-spread-enforcer", Role::Enforcer).await;
}

/// 30 replicas with required anti-affinity on the hostname over 32 nodes:
/// every pod on a node of its own.
async fn burst_under_anti_affinity(name: &str, role: Role) {
    let (plane, arbiter) = cluster_with(name, Setup::new(role)).await;
    let client = plane.admin.clone();
    nodes(&client, &["za", "zb", "zc", "zd"], 8).await;
    let spec = required_anti_affinity("db", "kubernetes.io/hostname");
    deployment(&client, NS, "db", 30, spec).await;
    let placed = wait_bound(&client, NS, "db", 30).await;
    let distinct: BTreeSet<&String> = placed.iter().collect();
    assert_eq!(distinct.len(), 30, "two pods share a node: {placed:?}");
    if role == Role::Enforcer {
        burst_was_clean(&arbiter, &client).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn burst_under_anti_affinity_next_to_in_tree_plugins() {
    burst_under_anti_affinity("burst-anti-next-to", Role::NextToInTreePlugins).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn burst_under_anti_affinity_as_enforcer_binds_every_pod_first_time() {
    burst_under_anti_affinity("burst-anti-enforcer", Role::Enforcer).await;
}

/// As the enforcer, kube-arbiter alone decides anti-affinity: a fourth
/// replica with three nodes stays Pending, and its FailedScheduling event
/// carries kube-arbiter's reason (which names the pod in the way, as the
/// in-tree plugin's never does), in both the NodeNames and Nodes modes.
async fn failed_scheduling_carries_kube_arbiters_reason(name: &str, nodes_mode: bool) {
    let setup = Setup {
        role: Role::Enforcer,
        nodes_mode,
    };
    let (plane, _arbiter) = cluster_with(name, setup).await;
    let client = plane.admin.clone();
    nodes(&client, &["za"], 3).await;
    deployment(
        &client,
        NS,
        "solo",
        4,
        required_anti_affinity("solo", "kubernetes.io/hostname"),
    )
    .await;
    let placed = wait_bound(&client, NS, "solo", 3).await;
    let message =
        cluster::wait_failed_scheduling(&client, NS, "didn't match pod anti-affinity rules").await;
    assert!(
        message.contains("0/3 nodes are available")
            && message.contains("in kubernetes.io/hostname="),
        "{message}"
    );
    assert_eq!(placed.iter().collect::<BTreeSet<_>>().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn failed_scheduling_carries_kube_arbiters_reason_node_names_mode() {
    failed_scheduling_carries_kube_arbiters_reason("reason-node-names", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn failed_scheduling_carries_kube_arbiters_reason_nodes_mode() {
    failed_scheduling_carries_kube_arbiters_reason("reason-nodes", true).await;
}

fn priority_class(name: &str, value: i32, global_default: bool) -> PriorityClass {
    serde_json::from_value(json!({
        "metadata": {"name": name}, "value": value, "globalDefault": global_default,
    }))
    .unwrap()
}

fn bare_pod(name: &str, class: Option<&str>) -> Pod {
    let mut spec = json!({"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]});
    if let Some(class) = class {
        spec["priorityClassName"] = json!(class);
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

/// Pod admission through kube-apiserver with kube-arbiter's webhooks
/// alone resolving: a class created a moment before its pod is resolved
/// (five times over, since the view's lag made it a coin toss), the shipped
/// globalDefault applies to a pod without a class, an unknown class is
/// refused with upstream's words, and a second globalDefault is refused.
/// kube-apiserver's in-tree `Priority` plugin is off: when on, it runs
/// before the webhooks (`AllOrderedPlugins`, pkg/kubeapiserver/options/
/// plugins.go v1.37.2) and refuses a class its own informer has not seen
/// yet (`resolvePriorityClass`, plugin/pkg/admission/priority/admission.go),
/// a window of upstream's that no webhook can close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn admission_resolves_priority_through_the_api_server() {
    let mut plane = ControlPlane::start_without_priority_plugin("admission", &[]).await;
    let arbiter = install(&mut plane, Setup::new(Role::NextToInTreePlugins)).await;
    plane.namespace(NS).await;
    let classes: Api<PriorityClass> = Api::all(plane.admin.clone());
    let pods: Api<Pod> = Api::namespaced(plane.admin.clone(), NS);
    let create = PostParams::default();
    for i in 0..5 {
        let class = format!("fresh-{i}");
        classes
            .create(&create, &priority_class(&class, 1000 + i, false))
            .await
            .unwrap();
        let pod = pods
            .create(&create, &bare_pod(&format!("fresh-{i}"), Some(&class)))
            .await
            .unwrap_or_else(|e| panic!("pod naming {class} refused: {e}"));
        assert_eq!(pod.spec.unwrap().priority, Some(1000 + i));
    }

    // The shipped priorityclasses.yaml makes default-priority (1000) the
    // globalDefault.
    let pod = pods
        .create(&create, &bare_pod("plain", None))
        .await
        .unwrap();
    let spec = pod.spec.unwrap();
    assert_eq!(
        (spec.priority, spec.priority_class_name.as_deref()),
        (Some(1000), Some("default-priority"))
    );

    let refused = pods
        .create(&create, &bare_pod("lost", Some("nope")))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("priority.kube-arbiter.io")
            && refused.contains("no PriorityClass with name nope was found"),
        "{refused}"
    );
    let second = classes
        .create(&create, &priority_class("another-default", 7, true))
        .await
        .unwrap_err()
        .to_string();
    assert!(second.contains("priorityclass.kube-arbiter.io"), "{second}");
    assert_eq!(arbiter.warnings(), Vec::<String>::new());
}

/// With kube-arbiter down, the pod webhook (failurePolicy Fail) refuses
/// pods outside kube-system, and the PriorityClass webhook (Ignore) lets
/// classes through; once it is back, pods are admitted again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn admission_with_kube_arbiter_down_follows_each_failure_policy() {
    let (plane, mut arbiter) =
        cluster_with("admission-down", Setup::new(Role::NextToInTreePlugins)).await;
    let classes: Api<PriorityClass> = Api::all(plane.admin.clone());
    let pods: Api<Pod> = Api::namespaced(plane.admin.clone(), NS);
    let system: Api<Pod> = Api::namespaced(plane.admin.clone(), "kube-system");
    let create = PostParams::default();
    arbiter.kill();
    let refused = pods
        .create(&create, &bare_pod("while-down", None))
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("priority.kube-arbiter.io"),
        "{refused}"
    );
    classes
        .create(&create, &priority_class("while-down", 10, false))
        .await
        .unwrap();
    system
        .create(&create, &bare_pod("system-while-down", None))
        .await
        .unwrap();
    arbiter.restart().await;
    pods.create(&create, &bare_pod("after", None))
        .await
        .unwrap();
}

/// `/scheduler/*` refuses a caller without kube-scheduler's certificate,
/// before reading a body; with the certificate it answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn extender_verbs_need_kube_schedulers_certificate() {
    let (_plane, arbiter) = cluster_with("extender-auth", Setup::new(Role::Enforcer)).await;
    let body = json!({"Pod": {"metadata": {"name": "p", "namespace": NS}}, "NodeNames": []});
    for verb in ["filter", "prioritize", "preempt", "bind"] {
        let url = arbiter.url(&format!("/scheduler/{verb}"));
        let anonymous = arbiter
            .anonymous
            .post(&url)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(
            matches!(anonymous.status().as_u16(), 401 | 403),
            "{verb} without a certificate: {}",
            anonymous.status()
        );
    }
    let url = arbiter.url("/scheduler/filter");
    let ok = arbiter
        .scheduler_client
        .post(&url)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
}

/// 1.35 and later: a profile with an extender schedules without
/// OpportunisticBatching, and kube-scheduler says so when it builds the
/// profile (`frameworkImpl.computeBatchablePlugins`,
/// pkg/scheduler/framework/runtime/framework.go): every pod, even the
/// thirtieth identical replica, gets its own filter call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn v1_37_an_extender_turns_off_opportunistic_batching() {
    let (plane, arbiter) = cluster_with("batching", Setup::new(Role::NextToInTreePlugins)).await;
    let log = plane.scheduler_log();
    let line = log
        .lines()
        .find(|l| {
            l.contains("Disabling signatures for profile because it has extenders configured")
        })
        .unwrap_or_else(|| panic!("kube-scheduler did not turn batching off:\n{log}"));
    assert!(line.contains("profile=\"default-scheduler\""), "{line}");
    let client = plane.admin.clone();
    nodes(&client, &["za", "zb"], 2).await;
    deployment(&client, NS, "same", 12, json!({})).await;
    wait_bound(&client, NS, "same", 12).await;
    let metrics = arbiter.metrics(&client).await;
    assert_eq!(requests(&metrics, "/scheduler/filter"), 12, "{metrics}");
}

/// A pod only one node can take: kube-scheduler calls filter with that
/// node and, with one feasible node left, binds without calling
/// prioritize (`schedulePod`: "When only one node after predicate, just
/// use it", pkg/scheduler/schedule_one.go).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn a_pod_one_node_can_take_is_filtered_and_never_prioritized() {
    let (plane, arbiter) = cluster_with("one-node", Setup::new(Role::NextToInTreePlugins)).await;
    let client = plane.admin.clone();
    nodes(&client, &["za"], 3).await;
    let pinned = json!({"nodeSelector": {"kubernetes.io/hostname": "za-n1"}});
    deployment(&client, NS, "pinned", 1, pinned).await;
    assert_eq!(wait_bound(&client, NS, "pinned", 1).await, ["za-n1"]);
    let metrics = arbiter.metrics(&client).await;
    assert_eq!(requests(&metrics, "/scheduler/filter"), 1, "{metrics}");
    assert_eq!(requests(&metrics, "/scheduler/prioritize"), 0, "{metrics}");
}

/// The requests kube-arbiter answered on `route`, any status.
fn requests(metrics: &str, route: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("kube_arbiter_http_requests_total{"))
        .filter(|l| l.contains(&format!("route=\"{route}\"")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// The README's demo cluster on a real control plane, kube-arbiter the
/// enforcer: the fifth shop/checkout replica, Pending there, is bound to
/// one of the three nodes the README's filter answer names, and the GPU
/// trainer that fits nowhere is reported in a FailedScheduling event.
async fn demo_cluster_schedules_through_kube_arbiter(name: &str, nodes_mode: bool) {
    let setup = Setup {
        role: Role::Enforcer,
        nodes_mode,
    };
    let mut plane = ControlPlane::start(name).await;
    let _arbiter = install(&mut plane, setup).await;
    let client = plane.admin.clone();
    let pending = cluster::load_demo(&plane).await;
    assert!(
        pending.contains(&"shop/checkout-58c7d9f6b4-n5kq8".to_string()),
        "{pending:?}"
    );
    let checkout: Api<Pod> = Api::namespaced(client.clone(), "shop");
    let node = common::eventually("the checkout replica to be bound", || async {
        let pod = checkout.get("checkout-58c7d9f6b4-n5kq8").await.ok()?;
        pod.spec?.node_name
    })
    .await;
    assert!(
        ["node-a2", "node-a3", "node-c2"].contains(&node.as_str()),
        "checkout bound to {node}"
    );
    cluster::wait_failed_scheduling(&client, "batch", "nvidia.com/gpu").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn demo_cluster_schedules_through_kube_arbiter_node_names_mode() {
    demo_cluster_schedules_through_kube_arbiter("demo-node-names", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn demo_cluster_schedules_through_kube_arbiter_nodes_mode() {
    demo_cluster_schedules_through_kube_arbiter("demo-nodes", true).await;
}

/// 1.37 gang scheduling (GenericWorkload, beta, off by default): a
/// PodGroup of four pods with `gang.minCount: 4`, each with required
/// hostname anti-affinity, kube-arbiter the enforcer. kube-scheduler
/// filters the members one by one, earlier members placed only in its own
/// snapshot, and binds none until all four fit. kube-arbiter knows the
/// members by `spec.schedulingGroup` and never waits for one member's
/// binding before deciding the next (it could only time out): no wait, no
/// timeout, no WARN. The gang ends on four nodes here; docs/versions.md
/// says why that is not kube-arbiter's guarantee.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn v1_37_gang_with_required_anti_affinity_through_kube_arbiter() {
    let mut plane = ControlPlane::start_with("gang", &["GenericWorkload"]).await;
    let arbiter = install(&mut plane, Setup::new(Role::Enforcer)).await;
    plane.namespace(NS).await;
    let client = plane.admin.clone();
    nodes(&client, &["za", "zb"], 2).await;
    real::install::create(
        &client,
        json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
               "metadata": {"name": "gang", "namespace": NS},
               "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}}),
    )
    .await;
    let anti = required_anti_affinity("gang", "kubernetes.io/hostname");
    for i in 0..4 {
        let mut spec = json!({
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m"}}}],
            "schedulingGroup": {"podGroupName": "gang"},
        });
        spec.as_object_mut()
            .unwrap()
            .extend(anti.as_object().unwrap().clone());
        real::install::create(
            &client,
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": format!("gang-{i}"), "namespace": NS, "labels": {"app": "gang"}},
                   "spec": spec}),
        )
        .await;
    }
    let placed = wait_bound(&client, NS, "gang", 4).await;
    let distinct: BTreeSet<&String> = placed.iter().collect();
    assert_eq!(distinct.len(), 4, "gang members share a node: {placed:?}");
    let metrics = arbiter.metrics(&client).await;
    let timeouts = common::metric(&metrics, "kube_arbiter_in_flight_wait_timeouts_total");
    assert_eq!(timeouts, Some(0.0), "{metrics}");
    let waits = common::metric(&metrics, "kube_arbiter_in_flight_waits_total");
    assert_eq!(waits, Some(0.0), "{metrics}");
    assert_eq!(arbiter.warnings(), Vec::<String>::new());
}

/// A control plane serving PodGroups (`GenericWorkload`,
/// `scheduling.k8s.io/v1beta1`), kube-apiserver's in-tree `Priority`
/// plugin on or off, kube-arbiter installed with its PodGroup webhook
/// (`manifests/mutating-webhook-podgroups.yaml`), and the PodGroups API.
async fn podgroup_cluster(
    name: &str,
    priority_plugin: bool,
) -> (ControlPlane, Installed, Api<kube::api::DynamicObject>) {
    let gates = ["GenericWorkload"];
    let mut plane = if priority_plugin {
        ControlPlane::start_with(name, &gates).await
    } else {
        ControlPlane::start_without_priority_plugin(name, &gates).await
    };
    let arbiter = install(&mut plane, Setup::new(Role::NextToInTreePlugins)).await;
    plane.namespace(NS).await;
    arbiter
        .apply_webhooks(&plane.admin, "mutating-webhook-podgroups.yaml")
        .await;
    let (_, groups) = real::install::dynamic_api(&plane.admin, &pod_group("probe", None)).await;
    (plane, arbiter, groups)
}

fn pod_group(name: &str, class: Option<&str>) -> Value {
    let mut spec = json!({"schedulingPolicy": {"gang": {"minCount": 2}},
                          "disruptionMode": {"all": {}}});
    if let Some(class) = class {
        spec["priorityClassName"] = json!(class);
    }
    json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
           "metadata": {"name": name, "namespace": NS}, "spec": spec})
}

async fn create_pod_group(
    groups: &Api<kube::api::DynamicObject>,
    object: Value,
    dry_run: bool,
) -> kube::Result<kube::api::DynamicObject> {
    let object: kube::api::DynamicObject = serde_json::from_value(object).unwrap();
    let params = PostParams {
        dry_run,
        ..Default::default()
    };
    groups.create(&params, &object).await
}

/// The refusal of a dry-run PodGroup naming the unknown class `gold`,
/// once kube-apiserver has read the PodGroup webhook's configuration:
/// until then kube-arbiter is not asked and (without the in-tree plugin)
/// the dry run is admitted.
async fn unknown_class_refused(groups: &Api<kube::api::DynamicObject>) -> kube::core::Status {
    cluster::wait_for(
        "the PodGroup webhook in force",
        async || match create_pod_group(groups, pod_group("probe", Some("gold")), true).await {
            Err(kube::Error::Api(status)) => Ok(*status),
            Ok(_) => Err("an unknown class was admitted".to_string()),
            Err(e) => Err(e.to_string()),
        },
    )
    .await
}

/// kube-arbiter's PodGroup decisions with `result` on its metrics.
async fn pod_group_decisions(arbiter: &Installed, client: &kube::Client, result: &str) -> f64 {
    let metrics = arbiter.metrics(client).await;
    let name = format!("kube_arbiter_admission_podgroup_decisions_total{{result=\"{result}\"}}");
    common::metric(&metrics, &name).unwrap_or(0.0)
}

/// A PodGroup (1.37, `scheduling.k8s.io/v1beta1`) naming a PriorityClass
/// gets `spec.priority` from kube-arbiter's PodGroup webhook, one naming
/// no class the globalDefault class's, and one naming an unknown class is
/// refused in kube-arbiter's words. kube-apiserver's own `Priority` plugin
/// resolves PodGroups too (`admitPodGroup`) and runs before the webhooks,
/// so it is off here: what is resolved, the webhook resolved, as its
/// PodGroup decisions metric shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn v1_37_podgroup_priority_from_the_webhook() {
    let (plane, arbiter, groups) = podgroup_cluster("podgroup-priority", false).await;
    let client = plane.admin.clone();
    let refused = unknown_class_refused(&groups).await;
    assert_eq!(refused.code, 403, "{refused:?}");
    assert!(
        refused.message.contains(
            "admission webhook \"podgroup-priority.kube-arbiter.io\" denied the request: \
             podgroups.scheduling.k8s.io \"probe\" is forbidden: no PriorityClass with name \
             gold was found"
        ),
        "{refused:?}"
    );

    let named = create_pod_group(&groups, pod_group("trainer", Some("high-priority")), false)
        .await
        .unwrap();
    assert_eq!(named.data["spec"]["priority"], 1_000_000, "{named:?}");
    assert_eq!(named.data["spec"]["priorityClassName"], "high-priority");
    // No class: the globalDefault class of manifests/priorityclasses.yaml.
    let unnamed = create_pod_group(&groups, pod_group("sweeper", None), false)
        .await
        .unwrap();
    assert_eq!(unnamed.data["spec"]["priority"], 1000, "{unnamed:?}");
    assert_eq!(
        unnamed.data["spec"]["priorityClassName"],
        "default-priority"
    );
    // Stored as admitted.
    let stored = groups.get("trainer").await.unwrap();
    assert_eq!(stored.data["spec"]["priority"], 1_000_000);

    assert_eq!(pod_group_decisions(&arbiter, &client, "patched").await, 2.0);
    assert!(pod_group_decisions(&arbiter, &client, "denied").await >= 1.0);
}

/// With kube-apiserver's in-tree `Priority` plugin on (its default), the
/// plugin resolves a PodGroup first: an unknown class is refused in its
/// words and kube-arbiter is never asked; a known class arrives with
/// `spec.priority` already set, which kube-arbiter allows as it is
/// (nothing to patch). docs/security.md, "PodGroups".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn v1_37_podgroup_priority_with_the_in_tree_plugin_on() {
    let (plane, arbiter, groups) = podgroup_cluster("podgroup-priority-in-tree", true).await;
    let client = plane.admin.clone();
    let refused = create_pod_group(&groups, pod_group("probe", Some("gold")), true)
        .await
        .unwrap_err();
    let kube::Error::Api(refused) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(refused.code, 403, "{refused:?}");
    assert_eq!(
        refused.message,
        "podgroups.scheduling.k8s.io \"probe\" is forbidden: no PriorityClass with name gold \
         was found"
    );
    // The webhook is in force once a PodGroup it admits is counted.
    let named = cluster::wait_for("the PodGroup webhook asked", async || {
        let name = format!("trainer-{}", rand_suffix());
        let created = create_pod_group(&groups, pod_group(&name, Some("high-priority")), false)
            .await
            .map_err(|e| e.to_string())?;
        match pod_group_decisions(&arbiter, &client, "allowed").await {
            n if n >= 1.0 => Ok(created),
            _ => Err(format!("{name} admitted before the webhook was in force")),
        }
    })
    .await;
    assert_eq!(named.data["spec"]["priority"], 1_000_000, "{named:?}");
    assert_eq!(pod_group_decisions(&arbiter, &client, "patched").await, 0.0);
    assert_eq!(pod_group_decisions(&arbiter, &client, "denied").await, 0.0);
}

/// A gang (PodGroup, `gang.minCount: 2`, class `high-priority`) that fits
/// only once the lower-priority pods filling the one node are gone: the
/// real 1.37 kube-scheduler preempts them in the gang's own cycle
/// (`PodGroupPostFilter` → `PodGroupEvaluator.Preempt`) and binds the
/// gang, and never asks kube-arbiter's `preempt` (no request on its
/// metrics), as docs/preemption-contract.md ("PodGroup victims") reads
/// from the source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn v1_37_podgroup_preemption_asks_no_extender() {
    let mut plane = ControlPlane::start_with("podgroup-preemption", &["GenericWorkload"]).await;
    let arbiter = install(&mut plane, Setup::new(Role::NextToInTreePlugins)).await;
    plane.namespace(NS).await;
    let client = plane.admin.clone();
    let _kubelet = real::kubelet::Kubelet::start(client.clone());
    cluster::node(&client, "za-n0", "za", json!({})).await;
    let cpu = |cpu: &str| {
        json!([{"name": "app", "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}])
    };
    deployment(
        &client,
        NS,
        "filler",
        4,
        json!({"priorityClassName": "batch-low", "containers": cpu("900m")}),
    )
    .await;
    wait_bound(&client, NS, "filler", 4).await;

    real::install::create(&client, {
        let mut group = pod_group("gang", Some("high-priority"));
        group["spec"]["disruptionMode"] = json!({"single": {}});
        group
    })
    .await;
    for i in 0..2 {
        real::install::create(
            &client,
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": format!("gang-{i}"), "namespace": NS,
                                "labels": {"app": "gang"}},
                   "spec": {"priorityClassName": "high-priority", "containers": cpu("1800m"),
                            "terminationGracePeriodSeconds": 0,
                            "schedulingGroup": {"podGroupName": "gang"}}}),
        )
        .await;
    }
    wait_bound(&client, NS, "gang", 2).await;
    // The victims were chosen by the gang's evaluator, over the whole
    // cluster (its candidate is the node "cluster").
    let log = plane.scheduler_log();
    assert!(
        log.contains("pod group preemption: found a placement for podgroup"),
        "{log}"
    );
    let metrics = arbiter.metrics(&client).await;
    let preempt = r#"kube_arbiter_http_requests_total{route="/scheduler/preempt""#;
    assert!(
        !metrics.lines().any(|l| l.starts_with(preempt)),
        "kube-arbiter's preempt was called:\n{metrics}"
    );
    let filter = r#"kube_arbiter_http_requests_total{route="/scheduler/filter",status="200"} "#;
    assert!(
        metrics.lines().any(|l| l.starts_with(filter)),
        "kube-arbiter's filter was not called:\n{metrics}"
    );
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}

/// kube-scheduler's FailedScheduling event in NS says what fit's
/// `firstUnschedulable` predicted, word for word: its summary, then the
/// preemption sentence.
async fn failed_scheduling_says(client: &kube::Client, failure: &Value) {
    let message = cluster::wait_failed_scheduling(client, NS, "nodes are available").await;
    let predicted = format!(
        "{} {}",
        failure["summary"].as_str().unwrap(),
        failure["preemption"].as_str().unwrap()
    );
    assert_eq!(message, predicted, "fit's reasons are kube-scheduler's");
}

/// `kube-arbiter fit -o json` for the Deployment manifest `object`, run
/// against this cluster with the admin's kubeconfig, before it exists.
async fn fit_before_applying(plane: &ControlPlane, object: &Value) -> Value {
    let name = object["metadata"]["name"].as_str().unwrap();
    let manifest = plane.dir.join(format!("fit-{name}.json"));
    std::fs::write(&manifest, object.to_string()).unwrap();
    let kubeconfig = plane.admin_kubeconfig();
    let args = [
        "fit".to_string(),
        "--kubeconfig".to_string(),
        kubeconfig.to_str().unwrap().to_string(),
        "-o".to_string(),
        "json".to_string(),
        manifest.to_str().unwrap().to_string(),
    ];
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        common::run(&args)
    })
    .await
    .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "fit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// fit's count per zone, as `cluster::per_zone` counts bound pods.
fn predicted_zones(answer: &Value) -> BTreeMap<String, usize> {
    answer["zones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|z| {
            let count = z["replicas"].as_u64().unwrap() as usize;
            (z["name"].as_str().unwrap().to_string(), count)
        })
        .collect()
}

fn pause_requesting(cpu: &str) -> Value {
    json!([{"name": "app", "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}])
}

/// Before the workload exists, fit says how many of its replicas
/// kube-scheduler 1.37 will bind, how many per zone, and the
/// FailedScheduling message of the first that cannot bind: 14 replicas of
/// 1500m under a hard zone spread on six 4-CPU nodes in three zones.
/// kube-scheduler then does exactly that. fit words the message as 1.37
/// does; 1.34's adds its DRA plugin's "no new claims to deallocate".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn v1_37_fit_predicts_the_count_per_zone_and_the_first_failure() {
    let (plane, _arbiter) = cluster_with("fit-spread", Setup::new(Role::NextToInTreePlugins)).await;
    let client = plane.admin.clone();
    nodes(&client, &["za", "zb", "zc"], 2).await;
    let mut spec = hard_spread("api", "topology.kubernetes.io/zone");
    spec["containers"] = pause_requesting("1500m");
    let object = deployment_object(NS, "api", 14, spec);
    let predicted = fit_before_applying(&plane, &object).await;
    let placed = predicted["placed"].as_u64().unwrap() as usize;
    assert!(predicted["unplaced"].as_u64().unwrap() > 0, "{predicted}");

    create_deployment(&client, object).await;
    wait_bound(&client, NS, "api", placed).await;
    let failure = &predicted["firstUnschedulable"];
    failed_scheduling_says(&client, failure).await;
    // The pods that cannot bind stay pending.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let bound: Vec<String> = cluster::pods(&client, NS, "api")
        .await
        .into_iter()
        .filter_map(|p| p.spec?.node_name)
        .collect();
    assert_eq!(bound.len(), placed, "bound {bound:?}; fit {predicted}");
    assert_eq!(cluster::per_zone(&bound), predicted_zones(&predicted));
}

/// The same prediction where required anti-affinity binds: 8 replicas,
/// one per node, on six nodes: 6 bind, 2 per zone, and the FailedScheduling
/// message is the one fit gave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn v1_37_fit_predicts_where_anti_affinity_stops_a_workload() {
    let (plane, _arbiter) =
        cluster_with("fit-anti-affinity", Setup::new(Role::NextToInTreePlugins)).await;
    let client = plane.admin.clone();
    nodes(&client, &["za", "zb", "zc"], 2).await;
    let spec = required_anti_affinity("db", "kubernetes.io/hostname");
    let object = deployment_object(NS, "db", 8, spec);
    let predicted = fit_before_applying(&plane, &object).await;
    assert_eq!(
        (&predicted["placed"], &predicted["unplaced"]),
        (&json!(6), &json!(2))
    );

    create_deployment(&client, object).await;
    wait_bound(&client, NS, "db", 6).await;
    let failure = &predicted["firstUnschedulable"];
    failed_scheduling_says(&client, failure).await;
    let bound: Vec<String> = cluster::pods(&client, NS, "db")
        .await
        .into_iter()
        .filter_map(|p| p.spec?.node_name)
        .collect();
    assert_eq!(cluster::per_zone(&bound), predicted_zones(&predicted));
}

/// A node tainted for GPUs and two 4-CPU nodes: 5 replicas of 1500m, 4
/// bind and the fifth stays pending. kube-scheduler 1.37's FailedScheduling
/// message words the taint as fit predicts it, "node(s) had untolerated
/// taint(s)" without the taint (TaintToleration.Filter since 1.34.2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn v1_37_fit_words_an_untolerated_taint_as_kube_scheduler_does() {
    let (plane, _arbiter) = cluster_with("fit-taint", Setup::new(Role::NextToInTreePlugins)).await;
    let client = plane.admin.clone();
    let names = nodes(&client, &["za", "zb", "zc"], 1).await;
    let taint =
        json!({"spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}});
    Api::<Node>::all(client.clone())
        .patch(&names[2], &PatchParams::default(), &Patch::Merge(&taint))
        .await
        .unwrap();
    let mut spec = json!({});
    spec["containers"] = pause_requesting("1500m");
    let object = deployment_object(NS, "web", 5, spec);
    let predicted = fit_before_applying(&plane, &object).await;
    let failure = &predicted["firstUnschedulable"];
    assert_eq!(
        failure["summary"],
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu.",
        "{predicted}"
    );

    create_deployment(&client, object).await;
    wait_bound(&client, NS, "web", 4).await;
    failed_scheduling_says(&client, failure).await;
}

/// fit says which pods preemption will evict for a high-priority
/// workload: three batch-low pods fill three nodes, three
/// high-priority replicas (hard zone spread) need one node each.
/// kube-scheduler then evicts as many pods, of the same priorities.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn fit_predicts_the_victims_preemption_takes() {
    let (plane, _arbiter) =
        cluster_with("fit-preemption", Setup::new(Role::NextToInTreePlugins)).await;
    let client = plane.admin.clone();
    nodes(&client, &["za", "zb", "zc"], 1).await;
    let batch = json!({"priorityClassName": "batch-low", "containers": pause_requesting("3")});
    deployment(&client, NS, "batch", 3, batch).await;
    wait_bound(&client, NS, "batch", 3).await;
    let batch_pods: BTreeMap<String, i32> = cluster::pods(&client, NS, "batch")
        .await
        .into_iter()
        .map(|p| {
            let priority = p.spec.as_ref().and_then(|s| s.priority).unwrap();
            (p.metadata.uid.unwrap(), priority)
        })
        .collect();

    let mut spec = hard_spread("urgent", "topology.kubernetes.io/zone");
    spec["priorityClassName"] = json!("high-priority");
    spec["containers"] = pause_requesting("2");
    let object = deployment_object(NS, "urgent", 3, spec);
    let predicted = fit_before_applying(&plane, &object).await;
    assert_eq!(predicted["placed"], 3, "{predicted}");
    let victims = predicted["victims"].as_array().unwrap();
    let mut predicted_priorities: Vec<i64> = victims
        .iter()
        .map(|v| v["priority"].as_i64().unwrap())
        .collect();

    create_deployment(&client, object).await;
    wait_bound(&client, NS, "urgent", 3).await;
    let left: BTreeSet<String> = cluster::pods(&client, NS, "batch")
        .await
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.metadata.uid)
        .collect();
    let mut evicted: Vec<i64> = batch_pods
        .iter()
        .filter(|(uid, _)| !left.contains(*uid))
        .map(|(_, priority)| i64::from(*priority))
        .collect();
    evicted.sort_unstable();
    predicted_priorities.sort_unstable();
    assert_eq!(evicted, predicted_priorities, "fit {predicted}");
}

/// A DeviceClass maps `example.com/gpu` (1.37: DRAExtendedResource is GA,
/// so the API server keeps `extendedResourceName`); no node lists it. fit,
/// reading the live cluster with DeviceClasses, leaves it to DRA as
/// 1.37's NodeResourcesFit does (`shouldDelegateResourceToDRA`): the two
/// replicas are judged on cpu alone, the first placed on the free node,
/// the second by evicting the batch-low pod, and the answer names the
/// resource. Before, every node was "Insufficient example.com/gpu" and no
/// preemption helped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn v1_37_fit_leaves_a_dra_extended_resource_to_dra() {
    let (plane, _arbiter) =
        cluster_with("dra-extended", Setup::new(Role::NextToInTreePlugins)).await;
    let client = plane.admin.clone();
    nodes(&client, &["za"], 2).await;
    real::install::apply(
        &client,
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
               "metadata": {"name": "gpu.example.com"},
               "spec": {"extendedResourceName": "example.com/gpu",
                        "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}),
    )
    .await;
    let batch = json!({"priorityClassName": "batch-low", "containers": pause_requesting("3")});
    deployment(&client, NS, "batch", 1, batch).await;
    wait_bound(&client, NS, "batch", 1).await;

    let mut spec = json!({"priorityClassName": "high-priority"});
    spec["containers"] = json!([{"name": "app", "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "3", "example.com/gpu": "1"},
                      "limits": {"example.com/gpu": "1"}}}]);
    let object = deployment_object(NS, "trainer", 2, spec);
    let predicted = fit_before_applying(&plane, &object).await;
    assert_eq!(
        (&predicted["placed"], &predicted["placedByPreemption"]),
        (&json!(2), &json!(1)),
        "{predicted}"
    );
    assert_eq!(
        predicted["draExtendedResources"],
        json!([{"resource": "example.com/gpu", "deviceClass": "gpu.example.com"}]),
        "{predicted}"
    );
    let victims = predicted["victims"].as_array().unwrap();
    assert_eq!(victims.len(), 1, "{predicted}");
    assert!(
        victims[0]["pod"]
            .as_str()
            .unwrap()
            .starts_with("e2e/batch-"),
        "{predicted}"
    );
}
