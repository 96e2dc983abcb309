//! `POST /scheduler/preempt`: kube-scheduler's extender preempt verb.
//!
//! The request names candidate nodes with kube-scheduler's own victims
//! (full pods, or UIDs only with nodeCacheCapable); we treat them only as
//! the list of nodes and recompute the victims on each from our view. The
//! answer is always `NodeNameToMetaVictims` with the nodes where preemption
//! helps, victims most important first — or only the best node with
//! `preemption.answer: best`. What kube-scheduler accepts back (victims
//! without a UID, empty lists) is decided per node by [`answerable`]
//! (docs/preemption-contract.md).

use std::borrow::Cow;
use std::convert::Infallible;
use std::time::Instant;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use jiff::Timestamp;

use super::json_bytes;
use super::preempt_unknown::Unknown;
use super::run::{RunOn, on_current_snapshot};
use super::split_body::SplitBody;
use crate::api::AppState;
use crate::cluster::{NodeIdx, Snapshot};
use crate::config::{Config, PreemptionAnswer};
use crate::log_every::LogEvery;
use crate::parallel::map_parts;
use crate::policy::filter::PodFilters;
use crate::policy::preemption::{Candidate, Preemptor, Victims, pick_one_node};
use crate::server::ApiError;
use crate::server::metrics::Metrics;
use crate::wire::lexer::json_string;
use crate::wire::preempt_args::{PreemptArgs, read_preempt_args};

pub fn routes() -> Router<AppState> {
    Router::new().route("/scheduler/preempt", post(handle))
}

/// `ExtenderPreemptionResult`: the nodes where preemption helps, in node
/// name order, each with its victims.
#[derive(Debug, Default)]
pub struct PreemptResult<'s> {
    pub candidates: Vec<Candidate<'s>>,
    /// Names in the request the view does not know (left out).
    pub unknown: Unknown,
    /// For a candidate whose every named victim the view has already seen
    /// deleted: those UIDs, answered back (by node name; see
    /// [`answerable`]).
    pub gone: Vec<(String, Vec<String>)>,
}

impl PreemptResult<'_> {
    /// The answer as kube-scheduler reads it (Go field names):
    /// `{"NodeNameToMetaVictims": {node: {"Pods": [{"UID": ...}],
    /// "NumPDBViolations": n}}}`.
    ///
    /// Written by hand: thousands of UIDs, read from the nodes' pod
    /// summaries (not from each victim pod), almost never need escaping.
    pub fn to_json(&self) -> Vec<u8> {
        let victims: usize = self.candidates.iter().map(|c| c.victims.pods.len()).sum();
        let mut out = Vec::with_capacity(64 + 64 * self.candidates.len() + 56 * victims);
        let mut violations = itoa::Buffer::new();
        out.extend_from_slice(br#"{"NodeNameToMetaVictims":{"#);
        for (i, c) in self.candidates.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            // Writing a string into a Vec cannot fail.
            json_string::write_str(&mut out, c.node.node.name()).ok();
            out.extend_from_slice(br#":{"Pods":["#);
            let gone = self
                .gone
                .iter()
                .find(|(node, _)| node == c.node.node.name())
                .map_or(&[][..], |(_, uids)| uids.as_slice());
            let uids = (c.victims.pods.iter())
                .map(|v| c.node.pods.uid(v.position as usize))
                .chain(gone.iter().map(String::as_str));
            for (k, uid) in uids.enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(br#"{"UID":"#);
                // Writing a string into a Vec cannot fail.
                json_string::write_str(&mut out, uid).ok();
                out.push(b'}');
            }
            out.extend_from_slice(br#"],"NumPDBViolations":"#);
            out.extend_from_slice(violations.format(c.victims.num_pdb_violations).as_bytes());
            out.push(b'}');
        }
        out.extend_from_slice(b"}}");
        out
    }
}

async fn handle(
    State(state): State<AppState>,
    SplitBody(body): SplitBody<SPLIT_LIKELY_BODY, 1>,
) -> Response {
    let metrics = state.metrics.clone();
    let warnings = state.warnings.clone();
    let on = RunOn::for_body(body.len());
    on_current_snapshot(&state, on, move |snapshot, config| {
        let result = answer(snapshot, config, &body, Timestamp::now())?;
        report_unknown(&metrics, &warnings.preempt_unknown_names, &result.unknown);
        Ok(json_bytes(result.to_json()))
    })
    .await
    .unwrap_or_else(IntoResponse::into_response)
}

/// A lagging view would otherwise only show as preemptions that never
/// happen: count every unknown name, and say which (rate-limited).
fn report_unknown(metrics: &Metrics, log: &LogEvery, unknown: &Unknown) {
    if unknown.is_empty() {
        return;
    }
    metrics.count_preempt_unknown(unknown.nodes.len(), unknown.victims.len());
    if let Some(held_back) = log.admit(Instant::now()) {
        tracing::warn!(
            nodes = ?first_few(&unknown.nodes),
            victims = ?first_few(&unknown.victims),
            similar_lines_held_back = held_back,
            "preempt request names nodes or victim pods the cluster view does not know \
             (the view may lag kube-scheduler); they are left out of the answer"
        );
    }
}

/// At most 10 names, then how many more.
fn first_few(names: &[String]) -> Vec<String> {
    const SHOWN: usize = 10;
    let mut few: Vec<String> = names.iter().take(SHOWN).cloned().collect();
    if names.len() > SHOWN {
        few.push(format!("... {} more", names.len() - SHOWN));
    }
    few
}

/// Decode `ExtenderPreemptionArgs` (keys in any case, the unused map
/// `null`) and answer from `snapshot`.
pub fn answer<'s>(
    snapshot: &'s Snapshot,
    config: &Config,
    body: &[u8],
    now: Timestamp,
) -> Result<PreemptResult<'s>, ApiError> {
    let PreemptArgs { pod, named } = read_preempt_args(body).map_err(ApiError::bad_request)?;

    let filters = PodFilters::prepare(snapshot, &pod, &config.scheduling)
        .map_err(|e| ApiError::bad_request(format!("pod {}: {e}", pod.metadata.key())))?;
    let preemptor = Preemptor::new(snapshot, &pod, filters, now).ignoring(&config.scheduling);
    if let Err(why) = preemptor.eligibility() {
        tracing::debug!(pod = %pod.metadata.key(), "no preemption: {why}");
        return Ok(PreemptResult {
            unknown: Unknown::find(snapshot, &named),
            ..PreemptResult::default()
        });
    }
    // Each node's victims are found on a copy of the prepared state (the
    // simulation adds and removes pods in it), so the nodes split over the
    // cores as upstream's DryRunPreemption runs them in parallel; the
    // candidates keep the request's order. Each part also looks up its
    // nodes' names and victim UIDs: on one thread before the split, those
    // lookups' cache misses were a serial share of the request.
    let nodes: Vec<(&str, &[Cow<'_, str>])> =
        named.iter().map(|(n, v)| (&**n, v.as_slice())).collect();
    let parts = map_parts(&nodes, PARALLEL_PREEMPT_MIN, |_, part| {
        let mut preemptor = preemptor.clone();
        let mut unknown = Unknown::default();
        let mut found = Vec::new();
        for &(name, uids) in part {
            let before = unknown.victims.len();
            let Some(idx) = unknown.look_up(snapshot, name, uids) else {
                continue;
            };
            let gone = &unknown.victims[before..];
            if let Some(c) = candidate_on(snapshot, &mut preemptor, idx, uids.is_empty(), gone) {
                found.push(c);
            }
        }
        Ok::<_, Infallible>((found, unknown))
    });
    let parts = match parts {
        Ok(parts) => parts,
        Err(never) => match never {},
    };
    let mut candidates: Vec<Candidate> = Vec::with_capacity(parts.iter().map(|p| p.0.len()).sum());
    let mut gone = Vec::new();
    let mut unknown = Unknown::default();
    for (found, part_unknown) in parts {
        for (candidate, named_gone) in found {
            if let Some(uids) = named_gone {
                gone.push((candidate.node.node.name().to_string(), uids));
            }
            candidates.push(candidate);
        }
        unknown.append(part_unknown);
    }
    if config.preemption.answer == PreemptionAnswer::Best {
        let victims: Vec<&Victims> = candidates.iter().map(|c| &c.victims).collect();
        candidates = pick_one_node(&victims)
            .map(|i| candidates.swap_remove(i))
            .into_iter()
            .collect();
    }
    Ok(PreemptResult {
        candidates,
        unknown,
        gone,
    })
}

/// Below this many named nodes one thread finds all the victims: a split
/// waits for a helper thread to wake (up to ~0.1 ms here), more than a few
/// dozen nodes' victim selection (~2 µs a node) saves.
const PARALLEL_PREEMPT_MIN: usize = 64;

/// A preempt body this large likely names [`PARALLEL_PREEMPT_MIN`] nodes
/// or more (each with a few victims' UIDs, ~300 bytes): its helpers are
/// woken before it is read ([`SplitBody`]).
const SPLIT_LIKELY_BODY: usize = 16 << 10;

/// The candidate on the view's node `idx`, with the named victims the
/// view has seen go (`gone`) when it is answered with those, or `None`
/// when preemption there cannot help or cannot be answered.
fn candidate_on<'s>(
    snapshot: &'s Snapshot,
    preemptor: &mut Preemptor<'_, PodFilters>,
    idx: NodeIdx,
    arrived_empty: bool,
    gone: &[String],
) -> Option<(Candidate<'s>, Option<Vec<String>>)> {
    let info = &snapshot.nodes()[idx as usize];
    let answer = preemptor
        .select_victims_on_node(idx)
        .map_err(|f| f.to_string())
        .and_then(|victims| answerable(info, victims, arrived_empty, gone));
    match answer {
        Ok((victims, gone)) => Some((
            Candidate {
                node: info,
                victims,
            },
            gone,
        )),
        Err(why) => {
            tracing::debug!(node = %info.node.name(), "preempt: dropped: {why}");
            None
        }
    }
}

/// The victims on `info` as kube-scheduler can take them, or why the node
/// is left out (docs/preemption-contract.md):
///
/// - A victim the view shows being deleted stays a victim, as upstream's
///   `SelectVictimsOnNode` keeps it: it holds its room until it is gone,
///   kube-scheduler's cache keeps it until then (so its UID resolves), and
///   the preemption's execution skips the DELETE of a victim already being
///   deleted. Victims come from the view, so none is gone from it.
/// - A victim without a UID cannot be named: the node is left out.
/// - No victim (the pod fits without evicting): the node goes back with an
///   empty list only when it came with one (PR 135486: its dry run found
///   nothing to evict, and an empty list that arrived empty is accepted).
///   It goes back with the victims kube-scheduler named when the view has
///   already seen them deleted (`gone`): the pod fits because they left,
///   kube-scheduler's cache still holds them, and upstream picks this node
///   with them as victims (deleting a pod already gone is no error there).
///   Leaving the node out would make kube-scheduler evict healthy pods on
///   another node instead. Otherwise it is left out: kube-scheduler
///   refuses a node whose victims vanish ("expected at least one victim
///   pod on node"), and before that PR every empty list.
fn answerable(
    info: &crate::cluster::NodeInfo,
    victims: Victims,
    arrived_empty: bool,
    gone: &[String],
) -> Result<(Victims, Option<Vec<String>>), String> {
    let pods = &info.pods;
    if !victims
        .pods
        .iter()
        .all(|v| !pods.uid(v.position as usize).is_empty())
    {
        return Err("a victim has no UID".into());
    }
    if victims.pods.is_empty() && !arrived_empty {
        if !gone.is_empty() {
            return Ok((victims, Some(gone.to_vec())));
        }
        return Err(
            "no victim (the pod fits); kube-scheduler refuses an empty list for a node \
             it sent with victims"
                .into(),
        );
    }
    Ok((victims, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::model::Pod;
    use crate::policy::preemption::Victim;
    use crate::policy::preemption::testing::{node, now, pod};
    use serde_json::json;
    use tower::ServiceExt;

    /// The pod preempting in these tests: priority 100, one cpu.
    fn preemptor() -> serde_json::Value {
        json!({"metadata": {"name": "high", "namespace": "default", "uid": "uid-high"},
               "spec": {"priority": 100, "containers": [{"name": "c",
                        "resources": {"requests": {"cpu": "1"}}}]}})
    }

    /// `body` through the preempt route on `state`; the answer, a 200.
    async fn preempt_answer(state: &AppState, body: &serde_json::Value) -> serde_json::Value {
        let response = routes()
            .with_state(state.clone())
            .oneshot(
                axum::http::Request::post("/scheduler/preempt")
                    .header("content-type", "application/json")
                    .body(axum::body::Body::from(body.to_string()))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn unknown_nodes_and_victims_are_left_out_and_counted() {
        use std::sync::Arc;

        let view = Arc::new(crate::cluster::ClusterView::new());
        view.publish(Snapshot::build(ClusterObjects {
            nodes: vec![node("n1", 1000, 1 << 30)],
            pods: vec![pod("low", "n1", 0, 1000, 0, Some(0))],
            ..Default::default()
        }));
        let state = AppState::new(view.clone(), Config::default());
        let body = json!({
            "Pod": preemptor(),
            "NodeNameToMetaVictims": {
                "n1": {"Pods": [{"UID": "uid-low"}, {"UID": "uid-vanished"}]},
                "n9": {"Pods": [{"UID": "uid-elsewhere"}]},
            },
        });
        let answer = preempt_answer(&state, &body).await;
        assert_eq!(
            answer,
            json!({"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "uid-low"}], "NumPDBViolations": 0}}})
        );
        let text = state.metrics.render(&view);
        for line in [
            "kube_arbiter_preempt_unknown_total{what=\"node\"} 1",
            "kube_arbiter_preempt_unknown_total{what=\"victim\"} 1",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        // The warning went through this server's gate: the next one within
        // 30 s is held back.
        assert_eq!(
            state
                .warnings
                .preempt_unknown_names
                .admit(std::time::Instant::now()),
            None
        );
    }

    /// A 1.37 kube-scheduler with `GenericWorkload` on names, under each
    /// node, a PodGroup victim with `disruptionMode: all` as the whole
    /// group: every scheduled member, those on other nodes too
    /// (`GetVictimsOnNode` → `getCrossNodesVictims`,
    /// `searchCrossNodesVictimPods`; `SelectVictimsOnNode` flattens the
    /// group's pods into the node's list). An extender's answer is looked
    /// up in that node's pods alone (`convertToVictims` →
    /// `convertPodUIDToPod`, pkg/scheduler/extender.go), where a member on
    /// another node fails the whole preemption ("the pod is not found on
    /// that node"). So kube-arbiter answers the node's own pods, and a
    /// member elsewhere is neither answered nor counted as unknown
    /// (docs/preemption-contract.md, "PodGroup victims").
    #[tokio::test]
    async fn a_group_victims_members_on_other_nodes_are_not_answered() {
        use std::sync::Arc;

        let view = Arc::new(crate::cluster::ClusterView::new());
        view.publish(Snapshot::build(ClusterObjects {
            nodes: vec![node("n1", 1000, 1 << 30), node("n2", 1000, 1 << 30)],
            pods: vec![
                pod("gang-0", "n1", 0, 1000, 0, Some(0)),
                pod("gang-1", "n2", 0, 1000, 0, Some(0)),
            ],
            ..Default::default()
        }));
        let state = AppState::new(view.clone(), Config::default());
        let body = json!({
            "Pod": preemptor(),
            "NodeNameToMetaVictims": {
                "n1": {"Pods": [{"UID": "uid-gang-0"}, {"UID": "uid-gang-1"}]},
                "n2": {"Pods": [{"UID": "uid-gang-1"}, {"UID": "uid-gang-0"}]},
            },
        });
        let answer = preempt_answer(&state, &body).await;
        assert_eq!(
            answer,
            json!({"NodeNameToMetaVictims": {
                "n1": {"Pods": [{"UID": "uid-gang-0"}], "NumPDBViolations": 0},
                "n2": {"Pods": [{"UID": "uid-gang-1"}], "NumPDBViolations": 0},
            }})
        );
        let text = state.metrics.render(&view);
        let unknown_victims = text
            .lines()
            .find_map(|l| l.strip_prefix("kube_arbiter_preempt_unknown_total{what=\"victim\"} "));
        assert!(matches!(unknown_victims, None | Some("0")), "{text}");
    }

    /// Nodes split over the cores ([`PARALLEL_PREEMPT_MIN`] or more) give
    /// the answer one thread gives with one simulation state, node for node
    /// and in the request's order, and find the unknown names
    /// [`Unknown::find`] finds, in its order.
    #[test]
    fn split_victim_selection_answers_as_one_thread_does() {
        use crate::synth::{SynthParams, generate_objects};
        let snapshot = Snapshot::build(generate_objects(&SynthParams::new(300, 9_000)).unwrap());
        let config = Config::default();
        // Each node names one of its pods and one UID no pod has; every
        // tenth is followed (in name order) by a node the view lacks.
        let mut names = std::collections::BTreeMap::<String, serde_json::Value>::new();
        for (i, info) in snapshot.nodes().iter().enumerate() {
            let name = info.node.name();
            let mut uids = vec![json!({"UID": format!("gone-{i}")})];
            if !info.pods.summaries().is_empty() {
                uids.insert(0, json!({"UID": info.pods.uid(0)}));
            }
            names.insert(name.to_string(), json!({"Pods": uids}));
            if i % 10 == 0 {
                names.insert(format!("{name}-ghost"), json!({"Pods": [{"UID": "x"}]}));
            }
        }
        let preemptor = json!({
            "metadata": {"name": "urgent", "namespace": "default", "uid": "uid-urgent"},
            "spec": {"priority": 1_000_000, "containers": [{"name": "c",
                     "resources": {"requests": {"cpu": "24", "memory": "8Gi"}}}]},
        });
        let body = json!({"Pod": preemptor, "NodeNameToMetaVictims": names}).to_string();
        let split = answer(&snapshot, &config, body.as_bytes(), now()).unwrap();

        let pod: Pod = serde_json::from_value(preemptor).unwrap();
        let filters = PodFilters::prepare(&snapshot, &pod, &config.scheduling).unwrap();
        let mut one = Preemptor::new(&snapshot, &pod, filters, now()).ignoring(&config.scheduling);
        let named = read_preempt_args(body.as_bytes()).unwrap().named;
        let mut gone = Vec::new();
        let candidates: Vec<Candidate> = named
            .iter()
            .filter_map(|(name, uids)| {
                let mut here = Unknown::default();
                let idx = here.look_up(&snapshot, name, uids)?;
                let (c, named_gone) =
                    candidate_on(&snapshot, &mut one, idx, uids.is_empty(), &here.victims)?;
                if let Some(uids) = named_gone {
                    gone.push((name.to_string(), uids));
                }
                Some(c)
            })
            .collect();
        assert!(
            names.len() >= 4 * PARALLEL_PREEMPT_MIN,
            "too few nodes to split"
        );
        assert!(
            candidates.len() >= 40,
            "only {} candidates",
            candidates.len()
        );
        let unknown = Unknown::find(
            &snapshot,
            &read_preempt_args(body.as_bytes()).unwrap().named,
        );
        assert_eq!(unknown.nodes.len(), 30);
        assert_eq!(unknown.victims.len(), 300);
        assert_eq!(split.unknown, unknown);
        let plain = PreemptResult {
            candidates,
            unknown,
            gone,
        };
        assert_eq!(
            String::from_utf8(split.to_json()).unwrap(),
            String::from_utf8(plain.to_json()).unwrap()
        );
    }

    /// The extender preemption contract (upstream `callExtenders` in
    /// pkg/scheduler/framework/preemption, `convertToVictims` in
    /// pkg/scheduler/extender.go, and PR 135486): rows name the case.
    #[test]
    fn what_kube_scheduler_accepts_table() {
        struct Case {
            name: &'static str,
            pods: Vec<Pod>,
            /// The preemptor's cpu in millicores (priority 100, node 2 cpu).
            cpu: i64,
            /// Victims the request names on n1.
            sent: &'static [&'static str],
            want: serde_json::Value,
        }
        let deleting = |mut p: Pod| {
            p.metadata.deletion_timestamp = Some(now());
            p
        };
        let empty = json!({"NodeNameToMetaVictims": {}});
        let victims = |uids: &[&str]| {
            let pods: Vec<_> = uids.iter().map(|u| json!({"UID": u})).collect();
            json!({"NodeNameToMetaVictims": {"n1": {"Pods": pods, "NumPDBViolations": 0}}})
        };
        let cases = [
            Case {
                name: "sent without victims, fits without evicting: answered with none (PR 135486)",
                pods: vec![pod("low", "n1", 0, 1000, 0, Some(0))],
                cpu: 1000,
                sent: &[],
                want: victims(&[]),
            },
            Case {
                name: "sent with victims, fits without evicting: left out (an empty list is refused)",
                pods: vec![pod("low", "n1", 0, 1000, 0, Some(0))],
                cpu: 1000,
                sent: &["uid-low"],
                want: empty.clone(),
            },
            Case {
                name: "sent without victims, our rules need one: answered with it",
                pods: vec![pod("low", "n1", 0, 2000, 0, Some(0))],
                cpu: 1000,
                sent: &[],
                want: victims(&["uid-low"]),
            },
            Case {
                name: "a victim being deleted stays a victim beside the others \
                       (upstream SelectVictimsOnNode)",
                pods: vec![
                    deleting(pod("going", "n1", 0, 1000, 0, Some(0))),
                    pod("low", "n1", 0, 1000, 0, Some(1)),
                ],
                cpu: 2000,
                sent: &["uid-going", "uid-low"],
                want: victims(&["uid-going", "uid-low"]),
            },
            Case {
                name: "a node whose only victim is being deleted stays a candidate, \
                       sent with victims (upstream SelectVictimsOnNode)",
                pods: vec![deleting(pod("going", "n1", 0, 2000, 0, Some(0)))],
                cpu: 1000,
                sent: &["uid-going"],
                want: victims(&["uid-going"]),
            },
            Case {
                name: "sent with victims the view has seen deleted, fits now: answered with \
                       them, as upstream's cache still has them",
                pods: vec![pod("small", "n1", 0, 500, 0, Some(0))],
                cpu: 1000,
                sent: &["uid-gone"],
                want: victims(&["uid-gone"]),
            },
            Case {
                name: "sent with a deleted and a live victim, fits with the live one kept: \
                       answered with the deleted one alone",
                pods: vec![pod("low", "n1", 0, 1000, 0, Some(0))],
                cpu: 1000,
                sent: &["uid-gone", "uid-low"],
                want: victims(&["uid-gone"]),
            },
            Case {
                name: "a node whose only victim is being deleted stays a candidate, \
                       sent without (upstream SelectVictimsOnNode)",
                pods: vec![deleting(pod("going", "n1", 0, 2000, 0, Some(0)))],
                cpu: 1000,
                sent: &[],
                want: victims(&["uid-going"]),
            },
        ];
        for case in cases {
            let s = Snapshot::build(ClusterObjects {
                nodes: vec![node("n1", 2000, 1 << 30)],
                pods: case.pods,
                ..Default::default()
            });
            let sent: Vec<_> = case.sent.iter().map(|u| json!({"UID": u})).collect();
            let body = json!({
                "Pod": {"metadata": {"name": "high", "namespace": "default", "uid": "uid-high"},
                        "spec": {"priority": 100, "containers": [{"name": "c",
                                 "resources": {"requests": {"cpu": format!("{}m", case.cpu)}}}]}},
                "NodeNameToMetaVictims": {"n1": {"Pods": sent, "NumPDBViolations": 0}},
            });
            let result =
                answer(&s, &Config::default(), body.to_string().as_bytes(), now()).unwrap();
            let got: serde_json::Value = serde_json::from_slice(&result.to_json()).unwrap();
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn no_candidates_is_an_empty_map() {
        let json = PreemptResult::default().to_json();
        assert_eq!(json, br#"{"NodeNameToMetaVictims":{}}"#);
    }

    #[test]
    fn the_answer_is_go_shaped_json_with_escaped_uids() {
        let mut odd = pod("odd", "n2", 0, 0, 0, None);
        odd.metadata.uid = "u\"1\\".into();
        let s = Snapshot::build(ClusterObjects {
            nodes: vec![node("n1", 1, 1), node("n2", 1, 1)],
            pods: vec![
                pod("a", "n1", 0, 0, 0, None),
                pod("b", "n1", 0, 0, 0, None),
                odd,
            ],
            ..Default::default()
        });
        let victim = |position| Victim {
            position,
            priority: 0,
            start_time: now(),
            breaks_pdb: false,
        };
        let result = PreemptResult {
            candidates: vec![
                Candidate {
                    node: s.node("n1").unwrap(),
                    victims: Victims {
                        pods: vec![victim(1), victim(0)],
                        num_pdb_violations: 1,
                    },
                },
                Candidate {
                    node: s.node("n2").unwrap(),
                    victims: Victims {
                        pods: vec![victim(0)],
                        num_pdb_violations: 0,
                    },
                },
            ],
            ..PreemptResult::default()
        };
        let decoded: serde_json::Value = serde_json::from_slice(&result.to_json()).unwrap();
        assert_eq!(
            decoded,
            json!({"NodeNameToMetaVictims": {
                "n1": {"Pods": [{"UID": "uid-b"}, {"UID": "uid-a"}], "NumPDBViolations": 1},
                "n2": {"Pods": [{"UID": "u\"1\\"}], "NumPDBViolations": 0},
            }})
        );
    }
}
