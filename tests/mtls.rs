//! Who may call what over the one HTTPS port (docs/security.md): the
//! extender verbs need kube-scheduler's client certificate; the webhooks and
//! probes answer callers without one; a certificate from another CA does not
//! get through the handshake.

mod common;

use common::{
    Pair, SCHEDULER_NAME, ServerProcess, TestCa, anonymous_client, install_provider,
    scheduler_credentials, serve_tls,
};
use reqwest::StatusCode;

struct Setup {
    _dir: tempfile::TempDir,
    server: ServerProcess,
    server_ca: TestCa,
}

/// A file-mode server over the demo cluster with `extra` flags; the shared
/// client CA of the test harness unless `extra` says otherwise.
fn serve(extra: &[&str]) -> Setup {
    install_provider();
    let dir = tempfile::tempdir().unwrap();
    let server_ca = TestCa::new("server CA");
    let (cert, key) = server_ca.server_pair(&["localhost"]).write(dir.path());
    let server = serve_tls(dir.path(), &cert, &key, extra);
    Setup {
        _dir: dir,
        server,
        server_ca,
    }
}

fn example(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/examples/requests/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// POST `body` to `path` presenting `identity` (or no certificate).
async fn post(
    setup: &Setup,
    identity: Option<&Pair>,
    path: &str,
    body: String,
) -> Result<(StatusCode, String), reqwest::Error> {
    let mut builder = anonymous_client(&setup.server_ca.cert_pem, setup.server.addr);
    if let Some(pair) = identity {
        builder = builder.identity(pair.identity());
    }
    let response = builder
        .build()?
        .post(setup.server.url(path))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await?;
    let status = response.status();
    Ok((status, response.text().await?))
}

async fn get(
    setup: &Setup,
    identity: Option<&Pair>,
    path: &str,
) -> Result<StatusCode, reqwest::Error> {
    let mut builder = anonymous_client(&setup.server_ca.cert_pem, setup.server.addr);
    if let Some(pair) = identity {
        builder = builder.identity(pair.identity());
    }
    Ok(builder
        .build()?
        .get(setup.server.url(path))
        .send()
        .await?
        .status())
}

const VERBS: [(&str, &str); 4] = [
    ("/scheduler/filter", "filter-node-names.json"),
    ("/scheduler/prioritize", "prioritize-node-names.json"),
    ("/scheduler/preempt", "preempt-gpu.json"),
    (
        "/scheduler/bind",
        r#"{"PodName":"p","PodNamespace":"default","PodUID":"u","Node":"n1"}"#,
    ),
];

fn body_of(what: &str) -> String {
    if what.starts_with('{') {
        what.to_string()
    } else {
        example(what)
    }
}

#[tokio::test]
async fn kube_schedulers_certificate_reaches_every_extender_verb() {
    let setup = serve(&[]);
    let scheduler = &scheduler_credentials().scheduler;
    for (path, what) in VERBS {
        let (status, body) = post(&setup, Some(scheduler), path, body_of(what))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
    }
}

#[tokio::test]
async fn without_a_certificate_the_extender_verbs_are_refused_but_webhooks_and_probes_answer() {
    let setup = serve(&[]);
    for (path, what) in VERBS {
        let (status, body) = post(&setup, None, path, body_of(what)).await.unwrap();
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}: {body}");
        assert!(body.contains("client certificate"), "{path}: {body}");
        assert!(!body.contains("FailedNodes"), "{path}: {body}");
    }
    let (status, body) = post(
        &setup,
        None,
        "/admission/priority",
        example("admit-create-named-class.json"),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("AdmissionReview"), "{body}");
    for probe in ["/healthz", "/readyz"] {
        assert_eq!(
            get(&setup, None, probe).await.unwrap(),
            StatusCode::OK,
            "{probe}"
        );
    }
}

#[tokio::test]
async fn a_certificate_of_the_ca_with_another_name_is_forbidden_the_verbs() {
    let setup = serve(&[]);
    let node = scheduler_credentials().ca.client_pair("system:node:n1");
    for (path, what) in VERBS {
        let (status, body) = post(&setup, Some(&node), path, body_of(what))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
        assert!(body.contains("system:node:n1"), "{path}: {body}");
    }
}

#[tokio::test]
async fn a_certificate_from_another_ca_fails_the_handshake() {
    let setup = serve(&[]);
    let stranger = TestCa::new("another CA").client_pair(SCHEDULER_NAME);
    let result = get(&setup, Some(&stranger), "/healthz").await;
    assert!(result.is_err(), "{result:?}");
    let result = post(
        &setup,
        Some(&stranger),
        "/scheduler/filter",
        example("filter-node-names.json"),
    )
    .await;
    assert!(result.is_err(), "{result:?}");
}

#[tokio::test]
async fn the_allowed_names_are_configurable() {
    let setup = serve(&["--scheduler-client-name", "my-scheduler"]);
    let creds = scheduler_credentials();
    let mine = creds.ca.client_pair("my-scheduler");
    let body = example("filter-node-names.json");
    let (status, _) = post(&setup, Some(&mine), "/scheduler/filter", body.clone())
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    let (status, _) = post(&setup, Some(&creds.scheduler), "/scheduler/filter", body)
        .await
        .unwrap();
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "the default name is replaced"
    );
}

#[tokio::test]
async fn the_webhooks_can_require_the_api_servers_certificate() {
    let setup = serve(&["--admission-client-name", "kube-apiserver-webhook"]);
    let creds = scheduler_credentials();
    let apiserver = creds.ca.client_pair("kube-apiserver-webhook");
    let review = example("admit-create-named-class.json");
    for path in [
        "/admission/priority",
        "/admission/podgroup-priority",
        "/admission/podgroup-priority-and-policy",
        "/admission/priorityclass",
    ] {
        let (status, body) = post(&setup, None, path, review.clone()).await.unwrap();
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}: {body}");
    }
    let (status, _) = post(
        &setup,
        Some(&creds.scheduler),
        "/admission/priority",
        review.clone(),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = post(&setup, Some(&apiserver), "/admission/priority", review)
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn the_bind_verb_can_be_switched_off() {
    let setup = serve(&["--disable-bind-verb"]);
    let scheduler = &scheduler_credentials().scheduler;
    let (status, _) = post(
        &setup,
        Some(scheduler),
        "/scheduler/bind",
        body_of(VERBS[3].1),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = post(
        &setup,
        Some(scheduler),
        "/scheduler/filter",
        example("filter-node-names.json"),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn the_insecure_flag_serves_the_verbs_to_anyone_and_says_so() {
    let setup = serve(&["--insecure-unauthenticated-extender"]);
    let (status, _) = post(
        &setup,
        None,
        "/scheduler/filter",
        example("filter-node-names.json"),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK);
    let log = setup.server.log();
    assert!(
        log.contains("WARN") && log.contains("--insecure-unauthenticated-extender"),
        "{log}"
    );
}

#[test]
fn serve_without_client_ca_or_the_insecure_flag_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let state = common::empty_state_file(dir.path());
    // Not common::run: it would add the test harness's client CA.
    let out = std::process::Command::new(common::BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--cluster-state"])
        .arg(&state)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--client-ca") && stderr.contains("--insecure-unauthenticated-extender"),
        "{stderr}"
    );
}
