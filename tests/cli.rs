//! How `serve` refuses bad starts: exit 2 with a message that says what to fix.

mod common;

use common::{TestCa, run};

fn stderr_of(args: &[&str]) -> (Option<i32>, String) {
    let out = run(args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn without_a_cluster_source_it_says_how_to_use_cluster_state() {
    // No configuration at all, whatever this machine has: an empty home,
    // no KUBECONFIG, not in a cluster.
    let home = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(common::BIN)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(["--insecure-unauthenticated-extender"])
        .env("HOME", home.path())
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no Kubernetes API configuration") && stderr.contains("--cluster-state"),
        "{stderr}"
    );
}

#[test]
fn a_broken_kubeconfig_is_a_config_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, "clusters: [not: a kubeconfig").unwrap();
    let path = kubeconfig.to_str().unwrap();
    let (code, stderr) = stderr_of(&["serve", "--listen", "127.0.0.1:0", "--kubeconfig", path]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot read kubeconfig") && stderr.contains(path),
        "{stderr}"
    );
}

#[test]
fn a_key_that_does_not_match_the_certificate_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("ca");
    let (cert, _) = ca.server_pair(&["localhost"]).write(dir.path());
    let other_key = dir.path().join("other.key");
    std::fs::write(&other_key, ca.server_pair(&["localhost"]).key_pem).unwrap();
    let state = common::empty_state_file(dir.path());
    let (code, stderr) = stderr_of(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        other_key.to_str().unwrap(),
        "--cluster-state",
        state.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("other.key"), "{stderr}");
}

#[test]
fn unknown_config_key_is_a_config_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "server:\n  noSuchSetting: 1\n").unwrap();
    let (code, stderr) = stderr_of(&["serve", "--config", config.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("noSuchSetting"), "{stderr}");
}

#[test]
fn usage_errors_exit_2() {
    let (code, _) = stderr_of(&["serve", "--tls-cert", "only-the-cert.pem"]);
    assert_eq!(code, Some(2));
}

#[test]
fn a_port_in_use_is_a_runtime_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let state = common::empty_state_file(dir.path());
    let (code, stderr) = stderr_of(&[
        "serve",
        "--listen",
        &addr,
        "--cluster-state",
        state.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(&addr), "{stderr}");
}
