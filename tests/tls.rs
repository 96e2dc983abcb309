//! The HTTPS port with certificates from `kube-arbiter certs`: verified by
//! hostname, over HTTP/2 and HTTP/1.1.

mod common;

use common::{ServerProcess, client, install_provider, run, serve_tls};

/// `certs` into a temp dir, then `serve` with its tls.crt/tls.key.
fn serve_with_generated_certs(cert_args: &[&str]) -> (tempfile::TempDir, ServerProcess, String) {
    install_provider();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("certs");
    let out_str = out.to_str().unwrap();
    let mut args = vec!["certs", "--out", out_str];
    args.extend_from_slice(cert_args);
    let certs = run(&args);
    assert!(
        certs.status.success(),
        "{}",
        String::from_utf8_lossy(&certs.stderr)
    );
    let server = serve_tls(dir.path(), &out.join("tls.crt"), &out.join("tls.key"), &[]);
    let ca = std::fs::read_to_string(out.join("ca.crt")).unwrap();
    (dir, server, ca)
}

#[tokio::test]
async fn generated_ca_verifies_the_server_by_hostname_over_h2() {
    let (_dir, server, ca) = serve_with_generated_certs(&["--dns", "localhost"]);
    let response = client(&ca, server.addr)
        .build()
        .unwrap()
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
}

#[tokio::test]
async fn http1_clients_are_served_too() {
    let (_dir, server, ca) = serve_with_generated_certs(&["--dns", "localhost"]);
    let response = client(&ca, server.addr)
        .http1_only()
        .build()
        .unwrap()
        .get(server.url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.version(), reqwest::Version::HTTP_11);
}

#[tokio::test]
async fn a_name_not_in_the_certificate_is_refused() {
    let (_dir, server, ca) = serve_with_generated_certs(&["--dns", "localhost"]);
    let result = client(&ca, server.addr)
        .resolve("elsewhere.example", server.addr)
        .build()
        .unwrap()
        .get(format!(
            "https://elsewhere.example:{}/healthz",
            server.addr.port()
        ))
        .send()
        .await;
    assert!(result.is_err(), "{result:?}");
}

#[tokio::test]
async fn default_certificate_names_cover_the_in_cluster_service() {
    let (_dir, server, ca) = serve_with_generated_certs(&[]);
    let name = "kube-arbiter.kube-system.svc";
    let response = client(&ca, server.addr)
        .resolve(name, server.addr)
        .build()
        .unwrap()
        .get(format!("https://{name}:{}/healthz", server.addr.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn an_ip_address_given_to_certs_verifies() {
    let (_dir, server, ca) = serve_with_generated_certs(&["--ip", "127.0.0.1"]);
    let response = client(&ca, server.addr)
        .build()
        .unwrap()
        .get(format!("https://127.0.0.1:{}/healthz", server.addr.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[test]
fn certs_prints_the_ca_bundle_and_refuses_to_overwrite() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let first = run(&["certs", "--out", out]);
    assert!(first.status.success());
    let ca = std::fs::read(dir.path().join("ca.crt")).unwrap();
    let bundle = base64::engine::general_purpose::STANDARD.encode(&ca);
    assert!(String::from_utf8_lossy(&first.stdout).contains(&bundle));

    let again = run(&["certs", "--out", out]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    assert_eq!(std::fs::read(dir.path().join("ca.crt")).unwrap(), ca);

    let forced = run(&["certs", "--out", out, "--force"]);
    assert!(forced.status.success());
    assert_ne!(std::fs::read(dir.path().join("ca.crt")).unwrap(), ca);
}
