//! Property tests of the permissive filter next to kube-scheduler's in-tree
//! plugins (docs/burst-safety.md): for random views and random pods in
//! flight, each with the nodes it may be on, the answer with
//! `PodFilters::admit_in_flight` keeps every node that the exact answer
//! keeps for ANY placement of those pods (each on one of its nodes, or on
//! none: kube-scheduler gave up on it). With a single rule it keeps no
//! other node: a node no placement admits is still rejected.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;

use kube_arbiter::cluster::{CandidateNodes, ClusterObjects, InFlightPod, NodeIdx, Snapshot};
use kube_arbiter::config::SchedulingSettings;
use kube_arbiter::model::{Node, Pod};
use kube_arbiter::policy::filter::PodFilters;
use kube_arbiter::testing::{label_term, make_node, make_pod};

const HOST: &str = "kubernetes.io/hostname";
const ZONE: &str = "zone";

/// Node `i` in zone `zone` (none: no zone label).
fn node(i: usize, zone: Option<u8>) -> Node {
    let node = make_node(&format!("n{i}")).hostname();
    match zone {
        Some(z) => node.label(ZONE, &format!("z{z}")).obj(),
        None => node.obj(),
    }
}

/// One of two apps; a pod of app 0 may carry anti-affinity to app 0 per
/// host (the existing pods' terms against the incoming pod).
fn pod(name: &str, node: &str, app: u8, anti: bool) -> Pod {
    let pod = make_pod("ns", name)
        .uid(&format!("uid-{name}"))
        .label("app", &format!("a{app}"))
        .node(node);
    let pod = match anti {
        true => pod.required_anti_affinity(label_term(&[("app", "a0")], HOST)),
        false => pod,
    };
    pod.obj()
}

fn key(zone: bool) -> &'static str {
    if zone { ZONE } else { HOST }
}

/// The incoming pod's rules, each optional.
#[derive(Debug, Clone)]
struct Rules {
    app: u8,
    /// (zone key?, maxSkew, minDomains)
    spread: Option<(bool, i32, Option<i32>)>,
    /// (zone key?, app)
    affinity: Option<(bool, u8)>,
    /// (zone key?, app)
    anti_affinity: Option<(bool, u8)>,
}

impl Rules {
    fn pod(&self) -> Pod {
        let mut pod = make_pod("ns", "incoming")
            .uid("uid-incoming")
            .label("app", &format!("a{}", self.app));
        if let Some((zone, max_skew, min_domains)) = self.spread {
            let mut c = json!({"maxSkew": max_skew, "topologyKey": key(zone),
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "a0"}}});
            if let Some(m) = min_domains {
                c["minDomains"] = json!(m);
            }
            pod = pod.spec("topologySpreadConstraints", json!([c]));
        }
        let term = |(zone, app): (bool, u8)| label_term(&[("app", &format!("a{app}"))], key(zone));
        pod = pod.spec("affinity", json!({}));
        if let Some(a) = self.affinity {
            pod = pod.required_affinity(term(a));
        }
        if let Some(a) = self.anti_affinity {
            pod = pod.required_anti_affinity(term(a));
        }
        pod.obj()
    }
}

fn rules() -> impl Strategy<Value = Rules> {
    (
        0u8..2,
        prop::option::of((any::<bool>(), 1i32..3, prop::option::of(1i32..4))),
        prop::option::of((any::<bool>(), 0u8..2)),
        prop::option::of((any::<bool>(), 0u8..2)),
    )
        .prop_map(|(app, spread, affinity, anti_affinity)| Rules {
            app,
            spread,
            affinity,
            anti_affinity,
        })
}

/// Exactly one rule: spread (most often: its minimum is the subtle part),
/// required affinity or required anti-affinity.
fn single_rule() -> impl Strategy<Value = Rules> {
    let spread = (any::<bool>(), 1i32..3, prop::option::of(1i32..4));
    let term = (any::<bool>(), 0u8..2);
    (0u8..2, 0u8..4, spread, term).prop_map(|(app, which, spread, term)| Rules {
        app,
        spread: (which < 2).then_some(spread),
        affinity: (which == 2).then_some(term),
        anti_affinity: (which == 3).then_some(term),
    })
}

/// A pod in flight: its app, anti-affinity, and the nodes it may be on.
#[derive(Debug, Clone)]
struct Flying {
    app: u8,
    anti: bool,
    candidates: Vec<usize>,
}

fn flying(nodes: usize) -> impl Strategy<Value = Flying> {
    (
        0u8..2,
        prop::bool::weighted(0.2),
        prop::collection::btree_set(0..nodes, 1..4),
    )
        .prop_map(|(app, anti, c)| Flying {
            app,
            anti,
            candidates: c.into_iter().collect(),
        })
}

/// Nodes (zone or none), bound pods (node, app, anti), pods in flight.
type Cluster = (Vec<Option<u8>>, Vec<(usize, u8, bool)>, Vec<Flying>);

fn cluster() -> impl Strategy<Value = Cluster> {
    prop::collection::vec(prop::option::weighted(0.9, 0u8..3), 2..7).prop_flat_map(|zones| {
        let n = zones.len();
        (
            Just(zones),
            prop::collection::vec((0..n, 0u8..2, prop::bool::weighted(0.2)), 0..8),
            prop::collection::vec(flying(n), 1..4),
        )
    })
}

/// The view with the pods in flight at `placement` (`None`: unbound).
fn view(
    zones: &[Option<u8>],
    bound: &[(usize, u8, bool)],
    flying: &[Flying],
    placement: &[Option<usize>],
) -> Snapshot {
    let mut pods: Vec<Pod> = bound
        .iter()
        .enumerate()
        .map(|(i, &(n, app, anti))| pod(&format!("b{i}"), &format!("n{n}"), app, anti))
        .collect();
    for (i, (f, at)) in flying.iter().zip(placement).enumerate() {
        let node = at.map(|n| format!("n{n}")).unwrap_or_default();
        pods.push(pod(&format!("f{i}"), &node, f.app, f.anti));
    }
    Snapshot::build(ClusterObjects {
        nodes: zones.iter().enumerate().map(|(i, z)| node(i, *z)).collect(),
        pods,
        ..Default::default()
    })
}

fn passing(filters: &PodFilters, s: &Snapshot) -> Vec<bool> {
    s.nodes()
        .iter()
        .map(|n| filters.check(&n.node).is_ok())
        .collect()
}

/// Every placement: each pod in flight on one of its nodes or on none.
fn placements(flying: &[Flying]) -> Vec<Vec<Option<usize>>> {
    let mut all = vec![Vec::new()];
    for f in flying {
        let options: Vec<Option<usize>> = std::iter::once(None)
            .chain(f.candidates.iter().map(|&c| Some(c)))
            .collect();
        all = all
            .into_iter()
            .flat_map(|p| {
                options.iter().map(move |o| {
                    let mut p = p.clone();
                    p.push(*o);
                    p
                })
            })
            .collect();
    }
    all
}

/// Per node: (the permissive answer, whether some placement admits it).
/// Fails when a placement admits a node the permissive answer rejects.
fn judge(
    (zones, bound, flying): &Cluster,
    rules: &Rules,
) -> Result<(Vec<bool>, Vec<bool>), TestCaseError> {
    let incoming = rules.pod();
    let settings = SchedulingSettings::default();
    let unplaced = vec![None; flying.len()];
    let s = view(zones, bound, flying, &unplaced);
    let mut permissive = PodFilters::prepare(&s, &incoming, &settings).unwrap();
    let in_flight: Vec<InFlightPod> = flying
        .iter()
        .enumerate()
        .map(|(i, f)| InFlightPod {
            pod: Arc::clone(&s.pod("ns", &format!("f{i}")).unwrap().pod),
            candidates: CandidateNodes::new(
                &s,
                f.candidates.iter().map(|&c| c as NodeIdx).collect(),
            ),
        })
        .collect();
    permissive.admit_in_flight(&s, &in_flight);
    let permissive = passing(&permissive, &s);
    let mut some_placement = vec![false; zones.len()];
    for placement in placements(flying) {
        let placed = view(zones, bound, flying, &placement);
        let exact = PodFilters::prepare(&placed, &incoming, &settings).unwrap();
        for (n, ok) in passing(&exact, &placed).into_iter().enumerate() {
            prop_assert!(
                !ok || permissive[n],
                "n{} passes with the pods in flight at {:?} but the permissive answer rejects it",
                n,
                placement
            );
            some_placement[n] |= ok;
        }
    }
    Ok((permissive, some_placement))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn the_permissive_answer_keeps_every_node_some_placement_admits(
        cluster in cluster(),
        rules in rules(),
    ) {
        judge(&cluster, &rules)?;
    }

    /// Pods in flight without terms of their own, and one rule of the
    /// incoming pod: the permissive answer is exactly the union over
    /// placements (with several rules it may keep a node that needs one
    /// placement for one rule and another for the next).
    #[test]
    fn with_one_rule_it_rejects_every_node_no_placement_admits(
        cluster in cluster(),
        rules in single_rule(),
    ) {
        let (zones, bound, mut flying) = cluster;
        for f in &mut flying {
            f.anti = false;
        }
        let (permissive, some_placement) = judge(&(zones, bound, flying), &rules)?;
        prop_assert_eq!(permissive, some_placement);
    }
}
