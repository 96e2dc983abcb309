//! The real `helm` CLI (`scripts/k8s-build.sh helm`: Helm from its Go
//! module, pinned) against the real control plane, as the cluster admin,
//! with charts/kube-arbiter.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::control_plane::ControlPlane;

/// The Helm version scripts/k8s-build.sh builds (as scripts/find-helm.sh).
pub const HELM_VERSION: &str = "v4.3.2";

/// The chart, in this repository.
pub fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("charts/kube-arbiter")
}

/// `helm` for one control plane: its admin kubeconfig, and Helm's cache,
/// config and data folders in the test's folder (nothing from `~`).
pub struct Helm {
    pub bin: PathBuf,
    kubeconfig: PathBuf,
    home: PathBuf,
}

impl Helm {
    /// `$HELM`, else target/k8s/helm-v4.3.2/helm.
    pub fn new(plane: &ControlPlane) -> Self {
        let bin = std::env::var_os("HELM")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join(format!("target/k8s/helm-{HELM_VERSION}/helm"))
            });
        assert!(
            bin.is_file(),
            "no helm at {}: build it with scripts/k8s-build.sh helm (or set HELM)",
            bin.display()
        );
        let home = plane.dir.join("helm");
        std::fs::create_dir_all(&home).unwrap();
        Self {
            bin,
            kubeconfig: plane.admin_kubeconfig(),
            home,
        }
    }

    /// Runs `helm ARGS... --kubeconfig ADMIN`; its stdout, or a panic with
    /// its stderr.
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new(&self.bin)
            .args(args)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .env("HELM_CACHE_HOME", self.home.join("cache"))
            .env("HELM_CONFIG_HOME", self.home.join("config"))
            .env("HELM_DATA_HOME", self.home.join("data"))
            .env_remove("KUBECONFIG")
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.bin.display()));
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "helm {args:?} failed ({}):\n{}\n{stdout}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// Writes `values` (YAML) to `NAME.yaml` in the test's folder, for `-f`.
    pub fn values_file(&self, name: &str, values: &str) -> PathBuf {
        let file = self.home.join(format!("{name}.yaml"));
        std::fs::write(&file, values).unwrap();
        file
    }

    /// The objects the release made (`helm get manifest`).
    pub fn manifest(&self, release: &str, namespace: &str) -> Vec<Value> {
        let text = self.run(&["get", "manifest", release, "--namespace", namespace]);
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
        docs.into_iter().filter(Value::is_object).collect()
    }
}
