//! How a test of what the server answers starts the built server and
//! talks to it: a [`Launch`] says where the cluster comes from and what
//! else to pass; [`Arbiter`] is the server it started, with its own
//! localhost certificate, and clients that trust it. Tests whose subject
//! is the certificate pair itself (TLS, mTLS, rotation) start
//! [`super::serve_tls`] on a pair they made instead.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    ServerProcess, TestCa, anonymous_client, client, empty_state_file, eventually, install_provider,
};

/// What to start: `kube-arbiter serve` on a cluster-state file or against
/// an API server's kubeconfig, with optional `--config` YAML, more
/// arguments and a `RUST_LOG` filter.
pub struct Launch {
    source: Source,
    config: Option<String>,
    args: Vec<String>,
    log: Option<String>,
}

impl Launch {
    /// Serve the cluster in the state file at `path`.
    pub fn file(path: impl AsRef<Path>) -> Self {
        Self::with_source(Source::File(path.as_ref().to_path_buf()))
    }

    /// Serve an empty cluster from a state file (ready at once).
    pub fn empty() -> Self {
        Self::with_source(Source::Empty)
    }

    /// Serve the cluster of the API server this kubeconfig names.
    pub fn live(kubeconfig: &Path) -> Self {
        Self::with_source(Source::Live(kubeconfig.to_path_buf()))
    }

    fn with_source(source: Source) -> Self {
        Self {
            source,
            config: None,
            args: Vec::new(),
            log: Some("info".to_string()),
        }
    }

    /// `--config` with this YAML.
    pub fn config(mut self, yaml: &str) -> Self {
        self.config = Some(yaml.to_string());
        self
    }

    /// More `serve` arguments.
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// `RUST_LOG` (default `info`); `None` leaves the program's default.
    pub fn log(mut self, filter: Option<&str>) -> Self {
        self.log = filter.map(str::to_string);
        self
    }

    /// Started and listening (the view may not be loaded yet).
    pub fn start(self) -> Arbiter {
        install_provider();
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new("kube-arbiter test CA");
        let (cert, key) = ca.server_pair(&["localhost"]).write(dir.path());
        let path = |p: PathBuf| p.to_str().unwrap().to_string();
        let mut args = vec![
            "--tls-cert".to_string(),
            path(cert),
            "--tls-key".to_string(),
            path(key),
        ];
        let (flag, source) = match self.source {
            Source::File(file) => ("--cluster-state", file),
            Source::Empty => ("--cluster-state", empty_state_file(dir.path())),
            Source::Live(kubeconfig) => ("--kubeconfig", kubeconfig),
        };
        args.extend([flag.to_string(), path(source)]);
        if let Some(yaml) = &self.config {
            let file = dir.path().join("config.yaml");
            std::fs::write(&file, yaml).unwrap();
            args.extend(["--config".to_string(), path(file)]);
        }
        args.extend(self.args);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let process = match &self.log {
            Some(filter) => ServerProcess::start_logging(&args, filter),
            None => ServerProcess::start_default_log(&args),
        };
        let client = client(&ca.cert_pem, process.addr).build().unwrap();
        Arbiter {
            process,
            client,
            ca,
            _dir: dir,
        }
    }

    /// Started, and `/readyz` answers 200.
    pub async fn ready(self) -> Arbiter {
        let arbiter = self.start();
        arbiter.wait_for_status("/readyz", 200).await;
        arbiter
    }
}

enum Source {
    File(PathBuf),
    Empty,
    Live(PathBuf),
}

/// The built server a [`Launch`] started (killed when dropped). `client`
/// trusts its certificate and presents kube-scheduler's.
pub struct Arbiter {
    pub process: ServerProcess,
    pub client: reqwest::Client,
    pub ca: TestCa,
    _dir: tempfile::TempDir,
}

impl Arbiter {
    pub fn url(&self, path: &str) -> String {
        self.process.url(path)
    }

    pub fn log(&self) -> String {
        self.process.log()
    }

    /// A client that trusts this server and presents no certificate.
    pub fn anonymous(&self) -> reqwest::Client {
        anonymous_client(&self.ca.cert_pem, self.process.addr)
            .build()
            .unwrap()
    }

    /// The status of a GET of `path` by [`Arbiter::client`].
    pub async fn status(&self, path: &str) -> u16 {
        let response = self.client.get(self.url(path)).send().await.unwrap();
        response.status().as_u16()
    }

    /// Poll until a GET of `path` answers `status`.
    pub async fn wait_for_status(&self, path: &str, status: u16) {
        eventually(&format!("GET {path} to answer {status}"), || async {
            let response = self.client.get(self.url(path)).send().await.ok()?;
            (response.status() == status).then_some(())
        })
        .await;
    }

    /// The body of a GET of `path` by [`Arbiter::client`] as text.
    pub async fn text(&self, path: &str) -> String {
        let response = self.client.get(self.url(path)).send().await.unwrap();
        response.text().await.unwrap()
    }

    /// POST a JSON body to `path`: the status and the JSON answer.
    pub async fn post(&self, path: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
        let response = self
            .client
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }

    /// POST `body` to `path`; the answer, which must be a 200.
    pub async fn post_ok(&self, path: &str, body: &Value) -> Value {
        let (status, answer) = self.post(path, serde_json::to_vec(body).unwrap()).await;
        assert_eq!(status, 200, "POST {path}: {answer}");
        answer
    }
}
