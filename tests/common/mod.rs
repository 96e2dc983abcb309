//! Shared helpers for the end-to-end tests: certificates made with rcgen,
//! the built binary started on a free port, HTTPS clients that trust a
//! given CA.
//!
//! Every server these helpers start requires kube-scheduler's client
//! certificate on the extender verbs, as a deployed one does: unless a test
//! passes its own `--client-ca` (or `--insecure-unauthenticated-extender`),
//! the server trusts [`scheduler_credentials`]' CA, and [`client`] presents
//! its `system:kube-scheduler` certificate. [`anonymous_client`] presents
//! none.
#![allow(dead_code)] // each test binary uses its own subset

mod arbiter;

#[allow(unused_imports)] // not every test binary starts a server
pub use arbiter::{Arbiter, Launch};

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

pub const BIN: &str = env!("CARGO_BIN_EXE_kube-arbiter");

/// Long enough for a loaded 2-core machine; tests poll up to it and
/// normally finish far sooner.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub fn install_provider() {
    kube_arbiter::server::tls::install_crypto_provider();
}

/// A throwaway certificate authority.
pub struct TestCa {
    pub cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// PEM certificate and key.
pub struct Pair {
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCa {
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let cert_pem = params.self_signed(&key).unwrap().pem();
        Self {
            cert_pem,
            issuer: Issuer::new(params, key),
        }
    }

    pub fn server_pair(&self, names: &[&str]) -> Pair {
        self.issue(names, ExtendedKeyUsagePurpose::ServerAuth)
    }

    pub fn client_pair(&self, name: &str) -> Pair {
        self.issue(&[name], ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn issue(&self, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Pair {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names.clone()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, &names[0]);
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Pair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

impl Pair {
    pub fn write(&self, dir: &Path) -> (PathBuf, PathBuf) {
        let cert = dir.join("tls.crt");
        let key = dir.join("tls.key");
        std::fs::write(&cert, &self.cert_pem).unwrap();
        std::fs::write(&key, &self.key_pem).unwrap();
        (cert, key)
    }

    pub fn identity(&self) -> reqwest::Identity {
        reqwest::Identity::from_pem(format!("{}{}", self.cert_pem, self.key_pem).as_bytes())
            .unwrap()
    }

    pub fn cert_der(&self) -> Vec<u8> {
        use rustls_pki_types::pem::PemObject;
        rustls_pki_types::CertificateDer::from_pem_slice(self.cert_pem.as_bytes())
            .unwrap()
            .to_vec()
    }
}

/// The name kube-scheduler's client certificate carries.
pub const SCHEDULER_NAME: &str = "system:kube-scheduler";

/// kube-scheduler's client credentials, one set per test process: the CA
/// the servers trust for client certificates (written to a file that lives
/// as long as the process) and the certificate kube-scheduler presents.
pub struct SchedulerCredentials {
    pub ca: TestCa,
    pub ca_file: PathBuf,
    pub scheduler: Pair,
    _dir: tempfile::TempDir,
}

pub fn scheduler_credentials() -> &'static SchedulerCredentials {
    static CREDENTIALS: OnceLock<SchedulerCredentials> = OnceLock::new();
    CREDENTIALS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new("kube-arbiter client CA");
        let ca_file = dir.path().join("client-ca.crt");
        std::fs::write(&ca_file, &ca.cert_pem).unwrap();
        let scheduler = ca.client_pair(SCHEDULER_NAME);
        SchedulerCredentials {
            ca,
            ca_file,
            scheduler,
            _dir: dir,
        }
    })
}

/// `serve` args with the shared client CA added, unless the test chose its
/// own client authentication.
fn with_client_auth<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let chosen = args
        .iter()
        .any(|a| *a == "--client-ca" || *a == "--insecure-unauthenticated-extender");
    let mut all = args.to_vec();
    if !chosen {
        let ca_file = scheduler_credentials().ca_file.to_str().unwrap();
        all.extend(["--client-ca", ca_file]);
    }
    all
}

/// An empty cluster: the server is ready with it.
pub fn empty_state_file(dir: &Path) -> PathBuf {
    let path = dir.join("cluster.yaml");
    std::fs::write(&path, "apiVersion: v1\nkind: List\nitems: []\n").unwrap();
    path
}

/// `serve` with this certificate pair and an empty cluster in `dir`: for
/// tests whose subject is the pair; the others start a [`Launch`].
pub fn serve_tls(dir: &Path, cert: &Path, key: &Path, extra: &[&str]) -> ServerProcess {
    let state = empty_state_file(dir);
    let mut args = vec![
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
        "--cluster-state",
        state.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ServerProcess::start(&args)
}

/// The built binary running `serve`, listening, its log captured.
pub struct ServerProcess {
    process: Spawned,
    pub addr: SocketAddr,
}

impl ServerProcess {
    /// `kube-arbiter serve --listen 127.0.0.1:0 ARGS...`, once it listens.
    pub fn start(args: &[&str]) -> Self {
        Self::start_logging(args, "info")
    }

    /// [`ServerProcess::start`] with this `RUST_LOG` filter.
    pub fn start_logging(args: &[&str], filter: &str) -> Self {
        Self::start_filtered(args, Some(filter))
    }

    /// [`ServerProcess::start`] without `RUST_LOG`: the program's own
    /// default filter.
    pub fn start_default_log(args: &[&str]) -> Self {
        Self::start_filtered(args, None)
    }

    fn start_filtered(args: &[&str], filter: Option<&str>) -> Self {
        let mut all = vec!["--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let (process, line) = Spawned::until_filtered(&all, filter, "listening on https://");
        // The address ends the text line, or the JSON string.
        let addr = line
            .split("listening on https://")
            .nth(1)
            .and_then(|a| a.split('"').next()?.trim().parse::<SocketAddr>().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        Self { process, addr }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }

    pub fn log(&self) -> String {
        self.process.log()
    }

    pub fn is_running(&mut self) -> bool {
        self.process.child.try_wait().unwrap().is_none()
    }

    pub fn sigterm(&self) {
        self.process.sigterm()
    }

    pub async fn wait(&mut self) -> ExitStatus {
        self.process.wait().await
    }
}

/// The built binary running `serve`, not necessarily listening yet; killed
/// when dropped.
pub struct Spawned {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Spawned {
    /// `kube-arbiter serve ARGS...` with this `RUST_LOG` filter, once a log
    /// line contains `marker`; that line too.
    pub fn until(args: &[&str], filter: &str, marker: &str) -> (Self, String) {
        Self::until_filtered(args, Some(filter), marker)
    }

    /// [`Spawned::until`]; without `RUST_LOG` when `filter` is None.
    /// `KUBE_ARBITER_BIN` names another build to serve (an earlier commit's,
    /// for a before/after comparison in one run of a report).
    pub fn until_filtered(args: &[&str], filter: Option<&str>, marker: &str) -> (Self, String) {
        let bin = std::env::var("KUBE_ARBITER_BIN").unwrap_or_else(|_| BIN.to_string());
        let mut command = Command::new(bin);
        command.arg("serve").args(with_client_auth(args));
        match filter {
            Some(f) => command.env("RUST_LOG", f),
            None => command.env_remove("RUST_LOG"),
        };
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let sink = Arc::clone(&log);
        let wanted = marker.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains(&wanted) {
                    let _ = tx.send(line.clone());
                }
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let process = Self { child, log };
        match rx.recv_timeout(PATIENCE) {
            Ok(line) => (process, line),
            Err(_) => panic!("server did not log {marker:?}:\n{}", process.log()),
        }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn sigterm(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// The exit status, waiting at most [`PATIENCE`] (async, so the test's
    /// own client connections keep being driven meanwhile).
    pub async fn wait(&mut self) -> ExitStatus {
        let start = Instant::now();
        while start.elapsed() < PATIENCE {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("server did not exit:\n{}", self.log());
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run the binary to completion (`serve` with the shared client CA, as
/// [`Spawned`] starts it).
pub fn run(args: &[&str]) -> Output {
    let args = match args.split_first() {
        Some((&"serve", rest)) => [&["serve"][..], &with_client_auth(rest)].concat(),
        _ => args.to_vec(),
    };
    Command::new(BIN).args(args).output().unwrap()
}

/// A client that trusts only `ca_pem`, reaches `localhost` at `addr` and
/// presents kube-scheduler's client certificate.
pub fn client(ca_pem: &str, addr: SocketAddr) -> reqwest::ClientBuilder {
    anonymous_client(ca_pem, addr).identity(scheduler_credentials().scheduler.identity())
}

/// [`client`] without a client certificate.
pub fn anonymous_client(ca_pem: &str, addr: SocketAddr) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .tls_backend_rustls()
        .tls_certs_only([reqwest::Certificate::from_pem(ca_pem.as_bytes()).unwrap()])
        .resolve("localhost", addr)
        .timeout(PATIENCE)
}

/// The body of a GET of `url` as text; panics on any failure.
pub async fn get_text(client: &reqwest::Client, url: &str) -> String {
    client.get(url).send().await.unwrap().text().await.unwrap()
}

/// Poll `check` until it returns `Some`, at most [`PATIENCE`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if let Some(v) = check().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("gave up waiting for {what}");
}

/// Poll `holds` (cheap, in-process) until it is true, at most
/// [`PATIENCE`]; the panic names `what` was waited for.
pub async fn until(what: &str, mut holds: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if holds() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("gave up after {PATIENCE:?} waiting until {what}");
}

/// The value of an un-labelled counter or gauge in a /metrics text.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}
