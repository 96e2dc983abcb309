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

/// The pair kube-scheduler presents: `certs` writes it beside the server's,
/// signed by the same ca.crt (what `serve --client-ca` is given), valid for
/// client authentication only, CN system:kube-scheduler, key private, and
/// the printed certData is its base64 (the key's never is).
#[test]
fn certs_issues_a_scheduler_client_pair_that_ca_crt_verifies_for_client_auth() {
    use base64::Engine;
    use rustls::server::WebPkiClientVerifier;
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, UnixTime};
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let out = run(&["certs", "--out", dir.path().to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |f: &str| std::fs::read(dir.path().join(f)).unwrap();

    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(&read("ca.crt")).unwrap())
        .unwrap();
    let verifier = WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(rustls::crypto::ring::default_provider()),
    )
    .build()
    .unwrap();
    let verify = |file: &str| {
        let cert = CertificateDer::from_pem_slice(&read(file)).unwrap();
        verifier.verify_client_cert(&cert, &[], UnixTime::now())
    };
    verify("scheduler-client.crt").unwrap();
    // The serving certificate is not a client certificate.
    assert!(verify("tls.crt").is_err());

    let der = CertificateDer::from_pem_slice(&read("scheduler-client.crt")).unwrap();
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    let cn: Vec<&str> = cert
        .subject()
        .iter_common_name()
        .map(|cn| cn.as_str().unwrap())
        .collect();
    assert_eq!(cn, ["system:kube-scheduler"]);
    let eku = cert.extended_key_usage().unwrap().unwrap().value;
    assert!(eku.client_auth && !eku.server_auth, "{eku:?}");

    let mode = std::fs::metadata(dir.path().join("scheduler-client.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let stdout = String::from_utf8_lossy(&out.stdout);
    let b64 = |f: &str| base64::engine::general_purpose::STANDARD.encode(read(f));
    assert!(stdout.contains(&b64("scheduler-client.crt")), "{stdout}");
    assert!(!stdout.contains(&b64("scheduler-client.key")), "{stdout}");
    assert!(stdout.contains("--client-ca"), "{stdout}");
}
