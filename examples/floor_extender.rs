//! The protocol floor of an extender verb: kube-arbiter's own server (TLS,
//! HTTP, the scheduler routes' guard, body limit and middleware, the body
//! read whole as the verbs read it) answering every `POST /scheduler/*`
//! with one fixed answer, decided by nothing. Against the same request
//! body and an answer of the same bytes as kube-arbiter's, its latency is
//! what any extender pays for the call on this stack; kube-arbiter's
//! latency above it is its decision (scripts/load-extender.sh, `floor`).
//!
//! cargo run --release --example floor_extender -- LISTEN ANSWER.json
//!
//! Serves until SIGTERM or Ctrl-C. Loopback measurement only: the verbs
//! are open to any caller, as with `--insecure-unauthenticated-extender`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::post;
use kube_arbiter::api::AppState;
use kube_arbiter::cluster::ClusterView;
use kube_arbiter::config::Config;
use kube_arbiter::server::access::{AccessRules, Callers};
use kube_arbiter::server::tls::{self, TlsSettings};
use kube_arbiter::server::{self, Routes, ServeOptions, WholeBody};

// The server's allocator and options: a large body is one large
// allocation, and the system allocator maps one over 32 MB afresh (and
// faults in its pages) on every request, which kube-arbiter does not.
kube_arbiter::serving_allocator!();

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [listen, answer] = args.as_slice() else {
        eprintln!("usage: floor_extender LISTEN ANSWER.json");
        return ExitCode::from(2);
    };
    let listen: SocketAddr = match listen.parse() {
        Ok(listen) => listen,
        Err(e) => {
            eprintln!("floor_extender: LISTEN {listen:?}: {e}");
            return ExitCode::from(2);
        }
    };
    let answer = match std::fs::read(answer) {
        Ok(bytes) => Bytes::from(bytes),
        Err(e) => {
            eprintln!("floor_extender: cannot read {answer}: {e}");
            return ExitCode::from(2);
        }
    };
    tls::install_crypto_provider();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("floor_extender: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let requests = match server::requests_runtime() {
        Ok(requests) => requests,
        Err(e) => {
            eprintln!("floor_extender: cannot start the requests' runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(async {
        let shutdown = server::termination_signal()?;
        let state = AppState::new(Arc::new(ClusterView::new()), Config::default()).with_access(
            AccessRules {
                scheduler: Callers::Anyone,
                admission: Callers::Anyone,
            },
        );
        // The body is read whole, as the verbs read it, and not looked at.
        let canned = move |WholeBody(_): WholeBody| {
            let answer = answer.clone();
            async move { ([(CONTENT_TYPE, "application/json")], answer).into_response() }
        };
        let routes = Routes {
            scheduler: Router::new().route("/scheduler/{verb}", post(canned)),
            admission: Router::new(),
            people: Router::new(),
        };
        let options = ServeOptions {
            listen,
            metrics_listen: None,
            tls: TlsSettings {
                cert_key: None,
                client_ca: None,
            },
            // The connections on a runtime of their own, as kube-arbiter
            // serves them, so the floor pays what the server pays.
            requests_on: Some(requests.handle().clone()),
        };
        server::serve(state, routes, options, shutdown)
            .await
            .map_err(std::io::Error::other)
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("floor_extender: {e}");
            ExitCode::FAILURE
        }
    }
}
