//! The index against a full scan, and an index carried across random
//! edits against one built from scratch.

use super::*;
use crate::cluster::{ClusterObjects, PodChange, Snapshot};
use crate::model::Pod;
use crate::testing::make_pod;

/// `p<i>`, labelled app `a<i mod 7>` and tier web (even) or db (odd).
fn pod(ns: &str, i: usize) -> Pod {
    let tier = if i.is_multiple_of(2) { "web" } else { "db" };
    make_pod(ns, &format!("p{i}"))
        .label("app", &format!("a{}", i % 7))
        .label("tier", tier)
        .obj()
}

fn selector(v: serde_json::Value) -> LabelSelector {
    serde_json::from_value(v).unwrap()
}

/// The names the index offers that the selector selects, and the names
/// a full scan selects.
fn both(s: &Snapshot, ns: &str, sel: &LabelSelector) -> (Vec<String>, Vec<String>) {
    let pick = |it: &mut dyn Iterator<Item = &PodRef>| -> Vec<String> {
        it.filter(|r| sel.matches(&r.pod.metadata.labels))
            .map(|r| r.pod.metadata.name.clone())
            .collect()
    };
    (
        pick(&mut s.pods_maybe_selected(ns, sel)),
        pick(&mut s.pods_in_namespace(ns).iter()),
    )
}

#[test]
fn candidates_hold_every_selected_pod_for_each_selector_shape() {
    let s = Snapshot::build(ClusterObjects {
        pods: (0..200)
            .map(|i| pod("big", i))
            .chain((0..5).map(|i| pod("small", i)))
            .collect(),
        ..Default::default()
    });
    let shapes = [
        serde_json::json!({"matchLabels": {"app": "a3"}}),
        serde_json::json!({"matchLabels": {"app": "a3", "tier": "db"}}),
        serde_json::json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a1"]}]}),
        serde_json::json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a1", "a2"]}]}),
        serde_json::json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a1"]}]}),
        serde_json::json!({"matchLabels": {"app": "nope"}}),
        serde_json::json!({"matchLabels": {"app": "a3"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}),
        serde_json::json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]},
            {"key": "app", "operator": "Exists"}]}),
        serde_json::json!({}),
    ];
    for shape in shapes {
        let sel = selector(shape.clone());
        for ns in ["big", "small", "none"] {
            let (indexed, scanned) = both(&s, ns, &sel);
            assert_eq!(indexed, scanned, "{ns} {shape}");
            // pods_selected trusts the index alone for a one-equality
            // selector and checks the selector otherwise.
            let selected: Vec<String> = s
                .pods_selected(ns, &sel)
                .map(|r| r.pod.metadata.name.clone())
                .collect();
            assert_eq!(selected, scanned, "pods_selected {ns} {shape}");
        }
    }
    let narrow = selector(serde_json::json!({"matchLabels": {"app": "a3", "tier": "db"}}));
    let offered = s.pods_maybe_selected("big", &narrow).count();
    assert!(
        offered < 40,
        "the app posting list, not the namespace: {offered}"
    );
}

#[test]
fn a_changed_namespace_is_reindexed_and_old_snapshots_keep_their_answers() {
    let s1 = Snapshot::build(ClusterObjects {
        pods: (0..100).map(|i| pod("big", i)).collect(),
        ..Default::default()
    });
    let sel = selector(serde_json::json!({"matchLabels": {"app": "a0"}}));
    assert_eq!(both(&s1, "big", &sel).0.len(), 15);
    let mut moved = pod("big", 1);
    moved.metadata.labels.insert("app".into(), "a0".into());
    let s2 = s1.with_pod_changes(&[
        PodChange::upsert(Arc::new(moved)),
        PodChange::delete("big", "p7"),
    ]);
    let (indexed, scanned) = both(&s2, "big", &sel);
    assert_eq!(indexed, scanned);
    assert_eq!(indexed.len(), 15, "p1 joined, p7 left");
    let (old, old_scan) = both(&s1, "big", &sel);
    assert_eq!(
        old, old_scan,
        "the older snapshot still answers from its own list"
    );
}

mod carried_across_edits {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    const KEYS: [&str; 3] = ["app", "tier", "rare"];
    const NAMESPACES: [&str; 2] = ["big", "small"];

    /// A pod's labels: for each key, a value out of three or none.
    type LabelChoice = [Option<u8>; 3];

    #[derive(Debug, Clone)]
    enum Op {
        Upsert(usize, usize, LabelChoice, bool),
        Delete(usize, usize),
    }

    fn labelled(ns: usize, name: usize, labels: LabelChoice, finished: bool) -> Pod {
        let mut p = make_pod(NAMESPACES[ns], &format!("p{name}")).uid(&format!("{ns}-{name}"));
        for (key, v) in KEYS.iter().zip(labels) {
            if let Some(v) = v {
                p = p.label(key, &format!("v{v}"));
            }
        }
        if finished {
            p = p.phase("Succeeded");
        }
        p.obj()
    }

    fn labels() -> impl Strategy<Value = LabelChoice> {
        [
            proptest::option::weighted(0.9, 0..3u8),
            proptest::option::weighted(0.6, 0..3u8),
            proptest::option::weighted(0.1, 0..3u8),
        ]
    }

    /// Names run past the initial pods, so upserts both replace and append.
    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..2usize, 0..100usize, labels(), proptest::bool::weighted(0.1))
                .prop_map(|(ns, n, l, f)| Op::Upsert(ns, n, l, f)),
            2 => (0..2usize, 0..100usize).prop_map(|(ns, n)| Op::Delete(ns, n)),
        ]
    }

    fn change(op: &Op) -> PodChange {
        match op {
            Op::Upsert(ns, n, l, f) => PodChange::upsert(Arc::new(labelled(*ns, *n, *l, *f))),
            Op::Delete(ns, n) => PodChange::delete(NAMESPACES[*ns], &format!("p{n}")),
        }
    }

    fn comparable(p: &Postings) -> BTreeMap<String, Vec<u32>> {
        p.iter().map(|(v, l)| (v.clone(), l.to_vec())).collect()
    }

    fn built_keys(s: &Snapshot, ns: &str) -> Vec<String> {
        let Some(p) = s.pods_by_namespace.get(ns) else {
            return Vec::new();
        };
        let by_key = p.labels.by_key.lock().unwrap();
        let mut keys: Vec<String> = by_key.keys().cloned().collect();
        keys.sort();
        keys
    }

    fn build_every_key(s: &Snapshot) {
        for p in s.pods_by_namespace.values() {
            for key in KEYS {
                p.labels.postings(key, &p.pods);
            }
        }
    }

    proptest! {
        #[test]
        fn a_carried_index_equals_one_built_from_scratch(
            initial in proptest::collection::vec((0..2usize, labels()), 0..90),
            batches in proptest::collection::vec(proptest::collection::vec(op(), 1..6), 1..8),
        ) {
            let mut s = Snapshot::build(ClusterObjects {
                pods: initial.iter().enumerate().map(|(i, (ns, l))| labelled(*ns, i, *l, false)).collect(),
                ..Default::default()
            });
            build_every_key(&s);
            for batch in &batches {
                let changes: Vec<PodChange> = batch.iter().map(change).collect();
                let next = s.with_pod_changes(&changes);
                for ns in NAMESPACES {
                    let Some(p) = next.pods_by_namespace.get(ns) else { continue };
                    if s.pods_by_namespace.contains_key(ns) {
                        prop_assert_eq!(built_keys(&next, ns), built_keys(&s, ns), "{} keys carried", ns);
                    }
                    let by_key = p.labels.by_key.lock().unwrap();
                    for (key, carried) in by_key.iter() {
                        prop_assert_eq!(
                            comparable(carried),
                            comparable(&build_postings(key, &p.pods)),
                            "{} {}", ns, key
                        );
                    }
                }
                for key in KEYS {
                    let sel = selector(serde_json::json!({"matchLabels": {key: "v1"}}));
                    for ns in NAMESPACES {
                        let (indexed, scanned) = both(&next, ns, &sel);
                        prop_assert_eq!(indexed, scanned, "{} {}", ns, key);
                    }
                }
                build_every_key(&next);
                s = next;
            }
        }
    }
}
