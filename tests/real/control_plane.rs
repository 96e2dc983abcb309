//! A real Kubernetes control plane on loopback, from the binaries
//! `scripts/k8s-build.sh` built: etcd, kube-apiserver (RBAC, the Priority
//! and both webhook admission plugins), kube-controller-manager (the
//! workload, garbage-collector, namespace, service-account and disruption
//! controllers) and, once kube-arbiter is up, kube-scheduler. No kubelet:
//! nodes are API objects, and [`super::kubelet`] plays its part where a
//! test needs it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, PostParams};
use serde_json::json;

use super::pki::{self, ClusterCa, Pair, User};
use super::process::{Process, free_port};

/// How long a component may take to come up on a loaded 2-core machine.
pub const STARTUP: Duration = Duration::from_secs(120);

/// Where the built Kubernetes binaries are: `KUBE_ARBITER_K8S_DIR`
/// (`target/k8s/v1.37.2`), whose name is the version.
#[derive(Clone)]
pub struct Binaries {
    pub dir: PathBuf,
    pub version: String,
}

impl Binaries {
    pub fn from_env() -> Self {
        let dir = std::env::var_os("KUBE_ARBITER_K8S_DIR").map(PathBuf::from).unwrap_or_else(|| {
            panic!("KUBE_ARBITER_K8S_DIR is not set: run the real-cluster suite with scripts/e2e.sh, which builds Kubernetes and sets it")
        });
        let dir = std::fs::canonicalize(&dir)
            .unwrap_or_else(|e| panic!("KUBE_ARBITER_K8S_DIR={}: {e}", dir.display()));
        let version = dir.file_name().unwrap().to_string_lossy().to_string();
        for bin in [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
        ] {
            assert!(
                dir.join(bin).is_file(),
                "{} has no {bin}: run scripts/k8s-build.sh",
                dir.display()
            );
        }
        Self { dir, version }
    }

    pub fn bin(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The minor version (37 for v1.37.2).
    pub fn minor(&self) -> u32 {
        self.version
            .split('.')
            .nth(1)
            .and_then(|m| m.parse().ok())
            .unwrap_or_else(|| panic!("no minor version in {}", self.version))
    }
}

/// The running control plane; every process is killed when it is dropped,
/// and a failing test prints the end of each component's log.
pub struct ControlPlane {
    pub bins: Binaries,
    pub dir: PathBuf,
    pub ca: ClusterCa,
    pub api_url: String,
    pub admin: kube::Client,
    admin_pair: Pair,
    /// `--feature-gates` of every component ("" for none).
    feature_gates: String,
    // Dropped (killed) in this order.
    scheduler: Option<Process>,
    controller_manager: Process,
    apiserver: Process,
    apiserver_args: Vec<String>,
    etcd: Process,
}

impl ControlPlane {
    /// etcd, kube-apiserver and kube-controller-manager for the test
    /// `name`, its files in `target/tmp/real-cluster/NAME/`.
    pub async fn start(name: &str) -> Self {
        Self::start_with(name, &[]).await
    }

    /// [`ControlPlane::start`] with these feature gates on in every
    /// component (`GenericWorkload`), and for a gate that brings a beta
    /// API, that API served (`scheduling.k8s.io/v1beta1`).
    pub async fn start_with(name: &str, gates: &[&str]) -> Self {
        Self::start_configured(name, gates, true).await
    }

    /// [`ControlPlane::start_with`] with kube-apiserver's in-tree
    /// `Priority` admission plugin off (`--disable-admission-plugins`), so
    /// that only kube-arbiter's webhook resolves priorities: with it on,
    /// the plugin resolves first (it runs before `MutatingAdmissionWebhook`)
    /// and the webhook finds nothing left to do.
    pub async fn start_without_priority_plugin(name: &str, gates: &[&str]) -> Self {
        Self::start_configured(name, gates, false).await
    }

    async fn start_configured(name: &str, gates: &[&str], priority_plugin: bool) -> Self {
        super::install_crypto_provider();
        let bins = Binaries::from_env();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("real-cluster")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = |p: &str| dir.join(p).to_string_lossy().to_string();

        let ca = ClusterCa::new();
        let serving = ca.apiserver();
        let (sa_private, sa_public) = pki::service_account_keys();
        for (file, text) in [
            ("ca.crt", &ca.cert_pem),
            ("apiserver.crt", &serving.cert_pem),
            ("apiserver.key", &serving.key_pem),
            ("sa.key", &sa_private),
            ("sa.pub", &sa_public),
        ] {
            std::fs::write(dir.join(file), text).unwrap();
        }

        let (etcd_port, peer_port) = (free_port(), free_port());
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let etcd = Process::spawn(
            "etcd",
            &bins.bin("etcd"),
            &strings(&[
                "--name=real",
                &format!("--data-dir={}", path("etcd")),
                &format!("--listen-client-urls={etcd_url}"),
                &format!("--advertise-client-urls={etcd_url}"),
                &format!("--listen-peer-urls={peer_url}"),
                &format!("--initial-advertise-peer-urls={peer_url}"),
                &format!("--initial-cluster=real={peer_url}"),
                // A test cluster lives for seconds: durability buys nothing.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ]),
            &dir,
        );

        let api_port = free_port();
        let api_url = format!("https://127.0.0.1:{api_port}");
        let feature_gates = gates
            .iter()
            .map(|g| format!("{g}=true"))
            .collect::<Vec<_>>()
            .join(",");
        let mut apiserver_args = strings(&[
            &format!("--etcd-servers={etcd_url}"),
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            &format!("--secure-port={api_port}"),
            &format!("--tls-cert-file={}", path("apiserver.crt")),
            &format!("--tls-private-key-file={}", path("apiserver.key")),
            &format!("--client-ca-file={}", path("ca.crt")),
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            &format!("--service-account-key-file={}", path("sa.pub")),
            &format!("--service-account-signing-key-file={}", path("sa.key")),
            // Addresses are only allocated, never reached: there is no
            // kube-proxy, and no endpoint may be a loopback address.
            "--service-cluster-ip-range=10.96.0.0/16",
            "--endpoint-reconciler-type=none",
        ]);
        // On by default; named because the suite depends on them. Off:
        // TaintNodesByCondition taints every new node not-ready until the
        // node lifecycle controller sees a kubelet's heartbeat; there is
        // no kubelet.
        let (enable, disable) = if priority_plugin {
            (
                "Priority,MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
                "TaintNodesByCondition",
            )
        } else {
            (
                "MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
                "TaintNodesByCondition,Priority",
            )
        };
        apiserver_args.push(format!("--enable-admission-plugins={enable}"));
        apiserver_args.push(format!("--disable-admission-plugins={disable}"));
        if !gates.is_empty() {
            apiserver_args.push(format!("--feature-gates={feature_gates}"));
            apiserver_args.push("--runtime-config=scheduling.k8s.io/v1beta1=true".to_string());
        }
        let apiserver = Process::spawn(
            "kube-apiserver",
            &bins.bin("kube-apiserver"),
            &apiserver_args,
            &dir,
        );

        let admin_pair = ca.client("real-cluster-admin", &["system:masters"]);
        let admin_config = dir.join("admin.kubeconfig");
        pki::write_kubeconfig(
            &admin_config,
            &api_url,
            &ca.cert_pem,
            User::Certificate(&admin_pair),
        );
        let controller_manager_config = dir.join("controller-manager.kubeconfig");
        pki::write_kubeconfig(
            &controller_manager_config,
            &api_url,
            &ca.cert_pem,
            User::Certificate(&ca.client("system:kube-controller-manager", &[])),
        );

        let mut controller_manager_args = strings(&[
            &format!("--kubeconfig={}", controller_manager_config.display()),
            "--controllers=deployment,replicaset,garbagecollector,namespace,serviceaccount,serviceaccount-token,disruption",
            "--use-service-account-credentials=true",
            &format!("--service-account-private-key-file={}", path("sa.key")),
            &format!("--root-ca-file={}", path("ca.crt")),
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            &format!("--secure-port={}", free_port()),
        ]);
        if !gates.is_empty() {
            controller_manager_args.push(format!("--feature-gates={feature_gates}"));
        }
        let mut plane = Self {
            admin: kube_client(&admin_config).await,
            controller_manager: Process::spawn(
                "kube-controller-manager",
                &bins.bin("kube-controller-manager"),
                &controller_manager_args,
                &dir,
            ),
            bins,
            dir,
            ca,
            api_url,
            feature_gates,
            admin_pair,
            scheduler: None,
            apiserver,
            apiserver_args,
            etcd,
        };
        plane.wait_ready().await;
        plane
    }

    /// A kubeconfig for the cluster admin (system:masters).
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir.join("admin.kubeconfig")
    }

    /// Waits until kube-apiserver's `/readyz` answers 200.
    pub async fn wait_ready(&mut self) {
        let client = reqwest::Client::builder()
            .tls_backend_rustls()
            .tls_certs_only([reqwest::Certificate::from_pem(self.ca.cert_pem.as_bytes()).unwrap()])
            .identity(
                reqwest::Identity::from_pem(
                    format!("{}{}", self.admin_pair.cert_pem, self.admin_pair.key_pem).as_bytes(),
                )
                .unwrap(),
            )
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let url = format!("{}/readyz", self.api_url);
        let start = Instant::now();
        loop {
            if let Ok(r) = client.get(&url).send().await
                && r.status() == 200
            {
                return;
            }
            if let Some(status) = self.apiserver.exited() {
                panic!(
                    "kube-apiserver exited ({status}):\n{}",
                    self.apiserver.tail(40)
                );
            }
            assert!(
                start.elapsed() < STARTUP,
                "kube-apiserver not ready after {STARTUP:?}:\n{}",
                self.apiserver.tail(40)
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Kills kube-apiserver and starts it again with the same flags.
    pub async fn restart_apiserver(&mut self) {
        self.apiserver.kill();
        self.apiserver = Process::spawn(
            "kube-apiserver",
            &self.bins.bin("kube-apiserver"),
            &self.apiserver_args,
            &self.dir,
        );
        self.wait_ready().await;
    }

    /// Starts kube-scheduler with this configuration (its
    /// `clientConnection.kubeconfig` is replaced by one for
    /// system:kube-scheduler) and waits until it leads.
    pub async fn start_scheduler(&mut self, config: &str) {
        self.start_scheduler_with(config, &[]).await;
    }

    /// [`ControlPlane::start_scheduler`] with `extra` flags (a later flag
    /// wins over the harness's own, e.g. `--secure-port`).
    pub async fn start_scheduler_with(&mut self, config: &str, extra: &[String]) {
        let kubeconfig = self.dir.join("scheduler.kubeconfig");
        pki::write_kubeconfig(
            &kubeconfig,
            &self.api_url,
            &self.ca.cert_pem,
            User::Certificate(&self.ca.client("system:kube-scheduler", &[])),
        );
        let config = config.replace(
            "/etc/kubernetes/scheduler.conf",
            kubeconfig.to_str().unwrap(),
        );
        self.start_scheduler_as_configured(&config, extra, "kube-system", "kube-scheduler")
            .await;
    }

    /// Starts kube-scheduler with this configuration as it is (its
    /// `clientConnection.kubeconfig` names who it runs as) and `extra`
    /// flags, and waits until it holds the Lease `namespace`/`lease` (its
    /// `leaderElection.resourceNamespace`/`resourceName`).
    pub async fn start_scheduler_as_configured(
        &mut self,
        config: &str,
        extra: &[String],
        namespace: &str,
        lease: &str,
    ) {
        let file = self.dir.join("scheduler-config.yaml");
        std::fs::write(&file, config).unwrap();
        let mut args = strings(&[
            &format!("--config={}", file.display()),
            "--bind-address=127.0.0.1",
            &format!("--secure-port={}", free_port()),
            "--v=2",
        ]);
        args.extend_from_slice(extra);
        if !self.feature_gates.is_empty() {
            args.push(format!("--feature-gates={}", self.feature_gates));
        }
        self.scheduler = Some(Process::spawn(
            "kube-scheduler",
            &self.bins.bin("kube-scheduler"),
            &args,
            &self.dir,
        ));
        let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
            Api::namespaced(self.admin.clone(), namespace);
        let start = Instant::now();
        loop {
            if let Ok(lease) = leases.get(lease).await
                && lease.spec.and_then(|s| s.holder_identity).is_some()
            {
                return;
            }
            let scheduler = self.scheduler.as_mut().unwrap();
            if let Some(status) = scheduler.exited() {
                panic!("kube-scheduler exited ({status}):\n{}", scheduler.tail(40));
            }
            assert!(
                start.elapsed() < STARTUP,
                "kube-scheduler did not lead after {STARTUP:?}:\n{}",
                scheduler.tail(40)
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Stops kube-scheduler and deletes its Lease, so that the next one
    /// leads at once instead of waiting for the lease to expire.
    pub async fn stop_scheduler(&mut self) {
        if let Some(mut scheduler) = self.scheduler.take() {
            scheduler.kill();
        }
        let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
            Api::namespaced(self.admin.clone(), "kube-system");
        let _ = leases
            .delete("kube-scheduler", &kube::api::DeleteParams::default())
            .await;
    }

    /// kube-scheduler's process id, while it runs.
    pub fn scheduler_pid(&self) -> Option<u32> {
        self.scheduler.as_ref().map(Process::pid)
    }

    /// The process ids of etcd, kube-apiserver and
    /// kube-controller-manager, by name.
    pub fn component_pids(&self) -> [(&'static str, u32); 3] {
        [
            ("etcd", self.etcd.pid()),
            ("kube-apiserver", self.apiserver.pid()),
            ("kube-controller-manager", self.controller_manager.pid()),
        ]
    }

    /// kube-scheduler's log so far.
    pub fn scheduler_log(&self) -> String {
        self.scheduler
            .as_ref()
            .map(|s| std::fs::read_to_string(&s.log).unwrap_or_default())
            .unwrap_or_default()
    }

    /// Creates namespace `name` and waits for its `default`
    /// ServiceAccount, without which no pod is admitted.
    pub async fn namespace(&self, name: &str) {
        let namespaces: Api<Namespace> = Api::all(self.admin.clone());
        let ns = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
        self.wait_default_service_account(name).await;
    }

    /// Waits until namespace `name` has its `default` ServiceAccount.
    pub async fn wait_default_service_account(&self, name: &str) {
        let accounts: Api<ServiceAccount> = Api::namespaced(self.admin.clone(), name);
        let start = Instant::now();
        while accounts.get_opt("default").await.unwrap().is_none() {
            assert!(
                start.elapsed() < STARTUP,
                "no default ServiceAccount in {name}:\n{}",
                self.controller_manager.tail(40)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut all: Vec<&Process> = vec![&self.apiserver, &self.controller_manager];
            all.extend(self.scheduler.as_ref());
            for process in all {
                eprintln!(
                    "---- last lines of {} ({}):\n{}",
                    process.name,
                    process.log.display(),
                    process.tail(30)
                );
            }
        }
    }
}

/// A client from a kubeconfig file.
pub async fn kube_client(kubeconfig: &Path) -> kube::Client {
    let file = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    kube::Client::try_from(config).unwrap()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}
