//! kube-arbiter installed with its Helm chart (charts/kube-arbiter) by the
//! real `helm` on the real control plane: `helm install`
//! with the chart's own certificates, for its second scheduler or for the
//! default kube-scheduler (the `extenders:` entry its notes print), a pod
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
//! ServiceAccount's token, or the default kube-scheduler with the entry the
//! notes print. A rule missing from the chart's RBAC, a wrong
//! name in its configuration or a caBundle that does not match fails the
//! test.

mod common;
#[allow(dead_code)] // each story uses its own part of the harness
mod real;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
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

/// The release `kube-arbiter` in kube-system, with
/// ci/outside-cluster-values.yaml and the loopback port of this test's
/// kube-arbiter (and `extra` values).
struct Release {
    helm: Helm,
    values: Vec<String>,
}

impl Release {
    fn new(plane: &ControlPlane, port: u16, extra: &str) -> Self {
        let helm = Helm::new(plane);
        let loopback = helm.values_file(
            "loopback",
            &format!(
                "webhook:\n  url: https://127.0.0.1:{port}\n\
                 extender:\n  url: https://127.0.0.1:{port}/scheduler\n{extra}"
            ),
        );
        let outside = chart_dir().join("ci/outside-cluster-values.yaml");
        let values = [outside, loopback]
            .iter()
            .flat_map(|f| ["-f".to_string(), f.display().to_string()])
            .collect();
        Self { helm, values }
    }

    /// `helm install` or `helm upgrade` with these `--set`s; its output
    /// (the release's NOTES).
    fn run(&self, command: &str, sets: &[&str]) -> String {
        let chart = chart_dir();
        let mut args = vec![command, RELEASE, chart.to_str().unwrap()];
        args.extend(["--namespace", SYSTEM]);
        args.extend(self.values.iter().map(String::as_str));
        for set in sets {
            args.extend(["--set", set]);
        }
        self.helm.run(&args)
    }
}

/// kube-arbiter as the chart's pod would run it: the Deployment's args,
/// the ConfigMap's settings (in the returned file), the serving Secret's
/// pair and a token of the chart's ServiceAccount.
async fn run_kube_arbiter(
    plane: &ControlPlane,
    role: Role,
    port: u16,
    client_dir: &Path,
) -> (Installed, Vec<String>, PathBuf) {
    let admin = &plane.admin;
    let certs = plane.dir.join("kube-arbiter-certs");
    write_certificates(admin, &certs, client_dir).await;
    let config_file = plane.dir.join("kube-arbiter-config.yaml");
    std::fs::write(
        &config_file,
        configmap(admin, "kube-arbiter-config", "config.yaml").await,
    )
    .unwrap();
    let deployment = deployment_json(admin, RELEASE).await;
    let kubeconfig = service_account_kubeconfig(plane, RELEASE).await;
    let args = container_args(&deployment, &certs, &config_file, &kubeconfig, port);
    let arbiter = Installed::start(plane, Setup::new(role), &certs, args.clone(), port).await;
    (arbiter, args, config_file)
}

/// `helm install` (second scheduler, certificates.mode generate), a pod
/// with `schedulerName: kube-arbiter` bound by the chart's kube-scheduler
/// through kube-arbiter and admitted with its priority by the chart's pod
/// webhook; `helm upgrade` twice (a scale-in setting: only kube-arbiter's
/// pod template changes, by its config checksum; a Service setting: no
/// pod template changes), certificates and caBundles unchanged both times;
/// `helm upgrade` renewing both pairs (same CA: kube-arbiter reloads, the
/// second scheduler rolls);
/// `helm uninstall`: no object of the chart's left, and pods admitted again
/// with kube-arbiter gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn helm_install_upgrade_uninstall_with_the_second_scheduler() {
    let mut plane = ControlPlane::start("helm-second-scheduler").await;
    let admin = plane.admin.clone();

    // `helm install`, kube-arbiter and kube-scheduler reached on loopback.
    let port = free_port();
    let client_dir = plane.dir.join("second-scheduler-client");
    let scheduler_kubeconfig = plane.dir.join(format!("{SECOND}.kubeconfig"));
    let release = Release::new(
        &plane,
        port,
        &format!(
            "secondScheduler:\n  clientCertDir: {}\n  kubeconfig: {}\n",
            client_dir.display(),
            scheduler_kubeconfig.display()
        ),
    );
    release.run("install", &[]);

    let (mut arbiter, args, config_file) =
        run_kube_arbiter(&plane, Role::NextToInTreePlugins, port, &client_dir).await;
    assert!(
        args.windows(2)
            .any(|w| w == ["--scheduler-name", SCHEDULER_NAME]),
        "kube-arbiter does not serve the second scheduler's name: {args:?}"
    );

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
    let both = [RELEASE, SECOND];
    let before = Snapshot::take(&admin, &both).await;
    let scale_in = "config.scaleIn.intervalMillis=5000";
    release.run("upgrade", &[scale_in]);
    let after = Snapshot::take(&admin, &both).await;
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
    release.run("upgrade", &[scale_in, "service.sessionAffinity=None"]);
    let last = Snapshot::take(&admin, &both).await;
    after.same_certificates(&last);
    assert_eq!(after.templates, last.templates, "a pod template changed");
    assert_eq!(after.generations, last.generations, "a Deployment rolled");

    // `helm upgrade` within renewDays of expiry (renewDays above days):
    // both pairs made anew by the same CA, so the caBundles stay.
    // kube-arbiter reloads its pair from the Secret volume: its pod
    // template stays. The second scheduler reads its pair at start: its
    // template changes in checksum/client-cert only, so it rolls.
    let renew = "certificates.generate.renewDays=400";
    release.run(
        "upgrade",
        &[scale_in, "service.sessionAffinity=None", renew],
    );
    let renewed = Snapshot::take(&admin, &both).await;
    assert_eq!(
        last.secrets["kube-arbiter-ca"], renewed.secrets["kube-arbiter-ca"],
        "the CA changed"
    );
    for pair in ["kube-arbiter-tls", "kube-arbiter-scheduler-client"] {
        assert_ne!(
            last.secrets[pair], renewed.secrets[pair],
            "{pair} not renewed"
        );
    }
    assert_eq!(last.ca_bundles, renewed.ca_bundles, "a caBundle changed");
    assert_eq!(last.templates[RELEASE], renewed.templates[RELEASE]);
    assert_ne!(last.templates[SECOND], renewed.templates[SECOND]);
    assert_eq!(
        without_annotation(&last.templates[SECOND], "checksum/client-cert"),
        without_annotation(&renewed.templates[SECOND], "checksum/client-cert"),
        "the second scheduler's pod template changed beyond checksum/client-cert"
    );
    // The Secret volumes updated: kube-arbiter reloads the new pair; the
    // second scheduler's rolled pod starts with its new one (and takes
    // over the Lease at once: the old holder is gone, not expired).
    write_certificates(&admin, &arbiter.certs, &client_dir).await;
    common::eventually("kube-arbiter to reload its pair", || async {
        let metrics = arbiter.metrics(&admin).await;
        (metric(&metrics, "kube_arbiter_tls_reloads_total") >= 1.0).then_some(())
    })
    .await;
    plane.stop_scheduler().await;
    let leases: Api<Lease> = Api::namespaced(admin.clone(), SYSTEM);
    leases.delete(SECOND, &Default::default()).await.unwrap();
    plane
        .start_scheduler_as_configured(&scheduler_config, &delegated, SYSTEM, SECOND)
        .await;
    pods.create(
        &PostParams::default(),
        &opted_in_pod("third", "high-priority"),
    )
    .await
    .unwrap();
    wait_bound(&pods, "third").await;
    let metrics = arbiter.metrics(&admin).await;
    assert!(
        requests(&metrics, "/scheduler/filter") >= 2,
        "the renewed pair was not used:\n{metrics}"
    );

    // Both ran with the chart's RBAC and nothing was refused.
    assert_eq!(arbiter.warnings(), Vec::<String>::new());
    assert_eq!(
        forbidden(&plane.scheduler_log()),
        Vec::<String>::new(),
        "the second scheduler was refused"
    );

    // `helm uninstall`, after the processes stop (as the chart's pods
    // would with their Deployments).
    let made = marked_objects(&release, &admin).await;
    plane.stop_scheduler().await;
    arbiter.kill();
    let leases = uninstall(&release, &admin, &made).await;
    assert!(leases.contains(&SECOND.to_string()), "{leases:?}");
}

/// `helm install` for the default kube-scheduler (no second scheduler),
/// kube-arbiter the enforcer: the install notes print the `extenders:`
/// entry with the chart's CA and kube-scheduler's client certificate
/// filled in (the key from the Secret, as the notes say); kube-scheduler
/// run with it (in manifests/scheduler-config-enforcer.yaml, as the notes
/// say) schedules a pod that kube-arbiter binds, with the chart's RBAC.
/// `helm upgrade` prints the same entry (nothing to paste again), keeps the
/// certificates, and the running kube-scheduler keeps scheduling through
/// the restarted kube-arbiter. `helm uninstall` leaves nothing of the
/// chart's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real control plane: scripts/e2e.sh"]
async fn helm_install_for_the_default_scheduler_from_the_install_notes() {
    let mut plane = ControlPlane::start("helm-default-scheduler").await;
    let admin = plane.admin.clone();
    let port = free_port();
    let release = Release::new(
        &plane,
        port,
        "secondScheduler:\n  enabled: false\nconfig:\n  scheduling:\n    role: enforcer\n",
    );
    let notes = release.run("install", &[]);
    let entry = extenders_entry(&notes);

    let client_dir = plane.dir.join("scheduler-client");
    let (mut arbiter, args, config_file) =
        run_kube_arbiter(&plane, Role::Enforcer, port, &client_dir).await;
    assert!(
        !args.contains(&"--disable-bind-verb".to_string()),
        "the enforcer must serve bind: {args:?}"
    );
    assert!(!args.contains(&"--scheduler-name".to_string()), "{args:?}");

    // The entry as printed: the chart's CA and client certificate.
    let b64 = |file: &str| {
        base64::engine::general_purpose::STANDARD
            .encode(std::fs::read(client_dir.join(file)).unwrap())
    };
    assert!(
        entry.contains(&format!("caData: {}", b64("ca.crt"))),
        "{entry}"
    );
    assert!(
        entry.contains(&format!("certData: {}", b64("tls.crt"))),
        "{entry}"
    );
    assert!(entry.contains("bindVerb: bind"), "{entry}");
    let entry = entry.replace("REPLACE_WITH_SCHEDULER_CLIENT_KEY", &b64("tls.key"));
    assert!(!entry.contains("REPLACE_WITH"), "{entry}");
    let shipped = real::install::manifest("scheduler-config-enforcer.yaml");
    let (head, _) = shipped.split_once("\nextenders:\n").unwrap();
    plane.start_scheduler(&format!("{head}\n{entry}")).await;

    plane.namespace(NS).await;
    nodes(&admin, &["za", "zb"], 2).await;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), NS);
    pods.create(&PostParams::default(), &bare_pod("first"))
        .await
        .unwrap();
    wait_bound(&pods, "first").await;
    let metrics = arbiter.metrics(&admin).await;
    for route in [
        "/admission/priority",
        "/scheduler/filter",
        "/scheduler/bind",
    ] {
        assert!(
            requests(&metrics, route) >= 1,
            "no {route} call:\n{metrics}"
        );
    }

    // `helm upgrade`: the same entry, the same certificates.
    let before = Snapshot::take(&admin, &[RELEASE]).await;
    let notes = release.run("upgrade", &["config.scaleIn.patchesPerSecond=20"]);
    Snapshot::take(&admin, &[RELEASE])
        .await
        .same_certificates(&before);
    assert_eq!(
        extenders_entry(&notes).replace("REPLACE_WITH_SCHEDULER_CLIENT_KEY", &b64("tls.key")),
        entry,
        "helm upgrade printed another extenders entry"
    );
    std::fs::write(
        &config_file,
        configmap(&admin, "kube-arbiter-config", "config.yaml").await,
    )
    .unwrap();
    arbiter.restart().await;
    pods.create(&PostParams::default(), &bare_pod("second"))
        .await
        .unwrap();
    wait_bound(&pods, "second").await;
    assert_eq!(arbiter.warnings(), Vec::<String>::new());

    let made = marked_objects(&release, &admin).await;
    plane.stop_scheduler().await;
    arbiter.kill();
    uninstall(&release, &admin, &made).await;
}

/// The `extenders:` entry of the install notes: the `extenders:` line and
/// the indented lines under it.
fn extenders_entry(notes: &str) -> String {
    let mut lines = notes.lines().skip_while(|l| *l != "extenders:");
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("no extenders: entry in the notes:\n{notes}"));
    let mut entry = vec![first];
    entry.extend(lines.take_while(|l| l.starts_with("  ")));
    entry.join("\n") + "\n"
}

/// The lines of a log that say a request was forbidden.
fn forbidden(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.to_lowercase().contains("forbidden"))
        .map(str::to_string)
        .collect()
}

/// The objects the release made (`helm get manifest`), each found among
/// [`leftovers`] (by the chart's labels or Helm's marks) while installed:
/// the check after `helm uninstall` would see each one.
async fn marked_objects(release: &Release, admin: &kube::Client) -> Vec<Value> {
    let made = release.helm.manifest(RELEASE, SYSTEM);
    let marked = leftovers(admin).await;
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
    made
}

/// `helm uninstall`: every object in `made` is deleted, no object of the
/// chart's is left, and a pod is admitted (no webhook configuration left
/// to refuse it: failurePolicy Fail with nobody answering would refuse
/// every pod outside kube-system). Returns the Leases left whose name
/// starts with kube-arbiter: the processes', not the chart's.
async fn uninstall(release: &Release, admin: &kube::Client, made: &[Value]) -> Vec<String> {
    release
        .helm
        .run(&["uninstall", RELEASE, "--namespace", SYSTEM]);
    for object in made {
        let (resource, api) = dynamic_api(admin, object).await;
        let name = object["metadata"]["name"].as_str().unwrap();
        common::eventually(
            &format!("{} {name} to be deleted", resource.kind),
            || async { api.get_opt(name).await.unwrap().is_none().then_some(()) },
        )
        .await;
    }
    let left = common::eventually("the chart's objects to be gone", || async {
        let left = leftovers(admin).await;
        left.is_empty().then_some(left)
    })
    .await;
    assert_eq!(left, Vec::<String>::new());
    // The Leases the running processes took are theirs, not the chart's:
    // the second scheduler's leader election and the scale-in writer's.
    // They stay (unlabelled) until deleted by hand.
    let leases = kube_arbiter_leases(admin).await;
    assert!(
        leases
            .iter()
            .all(|l| [SECOND, "kube-arbiter-scale-in"].contains(&l.as_str())),
        "{leases:?}"
    );
    let pods: Api<Pod> = Api::namespaced(admin.clone(), NS);
    pods.create(&PostParams::default(), &bare_pod("after-uninstall"))
        .await
        .unwrap_or_else(|e| panic!("a pod is refused after helm uninstall: {e}"));
    leases
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
/// data, both webhooks' caBundle) and the pod templates and generations
/// of `deployments`.
struct Snapshot {
    secrets: BTreeMap<String, Value>,
    ca_bundles: Vec<Value>,
    templates: BTreeMap<&'static str, Value>,
    generations: BTreeMap<&'static str, Value>,
}

impl Snapshot {
    async fn take(client: &kube::Client, deployments: &[&'static str]) -> Self {
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
        for &name in deployments {
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
    without_annotation(template, "checksum/config")
}

/// A pod template without the annotation `key` (which it must have).
fn without_annotation(template: &Value, key: &str) -> Value {
    let mut template = template.clone();
    let annotations = template["metadata"]["annotations"].as_object_mut().unwrap();
    assert!(annotations.remove(key).is_some(), "no {key} in {template}");
    template
}

/// The value of a metric without labels.
fn metric(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
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
    let leases: Api<Lease> = Api::namespaced(client.clone(), SYSTEM);
    leases
        .list(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|l| l.metadata.name)
        .filter(|n| n.starts_with(RELEASE))
        .collect()
}
