//! SIGTERM/SIGINT: stop accepting, let in-flight requests finish, exit 0.

mod common;

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::routing::post;
use common::{Launch, Spawned, TestCa, client, eventually, install_provider};
use futures::StreamExt;
use kube_arbiter::api::AppState;
use kube_arbiter::cluster::{ClusterView, Snapshot};
use kube_arbiter::config::Config;
use kube_arbiter::server::tls::{CertKeyFiles, TlsSettings};
use kube_arbiter::server::{Routes, ServeOptions, Server, router};
use tokio::sync::{mpsc, oneshot};

#[tokio::test]
async fn sigterm_with_an_open_connection_exits_0() {
    let mut arbiter = Launch::empty().start();
    let response = arbiter
        .client
        .get(arbiter.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let server = &mut arbiter.process;

    server.sigterm();
    let status = server.wait().await;
    assert_eq!(status.code(), Some(0), "{}", server.log());
    assert!(server.log().contains("shut down cleanly"));
}

/// A large cluster file can take seconds to load; SIGTERM meanwhile ends
/// the process at once with exit 0. A FIFO nobody writes to stands for a
/// file whose load never finishes.
#[tokio::test]
async fn sigterm_while_the_cluster_state_is_loading_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("cluster.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (mut server, _) = Spawned::until(
        &[
            "--listen",
            "127.0.0.1:0",
            "--cluster-state",
            fifo.to_str().unwrap(),
        ],
        "info",
        "loading the cluster state",
    );
    server.sigterm();
    let status = server.wait().await;
    let log = server.log();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(
        log.contains("stopped before the cluster view was loaded"),
        "{log}"
    );
}

/// The built binary: a filter request whose body is still arriving when
/// SIGTERM comes gets its full answer, new connections are refused
/// meanwhile, and the process exits 0 once the answer is sent.
#[tokio::test]
async fn sigterm_finishes_a_filter_request_in_flight_and_exits_0() {
    let cluster = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/extender-cluster.json"
    );
    // tower_http at debug logs when a request reaches the router.
    let mut arbiter = Launch::file(cluster)
        .log(Some("info,tower_http=debug"))
        .start();
    let request = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/filter-web-node-names.json"
    ))
    .unwrap();
    let (head, tail) = request.split_at(request.len() / 2);
    let (head, tail) = (Bytes::copy_from_slice(head), Bytes::copy_from_slice(tail));

    // The second half waits until the server has the request open.
    let (rest_tx, rest_rx) = oneshot::channel::<()>();
    let body = futures::stream::once(async move { Ok::<_, std::io::Error>(head) }).chain(
        futures::stream::once(async move {
            let _ = rest_rx.await;
            Ok(tail)
        }),
    );
    let filter = arbiter.client.clone();
    let url = arbiter.url("/scheduler/filter");
    let server = &mut arbiter.process;
    let in_flight = tokio::spawn(async move {
        filter
            .post(url)
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(body))
            .send()
            .await
    });
    eventually("the server to start the filter request", || async {
        server
            .log()
            .lines()
            .any(|l| l.contains("started processing request") && l.contains("/scheduler/filter"))
            .then_some(())
    })
    .await;

    server.sigterm();
    let addr = server.addr;
    listener_closed(addr).await;
    assert!(server.is_running(), "the request is still open");

    rest_tx.send(()).unwrap();
    let response = in_flight.await.unwrap().unwrap();
    assert_eq!(response.status(), 200);
    let answer: serde_json::Value = response.json().await.unwrap();
    assert_eq!(answer["Error"], "");
    assert_eq!(
        answer["NodeNames"],
        serde_json::json!(["node-c1", "node-c2"])
    );
    let status = server.wait().await;
    assert_eq!(status.code(), Some(0), "{}", server.log());
    assert!(server.log().contains("shut down cleanly"));
}

/// Reads an upload frame by frame, saying when the first one arrived.
async fn upload(started: mpsc::Sender<()>, body: Body) -> String {
    let mut stream = body.into_data_stream();
    let mut total = 0;
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            return "broken".into();
        };
        if total == 0 {
            let _ = started.send(()).await;
        }
        total += chunk.len();
    }
    let thread = std::thread::current();
    format!(
        "{total} on {}",
        thread.name().unwrap_or("an unnamed thread")
    )
}

/// The drain itself, in-process with an upload route that sees each body
/// frame arrive: shutdown is triggered while the request body is
/// still arriving, the request completes, then `run` returns Ok. The
/// connections are served on a requests runtime of their own, as the
/// binary serves them, and the drain reaches across.
#[tokio::test]
async fn shutdown_lets_an_upload_in_flight_finish() {
    install_provider();
    let requests = kube_arbiter::server::requests_runtime().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("ca");
    let (cert, key) = ca.server_pair(&["localhost"]).write(dir.path());
    let view = Arc::new(ClusterView::new());
    view.publish(Snapshot::default());
    let state = AppState::new(view, Config::default());
    let options = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        metrics_listen: None,
        tls: TlsSettings {
            cert_key: Some(CertKeyFiles { cert, key }),
            client_ca: None,
        },
        requests_on: Some(requests.handle().clone()),
    };
    let server = Server::bind(&options, &state).unwrap();
    let addr = server.local_addr().unwrap();
    let (started_tx, mut started) = mpsc::channel(1);
    let app = router(state.clone(), Routes::default()).route(
        "/upload",
        post(move |body: Body| upload(started_tx.clone(), body)),
    );
    let (stop, stop_rx) = oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(app, state, async {
        let _ = stop_rx.await;
    }));

    let (rest_tx, rest_rx) = oneshot::channel::<()>();
    let body =
        futures::stream::once(async { Ok::<_, std::io::Error>(Bytes::from_static(b"first ")) })
            .chain(futures::stream::once(async {
                let _ = rest_rx.await;
                Ok(Bytes::from_static(b"and the rest"))
            }));
    let url = format!("https://localhost:{}/upload", addr.port());
    let uploader = client(&ca.cert_pem, addr).build().unwrap();
    let in_flight = tokio::spawn(async move {
        uploader
            .post(url)
            .body(reqwest::Body::wrap_stream(body))
            .send()
            .await
    });
    started.recv().await.unwrap();

    stop.send(()).unwrap();
    // New connections are refused while the upload is still open.
    listener_closed(addr).await;
    assert!(!serving.is_finished());

    rest_tx.send(()).unwrap();
    let response = in_flight.await.unwrap().unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "18 on https-worker");
    serving.await.unwrap().unwrap();
    requests.shutdown_background();
}

/// Returns once nothing accepts connections on `addr` any more.
async fn listener_closed(addr: std::net::SocketAddr) {
    eventually("the listener to close", || async {
        tokio::net::TcpStream::connect(addr)
            .await
            .is_err()
            .then_some(())
    })
    .await;
}
