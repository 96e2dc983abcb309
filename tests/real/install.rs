//! kube-arbiter installed on the real control plane as the README's Deploy
//! section tells an operator: `kube-arbiter certs`, the shipped RBAC and
//! PriorityClasses applied, the webhook configurations with the caBundle
//! filled in, the Deployment's arguments with the shipped ConfigMap's
//! config, running with its ServiceAccount's rights (a TokenRequest token),
//! and kube-scheduler given the shipped scheduler configuration with the CA
//! and kube-scheduler's client pair filled in.
//!
//! Two things differ, because the test cluster has no pod network: the
//! webhooks' `clientConfig.service` becomes a `url` on loopback, and the
//! extender's `urlPrefix` host is 127.0.0.1 (the certificate names both,
//! `certs --dns ... --ip 127.0.0.1`; `tlsConfig.serverName` is as shipped).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

use super::control_plane::ControlPlane;
use super::pki::{self, User};
use super::process::free_port;
use crate::common::Spawned;

/// How kube-scheduler is configured next to kube-arbiter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Role {
    /// `scheduler-config.yaml` and `configmap.yaml`.
    NextToInTreePlugins,
    /// `scheduler-config-enforcer.yaml` and `configmap-enforcer.yaml`,
    /// without `--disable-bind-verb`.
    Enforcer,
}

/// What to install.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub role: Role,
    /// `nodeCacheCapable: false`: kube-scheduler sends whole Node objects.
    pub nodes_mode: bool,
}

impl Setup {
    pub fn new(role: Role) -> Self {
        Self {
            role,
            nodes_mode: false,
        }
    }
}

pub fn manifest(name: &str) -> String {
    let path = format!("{}/manifests/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Server-side applies every object of a multi-document YAML text.
pub async fn apply_yaml(client: &kube::Client, text: &str) {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).unwrap();
    for doc in docs.into_iter().filter(|d| d.is_object()) {
        apply(client, doc).await;
    }
}

/// Server-side applies one object.
pub async fn apply(client: &kube::Client, object: Value) {
    let (group, version) = match object["apiVersion"].as_str().unwrap().split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (
            String::new(),
            object["apiVersion"].as_str().unwrap().to_string(),
        ),
    };
    let gvk = GroupVersionKind::gvk(&group, &version, object["kind"].as_str().unwrap());
    let (resource, caps) = kube::discovery::pinned_kind(client, &gvk).await.unwrap();
    let name = object["metadata"]["name"].as_str().unwrap().to_string();
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) if caps.scope == kube::discovery::Scope::Namespaced => {
            Api::namespaced_with(client.clone(), ns, &resource)
        }
        _ => Api::all_with(client.clone(), &resource),
    };
    let params = PatchParams::apply("real-cluster-suite").force();
    api.patch(&name, &params, &Patch::Apply(&object))
        .await
        .unwrap_or_else(|e| panic!("apply {gvk:?} {name}: {e}"));
}

/// Creates one object (POST, as `kubectl create`).
pub async fn create(client: &kube::Client, object: Value) {
    let (resource, api) = dynamic_api(client, &object).await;
    let object: DynamicObject = serde_json::from_value(object).unwrap();
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("create {} {:?}: {e}", resource.kind, object.metadata.name));
}

/// The API of `object`'s kind, in its namespace when it has one.
pub async fn dynamic_api(
    client: &kube::Client,
    object: &Value,
) -> (kube::discovery::ApiResource, Api<DynamicObject>) {
    let (group, version) = match object["apiVersion"].as_str().unwrap().split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (
            String::new(),
            object["apiVersion"].as_str().unwrap().to_string(),
        ),
    };
    let gvk = GroupVersionKind::gvk(&group, &version, object["kind"].as_str().unwrap());
    let (resource, caps) = kube::discovery::pinned_kind(client, &gvk).await.unwrap();
    let api = match object["metadata"]["namespace"].as_str() {
        Some(ns) if caps.scope == kube::discovery::Scope::Namespaced => {
            Api::namespaced_with(client.clone(), ns, &resource)
        }
        _ => Api::all_with(client.clone(), &resource),
    };
    (resource, api)
}

/// kube-arbiter as installed, and clients for its HTTPS port.
pub struct Installed {
    pub setup: Setup,
    pub port: u16,
    pub certs: PathBuf,
    process: Option<Spawned>,
    /// The log of the processes before a restart.
    earlier_log: String,
    /// Where [`Installed::log`] is written when the test ends, beside the
    /// control plane's logs.
    log_file: PathBuf,
    args: Vec<String>,
    /// Trusts kube-arbiter's CA and presents kube-scheduler's certificate.
    pub scheduler_client: reqwest::Client,
    /// Trusts kube-arbiter's CA, presents nothing.
    pub anonymous: reqwest::Client,
}

impl Installed {
    /// Starts kube-arbiter with `args` (listening on loopback `port`) and
    /// waits until it is ready. `certs` holds its CA (`ca.crt`) and
    /// kube-scheduler's client pair (`scheduler-client.crt`, `.key`), for
    /// the test's own clients.
    pub async fn start(
        plane: &ControlPlane,
        setup: Setup,
        certs: &Path,
        args: Vec<String>,
        port: u16,
    ) -> Self {
        let read = |f: &str| std::fs::read_to_string(certs.join(f)).unwrap();
        let scheduler_pair = reqwest::Identity::from_pem(
            format!(
                "{}{}",
                read("scheduler-client.crt"),
                read("scheduler-client.key")
            )
            .as_bytes(),
        )
        .unwrap();
        let trust = reqwest::Certificate::from_pem(read("ca.crt").as_bytes()).unwrap();
        let builder = || {
            reqwest::Client::builder()
                .tls_backend_rustls()
                .tls_certs_only([trust.clone()])
                .timeout(Duration::from_secs(30))
        };
        let installed = Self {
            setup,
            port,
            certs: certs.to_path_buf(),
            process: Some(spawn(&args)),
            earlier_log: String::new(),
            log_file: plane.dir.join("kube-arbiter.log"),
            args,
            scheduler_client: builder().identity(scheduler_pair).build().unwrap(),
            anonymous: builder().build().unwrap(),
        };
        installed.wait_ready().await;
        installed
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// Applies the webhook configuration `manifests/FILE` pointing at this
    /// kube-arbiter: each webhook's `clientConfig.service` becomes a `url`
    /// on loopback with the service's path, and the caBundle is filled in.
    /// Applying a configuration of the same name replaces it (the
    /// README's alternative files, e.g. `mutating-webhook-podgroups.yaml`).
    pub async fn apply_webhooks(&self, admin: &kube::Client, file: &str) {
        let ca = std::fs::read_to_string(self.certs.join("ca.crt")).unwrap();
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca);
        let mut object: Value = serde_saphyr::from_str(&manifest(file)).unwrap();
        for webhook in object["webhooks"].as_array_mut().unwrap() {
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap_or_else(|| panic!("{file}: a webhook without clientConfig.service.path"))
                .to_string();
            webhook["clientConfig"] = json!({
                "url": self.url(&path),
                "caBundle": ca_bundle,
            });
        }
        apply(admin, object).await;
    }

    /// Returns once kube-apiserver calls both shipped webhooks. Until its
    /// informer has brought a configuration it admits without asking (a
    /// pod without kube-arbiter's resolution, a class unchecked), so each
    /// is probed with a dry run (webhooks with `sideEffects: None` are
    /// called for those) until kube-arbiter's log shows the call.
    pub async fn wait_for_webhooks(&self, admin: &kube::Client) {
        let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
        let classes: Api<PriorityClass> = Api::all(admin.clone());
        let dry_run = PostParams {
            dry_run: true,
            ..Default::default()
        };
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "webhook-probe"},
            "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]},
        }))
        .unwrap();
        let class: PriorityClass =
            serde_json::from_value(json!({"metadata": {"name": "webhook-probe"}, "value": 1}))
                .unwrap();
        super::cluster::wait_for(
            "kube-apiserver calling kube-arbiter's webhooks",
            async || {
                pods.create(&dry_run, &pod)
                    .await
                    .map_err(|e| e.to_string())?;
                classes
                    .create(&dry_run, &class)
                    .await
                    .map_err(|e| e.to_string())?;
                let log = self.log();
                let called = |webhook: &str| {
                    let field = format!("webhook=\"{webhook}\"");
                    log.lines().any(|line| {
                        line.contains(&field)
                            && line.contains("webhook-probe")
                            && line.contains("dry_run=true")
                    })
                };
                match (called("pod"), called("priorityclass")) {
                    (true, true) => Ok(()),
                    seen => Err(format!("(pod, priorityclass) webhook called: {seen:?}")),
                }
            },
        )
        .await;
    }

    /// Everything kube-arbiter has logged so far (every restart's).
    pub fn log(&self) -> String {
        let current = self.process.as_ref().map(Spawned::log).unwrap_or_default();
        format!("{}{current}", self.earlier_log)
    }

    /// The WARN and ERROR lines of its log.
    pub fn warnings(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| is_warning(l))
            .map(str::to_string)
            .collect()
    }

    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(Spawned::pid)
    }

    /// Restarts kube-arbiter configured for `role` (its ConfigMap, and the
    /// bind verb mounted only for the enforcer), on the same port.
    pub async fn switch_role(&mut self, role: Role) {
        let config = self
            .args
            .iter()
            .skip_while(|a| *a != "--config")
            .nth(1)
            .cloned()
            .unwrap();
        std::fs::write(&config, shipped_config(role)).unwrap();
        self.args.retain(|a| a != "--disable-bind-verb");
        if role == Role::NextToInTreePlugins {
            self.args.push("--disable-bind-verb".to_string());
        }
        self.setup.role = role;
        self.restart().await;
    }

    /// The WARN and ERROR lines logged after the last line containing
    /// `marker`; None while no line contains it.
    pub fn warnings_after(&self, marker: &str) -> Option<Vec<String>> {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        let last = lines.iter().rposition(|l| l.contains(marker))?;
        Some(
            lines[last + 1..]
                .iter()
                .filter(|l| is_warning(l))
                .map(|l| l.to_string())
                .collect(),
        )
    }

    /// Stops kube-arbiter (SIGKILL, as a node loss does).
    pub fn kill(&mut self) {
        if let Some(process) = self.process.take() {
            self.earlier_log.push_str(&process.log());
        }
    }

    /// Starts it again on the same port and waits until it is ready.
    pub async fn restart(&mut self) {
        self.kill();
        self.process = Some(spawn(&self.args));
        self.wait_ready().await;
    }

    /// `/metrics` as Prometheus reads it: with the token of a
    /// ServiceAccount allowed `get` on the non-resource URL `/metrics`
    /// (made on first use).
    pub async fn metrics(&self, admin: &kube::Client) -> String {
        let reader = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        });
        apply(admin, reader).await;
        apply(
            admin,
            json!({
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "metrics-reader", "namespace": "kube-system"},
            }),
        )
        .await;
        apply(admin, json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "metrics-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "metrics-reader", "namespace": "kube-system"}],
        }))
        .await;
        let token = service_account_token(admin, "kube-system", "metrics-reader").await;
        let response = self
            .anonymous
            .get(self.url("/metrics"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "GET /metrics with a reader's token");
        response.text().await.unwrap()
    }

    async fn wait_ready(&self) {
        let start = Instant::now();
        loop {
            if let Ok(r) = self.anonymous.get(self.url("/readyz")).send().await
                && r.status() == 200
            {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "kube-arbiter not ready:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let log = self.log();
        let _ = std::fs::write(&self.log_file, &log);
        if std::thread::panicking() {
            let lines: Vec<&str> = log.lines().collect();
            eprintln!(
                "---- last lines of kube-arbiter ({}):\n{}",
                self.log_file.display(),
                lines[lines.len().saturating_sub(30)..].join("\n")
            );
        }
    }
}

fn is_warning(line: &str) -> bool {
    line.contains(" WARN ") || line.contains(" ERROR ")
}

fn spawn(args: &[String]) -> Spawned {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // The program's own log filter, as deployed.
    Spawned::until_filtered(&args, None, "listening on https://").0
}

/// Installs kube-arbiter on `plane` and starts kube-scheduler configured
/// for it; returns once kube-arbiter is ready and kube-scheduler leads.
pub async fn install(plane: &mut ControlPlane, setup: Setup) -> Installed {
    let installed = install_without_scheduler(plane, setup, "").await;
    // Step 4: kube-scheduler's extenders entry, filled in.
    let config = scheduler_config(&installed, setup);
    plane.start_scheduler(&config).await;
    installed
}

/// The README's steps 1 to 3: kube-arbiter installed and ready, its
/// webhooks registered, no kube-scheduler started. `settings` (top-level
/// YAML keys the shipped `config.yaml` does not have) are added to its
/// settings file.
pub async fn install_without_scheduler(
    plane: &ControlPlane,
    setup: Setup,
    settings: &str,
) -> Installed {
    let admin = plane.admin.clone();
    // Step 1: certificates, for the Service names and loopback.
    let certs = plane.dir.join("kube-arbiter-certs");
    let out = std::process::Command::new(crate::common::BIN)
        .args(["certs", "--out", certs.to_str().unwrap()])
        .args(["--dns", "kube-arbiter.kube-system.svc", "--ip", "127.0.0.1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "certs: {out:?}");

    // Step 2: RBAC, the PriorityClasses kube-arbiter itself runs with.
    apply_yaml(&admin, &manifest("rbac.yaml")).await;
    apply_yaml(&admin, &manifest("priorityclasses.yaml")).await;

    // The process, with its ServiceAccount's token.
    let port = free_port();
    let kubeconfig = service_account_kubeconfig(plane, "kube-arbiter").await;
    let config_file = plane.dir.join("kube-arbiter-config.yaml");
    let shipped = shipped_config(setup.role);
    for line in settings
        .lines()
        .filter(|l| !l.starts_with(' ') && l.contains(':'))
    {
        assert!(
            !shipped.lines().any(|s| s == line),
            "the shipped config already has {line:?}"
        );
    }
    std::fs::write(&config_file, format!("{shipped}{settings}")).unwrap();
    let deployment: Value = serde_saphyr::from_str(&manifest("deployment.yaml")).unwrap();
    let mut args = container_args(&deployment, &certs, &config_file, &kubeconfig, port);
    // The README's step 4: the enforcer binds.
    if setup.role == Role::Enforcer {
        args.retain(|a| a != "--disable-bind-verb");
    }
    let installed = Installed::start(plane, setup, &certs, args, port).await;

    // Step 3: the webhook configurations, caBundle filled in.
    for file in ["mutating-webhook.yaml", "validating-webhook.yaml"] {
        installed.apply_webhooks(&admin, file).await;
    }
    installed.wait_for_webhooks(&admin).await;
    installed
}

/// The config.yaml of the shipped ConfigMap for `role`.
fn shipped_config(role: Role) -> String {
    let configmap = match role {
        Role::NextToInTreePlugins => "configmap.yaml",
        Role::Enforcer => "configmap-enforcer.yaml",
    };
    let configmap: Value = serde_saphyr::from_str(&manifest(configmap)).unwrap();
    configmap["data"]["config.yaml"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The shipped kube-scheduler configuration for `setup.role`, its
/// `extenders:` entry filled in as the README says (CA, client pair) and
/// pointing at `installed`.
pub fn scheduler_config(installed: &Installed, setup: Setup) -> String {
    let read = |f: &str| std::fs::read_to_string(installed.certs.join(f)).unwrap();
    let b64 = |s: String| base64::engine::general_purpose::STANDARD.encode(s);
    let file = match setup.role {
        Role::NextToInTreePlugins => "scheduler-config.yaml",
        Role::Enforcer => "scheduler-config-enforcer.yaml",
    };
    let mut config = manifest(file)
        .replace(
            "https://kube-arbiter.kube-system.svc:8443/scheduler",
            &format!("https://127.0.0.1:{}/scheduler", installed.port),
        )
        .replace("REPLACE_WITH_CA_BUNDLE", &b64(read("ca.crt")))
        .replace(
            "REPLACE_WITH_SCHEDULER_CLIENT_CERT",
            &b64(read("scheduler-client.crt")),
        )
        .replace(
            "REPLACE_WITH_SCHEDULER_CLIENT_KEY",
            &b64(read("scheduler-client.key")),
        );
    if setup.nodes_mode {
        assert!(config.contains("nodeCacheCapable: true"));
        config = config.replace("nodeCacheCapable: true", "nodeCacheCapable: false");
    }
    assert!(!config.contains("REPLACE_WITH"), "a placeholder is left");
    config
}

/// The container args of `deployment` (the shipped one or the chart's),
/// with its mounted files replaced by this test's (`certs` for
/// /etc/kube-arbiter/tls/, `config` for the settings file), `--listen` on
/// loopback and `--kubeconfig`.
pub fn container_args(
    deployment: &Value,
    certs: &Path,
    config: &Path,
    kubeconfig: &Path,
    port: u16,
) -> Vec<String> {
    let shipped = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap_or_else(|| panic!("no container args in {deployment}"));
    let mut args: Vec<String> = shipped
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .skip_while(|a| a == "serve")
        .map(|a| {
            a.replace("/etc/kube-arbiter/tls/", &format!("{}/", certs.display()))
                .replace(
                    "/etc/kube-arbiter/config/config.yaml",
                    config.to_str().unwrap(),
                )
        })
        .collect();
    assert!(
        !args.iter().any(|a| a.starts_with("/etc/")),
        "a mounted path is left in {args:?}"
    );
    args.extend([
        "--listen".to_string(),
        format!("127.0.0.1:{port}"),
        "--kubeconfig".to_string(),
        kubeconfig.to_string_lossy().to_string(),
    ]);
    args
}

/// A kubeconfig (in the test's folder) holding a TokenRequest token of
/// the ServiceAccount kube-system/`account`: whoever uses it has exactly
/// that account's RBAC.
pub async fn service_account_kubeconfig(plane: &ControlPlane, account: &str) -> PathBuf {
    let token = service_account_token(&plane.admin, "kube-system", account).await;
    let kubeconfig = plane.dir.join(format!("{account}.kubeconfig"));
    pki::write_kubeconfig(
        &kubeconfig,
        &plane.api_url,
        &plane.ca.cert_pem,
        User::Token(&token),
    );
    kubeconfig
}

/// A TokenRequest token of a ServiceAccount (an hour).
pub async fn service_account_token(client: &kube::Client, ns: &str, name: &str) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let request: TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 3600}}))
            .unwrap();
    let answer = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .unwrap_or_else(|e| panic!("token for {ns}/{name}: {e}"));
    answer.status.unwrap().token
}
