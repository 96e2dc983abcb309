//! `--client-ca`: only clients with a certificate from that CA get in.

mod common;

use common::{Pair, ServerProcess, TestCa, client, install_provider, serve_tls};

struct Setup {
    _dir: tempfile::TempDir,
    server: ServerProcess,
    server_ca: TestCa,
    client_ca: TestCa,
}

fn serve_with_client_ca() -> Setup {
    install_provider();
    let dir = tempfile::tempdir().unwrap();
    let server_ca = TestCa::new("server CA");
    let client_ca = TestCa::new("client CA");
    let (cert, key) = server_ca.server_pair(&["localhost"]).write(dir.path());
    let ca_file = dir.path().join("client-ca.crt");
    std::fs::write(&ca_file, &client_ca.cert_pem).unwrap();
    let server = serve_tls(
        dir.path(),
        &cert,
        &key,
        &["--client-ca", ca_file.to_str().unwrap()],
    );
    Setup {
        _dir: dir,
        server,
        server_ca,
        client_ca,
    }
}

async fn get_healthz(
    setup: &Setup,
    identity: Option<&Pair>,
) -> Result<reqwest::StatusCode, reqwest::Error> {
    let mut builder = client(&setup.server_ca.cert_pem, setup.server.addr);
    if let Some(pair) = identity {
        builder = builder.identity(pair.identity());
    }
    let response = builder
        .build()?
        .get(setup.server.url("/healthz"))
        .send()
        .await?;
    Ok(response.status())
}

#[tokio::test]
async fn client_certificate_from_the_ca_is_accepted() {
    let setup = serve_with_client_ca();
    let scheduler = setup.client_ca.client_pair("kube-scheduler");
    assert_eq!(get_healthz(&setup, Some(&scheduler)).await.unwrap(), 200);
}

#[tokio::test]
async fn client_without_a_certificate_is_refused() {
    let setup = serve_with_client_ca();
    let result = get_healthz(&setup, None).await;
    assert!(result.is_err(), "{result:?}");
}

#[tokio::test]
async fn client_certificate_from_another_ca_is_refused() {
    let setup = serve_with_client_ca();
    let stranger = TestCa::new("another CA").client_pair("kube-scheduler");
    let result = get_healthz(&setup, Some(&stranger)).await;
    assert!(result.is_err(), "{result:?}");
}
