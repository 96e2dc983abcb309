//! Health, readiness and metrics as kubelet and Prometheus see them.

mod common;

use std::net::SocketAddr;

use common::{Launch, eventually, metric};

#[tokio::test]
async fn metrics_report_the_view_and_the_certificate_expiry() {
    let server = Launch::empty().start();
    let text = server.text("/metrics").await;
    assert_eq!(
        metric(&text, "kube_arbiter_view_ready"),
        Some(1.0),
        "{text}"
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let not_after = metric(&text, "kube_arbiter_tls_cert_not_after_seconds").unwrap();
    assert!(not_after > now, "{text}");
}

#[tokio::test]
async fn metrics_listen_serves_probes_over_plain_http() {
    let server = Launch::empty()
        .args(&["--metrics-listen", "127.0.0.1:0"])
        .start();
    let addr: SocketAddr = eventually("the metrics listener", || async {
        let log = server.log();
        let rest = log.split("serving metrics and probes on http://").nth(1)?;
        rest.lines().next()?.trim().parse().ok()
    })
    .await;
    let http = reqwest::Client::new();
    for path in ["/healthz", "/readyz", "/metrics"] {
        let response = http
            .get(format!("http://{addr}{path}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    let response = http
        .get(format!("http://{addr}/scheduler/filter"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(body["error"].is_string());
}
