//! Certificate rotation on disk: the new pair is served without a restart,
//! open connections keep working, and a bad pair never replaces a good one.

mod common;

use std::path::PathBuf;

use common::{
    Pair, ServerProcess, TestCa, client, eventually, install_provider, metric, serve_tls,
};

struct Setup {
    dir: tempfile::TempDir,
    server: ServerProcess,
    ca: TestCa,
    first: Pair,
}

fn serve_from_plain_files() -> Setup {
    install_provider();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("rotation CA");
    let first = ca.server_pair(&["localhost"]);
    let (cert, key) = first.write(dir.path());
    let server = serve_tls(dir.path(), &cert, &key, &[]);
    Setup {
        dir,
        server,
        ca,
        first,
    }
}

/// The certificate a brand-new connection is served.
async fn served_cert(ca: &TestCa, server: &ServerProcess) -> Option<Vec<u8>> {
    let response = client(&ca.cert_pem, server.addr)
        .tls_info(true)
        .build()
        .unwrap()
        .get(server.url("/healthz"))
        .send()
        .await
        .ok()?;
    peer_cert(&response)
}

fn peer_cert(response: &reqwest::Response) -> Option<Vec<u8>> {
    response
        .extensions()
        .get::<reqwest::tls::TlsInfo>()?
        .peer_certificate()
        .map(<[u8]>::to_vec)
}

async fn metrics_text(setup: &Setup) -> String {
    let client = client(&setup.ca.cert_pem, setup.server.addr)
        .build()
        .unwrap();
    common::get_text(&client, &setup.server.url("/metrics")).await
}

#[tokio::test]
async fn rewritten_cert_then_key_is_served_and_open_connections_keep_working() {
    let setup = serve_from_plain_files();
    let kept = client(&setup.ca.cert_pem, setup.server.addr)
        .tls_info(true)
        .build()
        .unwrap();
    let before = kept.get(setup.server.url("/healthz")).send().await.unwrap();
    assert_eq!(peer_cert(&before), Some(setup.first.cert_der()));

    // cert-manager's order: the certificate first, then its key.
    let second = setup.ca.server_pair(&["localhost"]);
    std::fs::write(setup.dir.path().join("tls.crt"), &second.cert_pem).unwrap();
    std::fs::write(setup.dir.path().join("tls.key"), &second.key_pem).unwrap();

    let wanted = second.cert_der();
    eventually("the rotated certificate to be served", || async {
        (served_cert(&setup.ca, &setup.server).await? == wanted).then_some(())
    })
    .await;

    // The connection opened before the rotation still answers, and is
    // still the same TLS session (it shows the old certificate).
    let after = kept.get(setup.server.url("/healthz")).send().await.unwrap();
    assert_eq!(after.status(), 200);
    assert_eq!(peer_cert(&after), Some(setup.first.cert_der()));

    let text = metrics_text(&setup).await;
    assert_eq!(
        metric(&text, "kube_arbiter_tls_reloads_total"),
        Some(1.0),
        "{text}"
    );
}

#[tokio::test]
async fn a_broken_certificate_is_counted_and_the_old_one_kept() {
    let mut setup = serve_from_plain_files();
    std::fs::write(
        setup.dir.path().join("tls.crt"),
        "-----BEGIN CERTIFICATE-----\nnot base64\n",
    )
    .unwrap();

    eventually("the refused rotation to be counted", || async {
        let text = metrics_text(&setup).await;
        (metric(&text, "kube_arbiter_tls_reload_failures_total")? >= 1.0).then_some(())
    })
    .await;
    assert!(setup.server.is_running());
    assert_eq!(
        served_cert(&setup.ca, &setup.server).await,
        Some(setup.first.cert_der())
    );
    assert!(
        setup
            .server
            .log()
            .contains("still serving the previous certificate")
    );
}

/// Kubernetes Secret volumes: `tls.crt -> ..data/tls.crt`, `..data ->
/// ..<timestamp>`; an update writes a new timestamped directory, swaps
/// the `..data` symlink in one rename, then removes the old directory (as
/// the kubelet's atomic writer does). Every swap is followed, not only the
/// first.
#[tokio::test]
async fn a_secret_volume_symlink_swap_is_followed() {
    use std::os::unix::fs::symlink;
    install_provider();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ca = TestCa::new("secret CA");
    let first = ca.server_pair(&["localhost"]);
    let write_version = |name: &str, pair: &Pair| -> PathBuf {
        let version = root.join(name);
        std::fs::create_dir(&version).unwrap();
        pair.write(&version);
        version
    };
    write_version("..v1", &first);
    symlink("..v1", root.join("..data")).unwrap();
    symlink("..data/tls.crt", root.join("tls.crt")).unwrap();
    symlink("..data/tls.key", root.join("tls.key")).unwrap();
    let server = serve_tls(root, &root.join("tls.crt"), &root.join("tls.key"), &[]);
    assert_eq!(served_cert(&ca, &server).await, Some(first.cert_der()));

    let swap_to = |new: &str, old: &str| {
        symlink(new, root.join("..data_tmp")).unwrap();
        std::fs::rename(root.join("..data_tmp"), root.join("..data")).unwrap();
        std::fs::remove_dir_all(root.join(old)).unwrap();
    };
    for (version, old) in [("..v2", "..v1"), ("..v3", "..v2")] {
        let next = ca.server_pair(&["localhost"]);
        write_version(version, &next);
        swap_to(version, old);
        let wanted = next.cert_der();
        eventually("the swapped certificate to be served", || async {
            (served_cert(&ca, &server).await? == wanted).then_some(())
        })
        .await;
    }
    let text = client(&ca.cert_pem, server.addr)
        .build()
        .unwrap()
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        metric(&text, "kube_arbiter_tls_reloads_total"),
        Some(2.0),
        "{text}"
    );
}

/// The status of a filter call presenting `identity`, or `None` when the
/// handshake fails.
async fn filter_status(setup: &Setup, identity: &Pair) -> Option<u16> {
    let response = common::anonymous_client(&setup.ca.cert_pem, setup.server.addr)
        .identity(identity.identity())
        .build()
        .unwrap()
        .post(setup.server.url("/scheduler/filter"))
        .header("content-type", "application/json")
        .body(r#"{"Pod":{"metadata":{"name":"p"}},"NodeNames":[]}"#)
        .send()
        .await
        .ok()?;
    Some(response.status().as_u16())
}

#[tokio::test]
async fn a_rotated_client_ca_is_trusted_without_a_restart() {
    install_provider();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("rotation CA");
    let (cert, key) = ca.server_pair(&["localhost"]).write(dir.path());
    let old_ca = TestCa::new("old client CA");
    let new_ca = TestCa::new("new client CA");
    let ca_file = dir.path().join("client-ca.crt");
    std::fs::write(&ca_file, &old_ca.cert_pem).unwrap();
    let server = serve_tls(
        dir.path(),
        &cert,
        &key,
        &["--client-ca", ca_file.to_str().unwrap()],
    );
    let setup = Setup {
        dir,
        server,
        first: ca.server_pair(&["localhost"]),
        ca,
    };
    let old_scheduler = old_ca.client_pair(common::SCHEDULER_NAME);
    let new_scheduler = new_ca.client_pair(common::SCHEDULER_NAME);
    assert_eq!(filter_status(&setup, &old_scheduler).await, Some(200));
    assert_eq!(filter_status(&setup, &new_scheduler).await, None);

    std::fs::write(&ca_file, &new_ca.cert_pem).unwrap();
    eventually("the new client CA to be trusted", || async {
        (filter_status(&setup, &new_scheduler).await == Some(200)).then_some(())
    })
    .await;
    assert_eq!(
        filter_status(&setup, &old_scheduler).await,
        None,
        "the replaced CA is no longer trusted"
    );
}
