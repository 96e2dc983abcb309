//! kube-arbiter installed with its Helm chart (charts/kube-arbiter) by the
//! real `helm` on the real control plane, as issue 53 asks: `helm install`
//! with the chart's own certificates and its second scheduler, a pod
//! scheduled through kube-arbiter, `helm upgrade` keeping certificates and
//! pods, `helm uninstall` leaving nothing of the chart's behind.
//! `scripts/e2e.sh` builds helm and Kubernetes and runs them;
//! docs/real-cluster.md maps stories to tests.
//!
//! There is no kubelet, so no pod of the chart's runs: the release uses
//! ci/outside-cluster-values.yaml (no replicas, webhooks and extender at a
//! loopback URL, 127.0.0.1 in the server certificate), and the test runs
//! what the pods would, as processes, from what the chart put in the
//! cluster: kube-arbiter with the Deployment's args, the ConfigMap's
//! settings, the Secret's pair and its ServiceAccount's token; kube-scheduler
//! with the second scheduler's ConfigMap, the client Secret's pair and its
//! ServiceAccount's token. A rule missing from the chart's RBAC, a wrong
//! name in its configuration or a caBundle that does not match fails the
//! test.

mod common;
#[allow(dead_code)] // each story uses its own part of the harness
mod real;

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::GroupVersionKind;
use real::cluster::nodes;
use real::control_plane::ControlPlane;
use real::helm::{Helm, chart_dir};
use real::install::{
    Installed, Role, Setup, container_args, dynamic_api, service_account_kubeconfig,
};
use real::process::free_port;
use serde_json::{Value, json};

const RELEASE: &str = "kube-arbiter";
const SYSTEM: &str = "kube-system";
const NS: &str = "e2e";
/// secondScheduler.schedulerName (the default).
const SCHEDULER_NAME: &str = "kube-arbiter";
/// The second scheduler's ServiceAccount, Deployment, ConfigMap and Lease
/// (`<fullname>-scheduler`).
const SECOND: &str = "kube-arbiter-scheduler";

/// `helm install` (second scheduler, certificates.mode generate), a pod
/// with `schedulerName: kube-arbiter` bound by the chart's kube-scheduler
/// through kube-arbiter and admitted with its priority by the chart's pod
/// webhook; `helm upgrade` twice (a scale-in setting: only kube-arbiter's
/// pod template changes, by its config checksum; a Service setting: no
/// pod template changes), certificates and caBundles unchanged both times;
/// `helm uninstall`: no object of the chart's left, and pods admitted again
/// with kube-arbiter gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn helm_install_upgrade_uninstall_with_the_second_scheduler() {
    let mut plane = ControlPlane::start("helm-second-scheduler").await;
    let helm = Helm::new(&plane);
    let admin = plane.admin.clone();

    // `helm install`, kube-arbiter and kube-scheduler reached on loopback.
    let port = free_port();
    let client_dir = plane.dir.join("second-scheduler-client");
    let scheduler_kubeconfig = plane.dir.join(format!("{SECOND}.kubeconfig"));
    let loopback = helm.values_file(
        "loopback",
        &format!(
            "webhook:\n  url: https://127.0.0.1:{port}\n\
             extender:\n  url: https://127.0.0.1:{port}/scheduler\n\
             secondScheduler:\n  clientCertDir: {}\n  kubeconfig: {}\n",
            client_dir.display(),
            scheduler_kubeconfig.display()
        ),
    );
    let chart = chart_dir();
    let outside = chart.join("ci/outside-cluster-values.yaml");
    let install_args = |command: &'static str| -> Vec<String> {
        [
            command,
            RELEASE,
            chart.to_str().unwrap(),
            "--namespace",
            SYSTEM,
            "-f",
            outside.to_str().unwrap(),
            "-f",
            loopback.to_str().unwrap(),
        ]
        .map(str::to_string)
        .to_vec()
    };
    helm.run(&strs(&install_args("install")));

    // kube-arbiter as its pod would run it.
    let certs = plane.dir.join("kube-arbiter-certs");
    write_certificates(&admin, &certs, &client_dir).await;
    let config_file = plane.dir.join("kube-arbiter-config.yaml");
    std::fs::write(
        &config_file,
        configmap(&admin, "kube-arbiter-config", "config.yaml").await,
    )
    .unwrap();
    let deployment = deployment_json(&admin, RELEASE).await;
    let kubeconfig = service_account_kubeconfig(&plane, RELEASE).await;
    let args = container_args(&deployment, &certs, &config_file, &kubeconfig, port);
    assert!(
        args.windows(2)
            .any(|w| w == ["--scheduler-name", SCHEDULER_NAME]),
        "kube-arbiter does not serve the second scheduler's name: {args:?}"
    );
    let setup = Setup::new(Role::NextToInTreePlugins);
    let mut arbiter = Installed::start(&plane, setup, &certs, args, port).await;

    // The second scheduler as its pod would run it.
    let scheduler_config =
        configmap(&admin, &format!("{SECOND}-config"), "scheduler-config.yaml").await;
    let written = service_account_kubeconfig(&plane, SECOND).await;
    assert_eq!(written, scheduler_kubeconfig);
    // In its pod, kube-scheduler authenticates and authorizes callers of
    // its /healthz and /metrics port with the in-cluster credentials: here
    // the same ServiceAccount's, so the chart's reader RoleBinding counts.
    let delegated = ["authentication", "authorization"]
        .map(|what| format!("--{what}-kubeconfig={}", scheduler_kubeconfig.display()));
    plane
        .start_scheduler_as_configured(&scheduler_config, &delegated, SYSTEM, SECOND)
        .await;

    plane.namespace(NS).await;
    nodes(&admin, &["za", "zb"], 2).await;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), NS);
    let high: Api<PriorityClass> = Api::all(admin.clone());
    let high = high.get("high-priority").await.unwrap().value;
    let pod = pods
        .create(
            &PostParams::default(),
            &opted_in_pod("first", "high-priority"),
        )
        .await
        .unwrap();
    assert_eq!(pod.spec.unwrap().priority, Some(high), "priority resolved");
    wait_bound(&pods, "first").await;
    let metrics = arbiter.metrics(&admin).await;
    for route in ["/admission/priority", "/scheduler/filter"] {
        assert!(
            requests(&metrics, route) >= 1,
            "no {route} call:\n{metrics}"
        );
    }

    // `helm upgrade` with a scale-in setting: kube-arbiter reads its
    // settings at start, so its pod template changes (checksum/config) and
    // nothing else does.
    let before = Snapshot::take(&admin).await;
    let mut upgrade = install_args("upgrade");
    upgrade.extend([
        "--set".to_string(),
        "config.scaleIn.intervalMillis=5000".to_string(),
    ]);
    helm.run(&strs(&upgrade));
    let after = Snapshot::take(&admin).await;
    before.same_certificates(&after);
    assert_eq!(
        before.templates[SECOND], after.templates[SECOND],
        "the second scheduler's pod template changed"
    );
    assert_eq!(before.generations[SECOND], after.generations[SECOND]);
    assert_ne!(
        before.templates[RELEASE], after.templates[RELEASE],
        "a changed setting must roll kube-arbiter's pods"
    );
    assert_eq!(
        without_config_checksum(&before.templates[RELEASE]),
        without_config_checksum(&after.templates[RELEASE]),
        "kube-arbiter's pod template changed beyond checksum/config"
    );
    let settings = configmap(&admin, "kube-arbiter-config", "config.yaml").await;
    assert!(settings.contains("intervalMillis: 5000"), "{settings}");
    // The rolled pod: kube-arbiter restarted with the new settings, with
    // the same certificates, still called by the running kube-scheduler.
    std::fs::write(&config_file, settings).unwrap();
    arbiter.restart().await;
    pods.create(
        &PostParams::default(),
        &opted_in_pod("second", "high-priority"),
    )
    .await
    .unwrap();
    wait_bound(&pods, "second").await;

    // `helm upgrade` with a value no pod reads: no pod template changes.
    upgrade.extend([
        "--set".to_string(),
        "service.sessionAffinity=None".to_string(),
    ]);
    helm.run(&strs(&upgrade));
    let last = Snapshot::take(&admin).await;
    after.same_certificates(&last);
    assert_eq!(after.templates, last.templates, "a pod template changed");
    assert_eq!(after.generations, last.generations, "a Deployment rolled");

    // Both ran with the chart's RBAC and nothing was refused.
    assert_eq!(arbiter.warnings(), Vec::<String>::new());
    let refused: Vec<String> = plane
        .scheduler_log()
        .lines()
        .filter(|l| l.to_lowercase().contains("forbidden"))
        .map(str::to_string)
        .collect();
    assert_eq!(
        refused,
        Vec::<String>::new(),
        "the second scheduler was refused"
    );

    // `helm uninstall`, after the processes stop (as the chart's pods
    // would with their Deployments).
    let made = helm.manifest(RELEASE, SYSTEM);
    let marked = leftovers(&admin).await;
    for object in &made {
        let listed = format!(
            "{} {}/{}",
            object["kind"].as_str().unwrap(),
            object["metadata"]["namespace"].as_str().unwrap_or(""),
            object["metadata"]["name"].as_str().unwrap()
        );
        assert!(
            marked.contains(&listed),
            "{listed} carries neither the chart's labels nor Helm's marks: {marked:?}"
        );
    }
    plane.stop_scheduler().await;
    arbiter.kill();
    helm.run(&["uninstall", RELEASE, "--namespace", SYSTEM]);
    for object in &made {
        let (resource, api) = dynamic_api(&admin, object).await;
        let name = object["metadata"]["name"].as_str().unwrap();
        common::eventually(
            &format!("{} {name} to be deleted", resource.kind),
            || async { api.get_opt(name).await.unwrap().is_none().then_some(()) },
        )
        .await;
    }
    let left = common::eventually("the chart's objects to be gone", || async {
        let left = leftovers(&admin).await;
        left.is_empty().then_some(left)
    })
    .await;
    assert_eq!(left, Vec::<String>::new());
    // The Leases the running processes took are theirs, not the chart's:
    // leader election of the second scheduler and the scale-in writer's.
    // They stay (unlabelled) until deleted by hand.
    let leases = kube_arbiter_leases(&admin).await;
    assert!(
        leases
            .iter()
            .all(|l| [SECOND, "kube-arbiter-scale-in"].contains(&l.as_str())),
        "{leases:?}"
    );
    assert!(leases.contains(&SECOND.to_string()), "{leases:?}");
    // No webhook is left to refuse pods (failurePolicy Fail with nobody
    // answering would refuse every pod outside kube-system).
    pods.create(&PostParams::default(), &bare_pod("after-uninstall"))
        .await
        .unwrap_or_else(|e| panic!("a pod is refused after helm uninstall: {e}"));
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// The chart's Secrets written where the processes read them:
/// kube-arbiter's serving pair and CA in `certs` (tls.crt, tls.key,
/// ca.crt; kube-scheduler's client pair there too, for the test's own
/// client) and the second scheduler's `clientCertDir` (ca.crt, tls.crt,
/// tls.key of the client Secret).
async fn write_certificates(client: &kube::Client, certs: &Path, client_dir: &Path) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM);
    let data = |secret: Secret| -> BTreeMap<String, Vec<u8>> {
        secret
            .data
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect()
    };
    let server = data(secrets.get("kube-arbiter-tls").await.unwrap());
    let scheduler = data(secrets.get("kube-arbiter-scheduler-client").await.unwrap());
    std::fs::create_dir_all(certs).unwrap();
    std::fs::create_dir_all(client_dir).unwrap();
    for file in ["tls.crt", "tls.key", "ca.crt"] {
        std::fs::write(certs.join(file), &server[file]).unwrap();
        std::fs::write(client_dir.join(file), &scheduler[file]).unwrap();
    }
    std::fs::write(certs.join("scheduler-client.crt"), &scheduler["tls.crt"]).unwrap();
    std::fs::write(certs.join("scheduler-client.key"), &scheduler["tls.key"]).unwrap();
}

/// `key` of the ConfigMap kube-system/`name`.
async fn configmap(client: &kube::Client, name: &str, key: &str) -> String {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), SYSTEM);
    let map = maps.get(name).await.unwrap();
    map.data.unwrap().remove(key).unwrap()
}

async fn deployment_json(client: &kube::Client, name: &str) -> Value {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), SYSTEM);
    serde_json::to_value(deployments.get(name).await.unwrap()).unwrap()
}

/// What `helm upgrade` must keep: the certificates (the three Secrets'
/// data, both webhooks' caBundle) and the Deployments' pod templates and
/// generations.
struct Snapshot {
    secrets: BTreeMap<String, Value>,
    ca_bundles: Vec<Value>,
    templates: BTreeMap<&'static str, Value>,
    generations: BTreeMap<&'static str, Value>,
}

impl Snapshot {
    async fn take(client: &kube::Client) -> Self {
        let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM);
        let mut kept = BTreeMap::new();
        for name in [
            "kube-arbiter-ca",
            "kube-arbiter-tls",
            "kube-arbiter-scheduler-client",
        ] {
            let secret = secrets.get(name).await.unwrap();
            kept.insert(name.to_string(), serde_json::to_value(secret.data).unwrap());
        }
        let mut ca_bundles = Vec::new();
        for kind in [
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ] {
            let object = json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                "metadata": {"name": RELEASE},
            });
            let (_, api) = dynamic_api(client, &object).await;
            let config = api.get(RELEASE).await.unwrap();
            for webhook in config.data["webhooks"].as_array().unwrap() {
                ca_bundles.push(webhook["clientConfig"]["caBundle"].clone());
            }
        }
        let mut templates = BTreeMap::new();
        let mut generations = BTreeMap::new();
        for name in [RELEASE, SECOND] {
            let deployment = deployment_json(client, name).await;
            templates.insert(name, deployment["spec"]["template"].clone());
            generations.insert(name, deployment["metadata"]["generation"].clone());
        }
        Self {
            secrets: kept,
            ca_bundles,
            templates,
            generations,
        }
    }

    fn same_certificates(&self, later: &Self) {
        for (name, data) in &self.secrets {
            assert_eq!(
                data, &later.secrets[name],
                "helm upgrade changed the Secret {name}"
            );
        }
        assert!(self.ca_bundles.iter().all(|b| b.is_string()));
        assert_eq!(
            self.ca_bundles, later.ca_bundles,
            "helm upgrade changed a caBundle"
        );
    }
}

fn without_config_checksum(template: &Value) -> Value {
    let mut template = template.clone();
    let annotations = template["metadata"]["annotations"].as_object_mut().unwrap();
    assert!(annotations.remove("checksum/config").is_some());
    template
}

/// A pod for the second scheduler, in `class`.
fn opted_in_pod(name: &str, class: &str) -> Pod {
    let mut pod = serde_json::to_value(bare_pod(name)).unwrap();
    pod["spec"]["schedulerName"] = json!(SCHEDULER_NAME);
    pod["spec"]["priorityClassName"] = json!(class);
    serde_json::from_value(pod).unwrap()
}

fn bare_pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]},
    }))
    .unwrap()
}

async fn wait_bound(pods: &Api<Pod>, name: &str) -> String {
    common::eventually(&format!("pod {name} to be bound"), || async {
        pods.get(name).await.ok()?.spec?.node_name
    })
    .await
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

/// Every object of the kinds the chart makes (and the ReplicaSets its
/// Deployments make) that carries the chart's labels or Helm's marks of
/// the release, and Helm's record of the release: "KIND NAMESPACE/NAME".
async fn leftovers(client: &kube::Client) -> Vec<String> {
    let kinds = [
        (
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
        ),
        ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
        ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
        ("rbac.authorization.k8s.io", "v1", "Role"),
        ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
        ("", "v1", "Secret"),
        ("", "v1", "ConfigMap"),
        ("", "v1", "ServiceAccount"),
        ("", "v1", "Service"),
        ("apps", "v1", "Deployment"),
        ("apps", "v1", "ReplicaSet"),
        ("scheduling.k8s.io", "v1", "PriorityClass"),
        ("policy", "v1", "PodDisruptionBudget"),
        ("networking.k8s.io", "v1", "NetworkPolicy"),
        ("coordination.k8s.io", "v1", "Lease"),
    ];
    let mut left = Vec::new();
    for (group, version, kind) in kinds {
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, _) = kube::discovery::pinned_kind(client, &gvk).await.unwrap();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        for object in api.list(&ListParams::default()).await.unwrap() {
            let meta = &object.metadata;
            let label = |k: &str| meta.labels.as_ref().and_then(|l| l.get(k)).cloned();
            let annotation = |k: &str| meta.annotations.as_ref().and_then(|a| a.get(k)).cloned();
            let name = meta.name.clone().unwrap_or_default();
            let chart = matches!(
                label("app.kubernetes.io/name").as_deref(),
                Some(RELEASE | SECOND)
            ) || label("app.kubernetes.io/managed-by").as_deref() == Some("Helm")
                || annotation("meta.helm.sh/release-name").as_deref() == Some(RELEASE)
                || name.starts_with(&format!("sh.helm.release.v1.{RELEASE}."));
            if chart {
                left.push(format!(
                    "{kind} {}/{name}",
                    meta.namespace.as_deref().unwrap_or("")
                ));
            }
        }
    }
    left
}

/// The Leases in kube-system whose name starts with kube-arbiter.
async fn kube_arbiter_leases(client: &kube::Client) -> Vec<String> {
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), SYSTEM);
    leases
        .list(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|l| l.metadata.name)
        .filter(|n| n.starts_with(RELEASE))
        .collect()
}
