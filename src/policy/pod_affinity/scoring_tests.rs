//! Score tables, ported from upstream scoring_test.go situations.

use super::test_support::*;
use super::*;

#[test]
fn normalize_spreads_between_min_and_max() {
    assert_eq!(normalize(&[-5, 0, 5]), vec![0, 50, 100]);
    assert_eq!(normalize(&[3, 3]), vec![0, 0]);
    assert!(normalize(&[]).is_empty());
}

#[test]
fn preferred_affinity_prefers_the_domain_of_a_matching_pod() {
    let s = snapshot(
        vec![node("n1", &[(ZONE, "a")]), node("n2", &[(ZONE, "b")])],
        vec![pod("ns", "db").labels(&[("app", "db")]).on("n1").build()],
        vec![],
    );
    let incoming = pod("ns", "web")
        .preferred_affinity(5, term("app", "In", &["db"], ZONE))
        .build();
    let sc = prepare_score(&s, &incoming, 1).unwrap().unwrap();
    assert_eq!(sc.score(&node("n1", &[(ZONE, "a")])), 5);
    assert_eq!(sc.score(&node("n2", &[(ZONE, "b")])), 0);
}

#[test]
fn preferred_anti_affinity_subtracts_its_weight() {
    let s = snapshot(
        vec![node("n1", &[(ZONE, "a")]), node("n2", &[(ZONE, "b")])],
        vec![pod("ns", "db").labels(&[("app", "db")]).on("n1").build()],
        vec![],
    );
    let incoming = pod("ns", "web")
        .preferred_anti_affinity(3, term("app", "In", &["db"], ZONE))
        .build();
    let sc = prepare_score(&s, &incoming, 1).unwrap().unwrap();
    assert_eq!(sc.score(&node("n1", &[(ZONE, "a")])), -3);
    assert_eq!(sc.score(&node("n2", &[(ZONE, "b")])), 0);
}
