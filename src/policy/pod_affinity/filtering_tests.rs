//! Filter tables, ported from upstream filtering_test.go situations.

use super::test_support::*;
use super::*;
use crate::policy::Code;

#[test]
fn anti_affinity_blocks_the_domain_of_a_matching_pod_and_names_it() {
    let s = snapshot(
        vec![
            node("n1", &[(HOSTNAME, "n1")]),
            node("n2", &[(HOSTNAME, "n2")]),
        ],
        vec![
            pod("shop", "web-1")
                .labels(&[("app", "web")])
                .on("n1")
                .build(),
        ],
        vec![],
    );
    let incoming = pod("shop", "web-2")
        .labels(&[("app", "web")])
        .required_anti_affinity(term("app", "In", &["web"], HOSTNAME))
        .build();
    let f = prepare_filter(&s, &incoming).unwrap().unwrap();
    let err = f.filter(&node("n1", &[(HOSTNAME, "n1")])).unwrap_err();
    assert_eq!(err.code, Code::Unschedulable);
    assert_eq!(
        err.reason,
        "node(s) didn't match pod anti-affinity rules: pod shop/web-1 (app in (web)) in kubernetes.io/hostname=n1"
    );
    assert!(f.filter(&node("n2", &[(HOSTNAME, "n2")])).is_ok());
}

#[test]
fn terminal_pods_do_not_count_but_terminating_pods_do() {
    let nodes = || vec![node("n1", &[(HOSTNAME, "n1")])];
    let incoming = pod("ns", "new")
        .required_anti_affinity(term("app", "In", &["web"], HOSTNAME))
        .build();
    let done = pod("ns", "done")
        .labels(&[("app", "web")])
        .on("n1")
        .phase("Succeeded");
    let s = snapshot(nodes(), vec![done.build()], vec![]);
    let f = prepare_filter(&s, &incoming).unwrap().unwrap();
    assert!(f.filter(&nodes()[0]).is_ok());

    let leaving = pod("ns", "leaving")
        .labels(&[("app", "web")])
        .on("n1")
        .terminating();
    let s = snapshot(nodes(), vec![leaving.build()], vec![]);
    let f = prepare_filter(&s, &incoming).unwrap().unwrap();
    assert!(f.filter(&nodes()[0]).is_err());
}

#[test]
fn namespace_selector_is_resolved_against_namespace_labels() {
    let n1 = node("n1", &[(REGION, "r1")]);
    let s = snapshot(
        vec![n1.clone()],
        vec![
            pod("team-a", "db")
                .labels(&[("app", "db")])
                .on("n1")
                .build(),
        ],
        vec![
            namespace("team-a", &[("team", "a")]),
            namespace("team-b", &[]),
        ],
    );
    let with_ns_selector = |sel: serde_json::Value| {
        pod("team-b", "web")
            .required_affinity(term_json(serde_json::json!({
                "labelSelector": {"matchLabels": {"app": "db"}},
                "namespaceSelector": sel,
                "topologyKey": REGION,
            })))
            .build()
    };
    let f = prepare_filter(
        &s,
        &with_ns_selector(serde_json::json!({"matchLabels": {"team": "a"}})),
    );
    assert!(f.unwrap().unwrap().filter(&n1).is_ok());
    let f = prepare_filter(
        &s,
        &with_ns_selector(serde_json::json!({"matchLabels": {"team": "b"}})),
    );
    let err = f.unwrap().unwrap().filter(&n1).unwrap_err();
    assert_eq!(err.code, Code::UnschedulableAndUnresolvable);
}
