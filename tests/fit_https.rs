//! `POST /debug/fit` over real HTTPS against the built server and the
//! demo cluster file: a manifest as YAML and as JSON, `?replicas` and
//! `?preempt`, the table for `Accept: text/plain`, and bad bodies. The
//! answer is the CLI's for the same files.

mod common;

use serde_json::{Value, json};

use common::{Arbiter, Launch};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo-cluster.yaml");
const SEARCH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/workloads/search.yaml"
);

async fn post(server: &Arbiter, query: &str, accept: &str, body: Vec<u8>) -> (u16, String) {
    let response = server
        .client
        .post(server.url(&format!("/debug/fit{query}")))
        .header("accept", accept)
        .header("content-type", "application/yaml")
        .body(body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

fn parse(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[tokio::test]
async fn a_manifest_is_placed_on_the_servers_view_as_the_cli_places_it() {
    let server = Launch::file(DEMO).start();
    let manifest = std::fs::read(SEARCH).unwrap();
    let (status, body) = post(&server, "?replicas=9", "*/*", manifest.clone()).await;
    assert_eq!(status, 200, "{body}");
    let served = parse(&body);
    assert_eq!(
        (&served["placed"], &served["unplaced"]),
        (&json!(8), &json!(1))
    );

    let cli = common::run(&[
        "fit",
        "--cluster-state",
        DEMO,
        "--replicas",
        "9",
        "-o",
        "json",
        SEARCH,
    ]);
    let from_cli: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(served, from_cli, "the same answer both ways");

    let as_json: Value = serde_saphyr::from_str(std::str::from_utf8(&manifest).unwrap()).unwrap();
    let (status, body) = post(
        &server,
        "?preempt=false",
        "*/*",
        serde_json::to_vec(&as_json).unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let v = parse(&body);
    assert_eq!((&v["placed"], &v["preempt"]), (&json!(6), &json!(false)));
}

#[tokio::test]
async fn accept_text_plain_gets_the_table() {
    let server = Launch::file(DEMO).start();
    let (status, table) = post(&server, "", "text/plain", std::fs::read(SEARCH).unwrap()).await;
    assert_eq!(status, 200, "{table}");
    assert!(
        table.starts_with("Deployment shop/search: 6 of 6 replicas fit;"),
        "{table}"
    );
}

#[tokio::test]
async fn bad_bodies_and_parameters_are_400s_that_say_why() {
    let server = Launch::file(DEMO).start();
    let unknown_class =
        b"kind: Pod\nmetadata: {name: p, namespace: shop}\nspec: {priorityClassName: nope}\n";
    let cases: [(&str, &str, &[u8], &str); 5] = [
        (
            "not a workload",
            "",
            b"kind: Service\nmetadata: {name: s}\n",
            "the manifest has kind Service",
        ),
        ("not YAML", "", b"{not json", "not a JSON manifest"),
        (
            "unknown class",
            "",
            unknown_class,
            "no PriorityClass with name nope was found",
        ),
        (
            "replicas not a count",
            "?replicas=-2",
            b"kind: Pod\nmetadata: {name: p}\n",
            "replicas",
        ),
        (
            "too many replicas",
            "?replicas=2001",
            b"kind: Pod\nmetadata: {name: p}\n",
            "places at most 2000",
        ),
    ];
    for (name, query, body, want) in cases {
        let (status, text) = post(&server, query, "*/*", body.to_vec()).await;
        assert_eq!(status, 400, "{name}: {text}");
        assert!(text.contains(want), "{name}: {text}");
    }
}
