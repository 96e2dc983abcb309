//! `POST /scheduler/filter` and `POST /scheduler/prioritize`: decode
//! ExtenderArgs, run the policies on the current snapshot, encode back.
//!
//! Filter answers every extender-level problem (undecodable body, no pod,
//! invalid pod, view not ready) as HTTP 200 with `Error` set, which is what
//! kube-scheduler reads; prioritize has no such field and answers a JSON
//! error with a 4xx/5xx status.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use crate::api::AppState;
use crate::cluster::{InFlightPod, NodeIdx, Snapshot};
use crate::config::SchedulingSettings;
use crate::model::{Node, Pod, RecentNodes};
use crate::parallel::{Splitter, map_parts};
use crate::policy::Failure;
use crate::policy::domains::NodeAt;
use crate::policy::filter::PodFilters;
use crate::policy::prioritize::prioritize;
use crate::server::{ApiError, WholeBody};

use super::extender_verdicts::{record_failure, reserve_failures};
use super::run::RunOn;
use super::split_body::SplitBody;
use super::{in_flight, json_bytes, json_chunks};
use crate::wire::extender::{
    ExtenderArgs, ExtenderFilterResult, HostPriority, NodeListOut, NodeName,
};
use crate::wire::extender_read::read_args;
use crate::wire::prioritize_answer;

pub const UNKNOWN_NODE: &str = "node not found in kube-arbiter's cluster view";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/scheduler/filter", post(filter_handler))
        .route("/scheduler/prioritize", post(prioritize_handler))
}

async fn filter_handler(
    State(state): State<AppState>,
    SplitBody(body): SplitBody<SPLIT_LIKELY_BODY, 2>,
) -> Response {
    RunOn::for_body(body.len())
        .run_async(async move {
            let args = read_args(&body, &state.recent_nodes, &state.splitter);
            let incoming =
                in_flight::wait_for_related(&state, request_pod(&args), in_flight::Verb::Filter)
                    .await;
            let snapshot = state.view.current();
            let (in_flight, mut feasible) = match (&incoming, &snapshot) {
                (Some(incoming), Some(s)) if incoming.wants_candidates() => {
                    (incoming.placements(s), Some(Vec::new()))
                }
                _ => (Vec::new(), None),
            };
            let answer = match args {
                Ok(args) => filter_args(
                    snapshot.as_deref(),
                    &state.config.scheduling,
                    &state.splitter,
                    args,
                    &in_flight,
                    feasible.as_mut(),
                ),
                Err(e) => ExtenderFilterResult::error(undecodable(&e)),
            };
            if let (Some(incoming), Some(s)) = (incoming, &snapshot)
                && answer.has_feasible_node()
            {
                incoming.record(s, feasible.unwrap_or_default());
            }
            // The answer is about as long as a NodeNames request; a Nodes-mode
            // answer holds only the feasible nodes, so cap the guess.
            match answer.to_json_chunks(body.len().min(ANSWER_CAPACITY_MAX)) {
                Ok(chunks) => json_chunks(chunks),
                Err(e) => ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("cannot encode the answer: {e}"),
                )
                .into_response(),
            }
        })
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn prioritize_handler(State(state): State<AppState>, WholeBody(body): WholeBody) -> Response {
    RunOn::for_body(body.len())
        .run_async(async move {
            let args = read_args(&body, &state.recent_nodes, &state.splitter);
            let incoming = in_flight::wait_for_related(
                &state,
                request_pod(&args),
                in_flight::Verb::Prioritize,
            )
            .await;
            let answer = state.snapshot().and_then(|snapshot| {
                let args = args.map_err(|e| ApiError::bad_request(undecodable(&e)))?;
                let (list, in_view) =
                    prioritize_args_in_view(&snapshot, &state.config.scheduling, args)?;
                if let Some(incoming) = incoming
                    && !list.is_empty()
                {
                    // kube-scheduler picks one of the nodes it asks to score:
                    // they passed every filter, so they narrow where the pod
                    // may go.
                    incoming.record(&snapshot, in_view);
                }
                prioritize_answer::host_priorities_json(scores_to_send(&list)).map_err(|e| {
                    ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("cannot encode the answer: {e}"),
                    )
                })
            });
            match answer {
                Ok(json) => json_bytes(json),
                Err(e) => e.into_response(),
            }
        })
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// What of `list` to send: nothing when every score is 0. kube-scheduler
/// adds to a node's total only the scores the answer lists
/// (`prioritizeNodes`, schedule_one.go v1.37.2), so `[]` ranks the nodes
/// as 500 zeros do, and spares it decoding an entry a node. A pod no
/// scoring rule applies to (plain, required anti-affinity, hard spread
/// only) always gets `[]`; its ties are then broken as with no extender
/// (kube-scheduler draws a tie-break only for the nodes an extender
/// scored).
fn scores_to_send<'l, 'a>(list: &'l [HostPriority<'a>]) -> &'l [HostPriority<'a>] {
    if list.iter().all(|h| h.score == 0) {
        &[]
    } else {
        list
    }
}

/// The pod of a decoded request, if it has one.
fn request_pod<'a>(args: &'a Result<ExtenderArgs<'_>, serde_json::Error>) -> Option<&'a Arc<Pod>> {
    args.as_ref().ok()?.pod.as_ref()
}

fn undecodable(e: &serde_json::Error) -> String {
    format!("cannot decode ExtenderArgs: {e}")
}

/// Upper bound on the answer buffer reserved up front.
const ANSWER_CAPACITY_MAX: usize = 1 << 20;

/// The filter answer for one request body; never fails, errors go in `Error`.
pub fn filter<'a>(
    snapshot: Option<&Snapshot>,
    settings: &SchedulingSettings,
    body: &'a [u8],
    recent: &RecentNodes,
    splitter: &Splitter,
) -> ExtenderFilterResult<'a> {
    match read_args(body, recent, splitter) {
        Ok(args) => filter_args(snapshot, settings, splitter, args, &[], None),
        Err(e) => ExtenderFilterResult::error(undecodable(&e)),
    }
}

/// The filter answer for decoded `args`, next to kube-scheduler's in-tree
/// plugins: a node is kept when some placement of the pods `in_flight`
/// admits it (`PodFilters::admit_in_flight`). With `feasible_out`, the
/// place in the view's node list of every feasible candidate is put there
/// (where the pod may now go).
pub fn filter_args<'a>(
    snapshot: Option<&Snapshot>,
    settings: &SchedulingSettings,
    splitter: &Splitter,
    args: ExtenderArgs<'a>,
    in_flight: &[InFlightPod],
    feasible_out: Option<&mut Vec<NodeIdx>>,
) -> ExtenderFilterResult<'a> {
    let error = ExtenderFilterResult::error;
    let Some(pod) = &args.pod else {
        return error("ExtenderArgs has no Pod".into());
    };
    let Some(snapshot) = snapshot else {
        return error("kube-arbiter's cluster view is not ready yet".into());
    };
    if args.node_names.as_ref().map_or(0, Vec::len) >= PARALLEL_CHECK_MIN {
        // Awake by the time the pod is prepared and the check splits. Most
        // often the handler already woke it from the body's declared
        // length (SplitBody), and this call does nothing; it is for short
        // names in a small body, and callers other than the handler.
        splitter.prewarm(1);
    }
    let mut filters = match PodFilters::prepare(snapshot, pod, settings) {
        Ok(f) => f,
        Err(e) => return error(format!("pod {}: {e}", pod.metadata.key())),
    };
    filters.admit_in_flight(snapshot, in_flight);
    if let Some(names) = args.node_names {
        let (feasible, mut result) = partition_candidates(
            &names,
            |part| {
                let idxs = snapshot.node_idxs(part);
                let check = |idx| match idx {
                    Some(idx) => filters
                        .check_with_nominated(snapshot, pod, NodeAt::in_view(snapshot, idx))
                        .map(|()| idx),
                    None => Err(Failure::unresolvable(UNKNOWN_NODE)),
                };
                idxs.into_iter().map(check).collect()
            },
            |name, idx| (name.clone(), idx),
            |name| name.clone(),
            args.node_names_plain,
        );
        let (feasible, idxs): (Vec<NodeName<'a>>, Vec<NodeIdx>) = feasible.into_iter().unzip();
        if let Some(out) = feasible_out {
            out.extend(idxs);
        }
        result.node_names = Some(feasible);
        result.node_names_plain = args.node_names_plain;
        result
    } else if let Some(list) = args.nodes {
        let (feasible, mut result) = partition_candidates(
            &list.items,
            |part| {
                let check = |(node, _): &(Arc<Node>, _)| {
                    filters.check_with_nominated(snapshot, pod, NodeAt::resolve(snapshot, node))
                };
                part.iter().map(check).collect()
            },
            |(_, raw), ()| raw.clone(),
            |(node, _)| NodeName::Owned(node.name().to_string()),
            false,
        );
        if let Some(out) = feasible_out {
            let failed = |name: &str| {
                result.failed_nodes.contains_key(name)
                    || result.failed_and_unresolvable_nodes.contains_key(name)
            };
            let names = list.items.iter().map(|(node, _)| node.name());
            out.extend(
                names
                    .filter(|n| !failed(n))
                    .filter_map(|n| snapshot.node_idx(n)),
            );
        }
        result.nodes = Some(NodeListOut::new(feasible));
        result
    } else {
        error("ExtenderArgs has neither Nodes nor NodeNames".into())
    }
}

/// A filter body this large likely carries `PARALLEL_CHECK_MIN` names or
/// more (2,000 names of 40 bytes or so): its helpers are woken before it
/// is read (`SplitBody`), for two splits: reading the names (or a
/// NodeList's items) and checking the nodes. Public for the profiling
/// example, which wakes them the same way.
pub const SPLIT_LIKELY_BODY: usize = 64 << 10;

/// Below this many candidates one thread checks them all: splitting starts
/// a thread, which a few hundred cheap checks do not repay.
const PARALLEL_CHECK_MIN: usize = 2_000;

/// Every candidate checked and sorted into the answer, in request order:
/// `check(part)` gives the verdict of each candidate of a part (with what
/// the check found out about one that passes), `pass(c, found)` goes in
/// the first list for each that passes, each that fails under
/// `name(c)` in the failed map of its code. Large lists are split over the
/// machine's cores (the prepared filter state is shared read-only), and
/// each part sorts its own candidates and writes their failures' JSON
/// (`names_plain`: every name is its own JSON string), so what is left for
/// one thread is joining the parts' lists. A list too short to split is
/// written with the rest of the answer, in one buffer.
fn partition_candidates<'a, T: Sync, X, P: Send>(
    candidates: &[T],
    check: impl Fn(&[T]) -> Vec<Result<X, Failure>> + Sync,
    pass: impl Fn(&T, X) -> P + Sync,
    name: impl Fn(&T) -> NodeName<'a> + Sync,
    names_plain: bool,
) -> (Vec<P>, ExtenderFilterResult<'a>) {
    let split = candidates.len() >= PARALLEL_CHECK_MIN;
    let parts = map_parts(candidates, PARALLEL_CHECK_MIN, |_, part| {
        let verdicts = check(part);
        let mut failed = ExtenderFilterResult::default();
        let failures = reserve_failures(&mut failed, verdicts.iter());
        let mut passed = Vec::with_capacity(part.len() - failures);
        for (candidate, verdict) in part.iter().zip(verdicts) {
            match verdict {
                Ok(found) => passed.push(pass(candidate, found)),
                Err(f) => record_failure(&mut failed, name(candidate), f),
            }
        }
        if split {
            failed.node_names_plain = names_plain;
            failed.write_failures();
        }
        Ok::<_, Infallible>((passed, failed))
    });
    let parts = match parts {
        Ok(parts) => parts,
        Err(never) => match never {},
    };
    let passed_total: usize = parts.iter().map(|(p, _)| p.len()).sum();
    let mut parts = parts.into_iter();
    let Some((mut passed, mut result)) = parts.next() else {
        return (Vec::new(), ExtenderFilterResult::default());
    };
    passed.reserve_exact(passed_total - passed.len());
    for (more, failed) in parts {
        passed.extend(more);
        result.append_failures(failed);
    }
    (passed, result)
}

/// The prioritize answer: a score 0..10 for every candidate, in request
/// order. Candidates unknown to the view (NodeNames mode) score 0.
pub fn prioritize_body<'a>(
    snapshot: &Snapshot,
    settings: &SchedulingSettings,
    body: &'a [u8],
    recent: &RecentNodes,
    splitter: &Splitter,
) -> Result<Vec<HostPriority<'a>>, ApiError> {
    let args =
        read_args(body, recent, splitter).map_err(|e| ApiError::bad_request(undecodable(&e)))?;
    prioritize_args(snapshot, settings, args)
}

/// [`prioritize_body`] for decoded `args`.
pub fn prioritize_args<'a>(
    snapshot: &Snapshot,
    settings: &SchedulingSettings,
    args: ExtenderArgs<'a>,
) -> Result<Vec<HostPriority<'a>>, ApiError> {
    prioritize_args_in_view(snapshot, settings, args).map(|(list, _)| list)
}

/// [`prioritize_args`], and the places in the view's node list of the
/// candidates it has by name (where the pod may go).
pub fn prioritize_args_in_view<'a>(
    snapshot: &Snapshot,
    settings: &SchedulingSettings,
    args: ExtenderArgs<'a>,
) -> Result<(Vec<HostPriority<'a>>, Vec<NodeIdx>), ApiError> {
    let pod = args
        .pod
        .as_ref()
        .ok_or_else(|| ApiError::bad_request("ExtenderArgs has no Pod"))?;
    let request_nodes: Vec<Arc<Node>>;
    let in_view: Vec<NodeIdx>;
    let (names, nodes): (Vec<NodeName<'a>>, Vec<Option<NodeAt<'_>>>) =
        if let Some(names) = args.node_names {
            let idxs = snapshot.node_idxs(&names);
            in_view = idxs.iter().flatten().copied().collect();
            // Node objects are read only by the rules that need them.
            let nodes = idxs
                .into_iter()
                .map(|idx| idx.map(|idx| NodeAt::in_view(snapshot, idx)))
                .collect();
            (names, nodes)
        } else if let Some(list) = args.nodes {
            request_nodes = list.items.into_iter().map(|(n, _)| n).collect();
            in_view = (request_nodes.iter())
                .filter_map(|n| snapshot.node_idx(n.name()))
                .collect();
            (
                // The items die with this call: their names are copied.
                request_nodes
                    .iter()
                    .map(|n| NodeName::Owned(n.name().to_string()))
                    .collect(),
                request_nodes
                    .iter()
                    .map(|n| Some(NodeAt::resolve(snapshot, n)))
                    .collect(),
            )
        } else {
            return Err(ApiError::bad_request(
                "ExtenderArgs has neither Nodes nor NodeNames",
            ));
        };
    let known: Vec<NodeAt<'_>> = nodes.iter().flatten().copied().collect();
    let scores = score_pod(snapshot, pod, &known, settings)?;
    let mut scores = scores.into_iter();
    let list = names
        .into_iter()
        .zip(nodes)
        .map(|(host, node)| HostPriority {
            host,
            score: node.and_then(|_| scores.next()).unwrap_or(0),
        })
        .collect();
    Ok((list, in_view))
}

fn score_pod(
    snapshot: &Snapshot,
    pod: &Pod,
    candidates: &[NodeAt<'_>],
    settings: &SchedulingSettings,
) -> Result<Vec<i64>, ApiError> {
    prioritize(snapshot, pod, candidates, settings)
        .map(|s| s.into_iter().map(|s| s.total).collect())
        .map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("pod {}: {e}", pod.metadata.key()),
            )
        })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::testing::{make_node, make_pod};

    fn snapshot() -> Snapshot {
        let node = |name: &str, zone: &str| make_node(name).hostname().zone(zone).obj();
        let pod =
            |name: &str, node: &str| make_pod("shop", name).label("app", "web").node(node).obj();
        Snapshot::build(ClusterObjects {
            nodes: vec![
                node("n1", "eu-1a"),
                node("n2", "eu-1a"),
                node("n3", "eu-1b"),
            ],
            pods: vec![pod("w1", "n1"), pod("w2", "n2")],
            ..Default::default()
        })
    }

    fn web_pod() -> Value {
        json!({"metadata": {"name": "w3", "namespace": "shop", "labels": {"app": "web"}},
               "spec": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]}})
    }

    fn run_filter(s: Option<&Snapshot>, body: Value) -> Value {
        let bytes = serde_json::to_vec(&body).unwrap();
        serde_json::to_value(filter(
            s,
            &SchedulingSettings::default(),
            &bytes,
            &RecentNodes::default(),
            &Splitter::default(),
        ))
        .unwrap()
    }

    #[test]
    fn node_names_mode_answers_names_and_failed_maps() {
        let s = snapshot();
        let got = run_filter(
            Some(&s),
            json!({"Pod": web_pod(), "NodeNames": ["n1", "n2", "n3", "ghost"]}),
        );
        assert_eq!(got["NodeNames"], json!(["n3"]));
        assert_eq!(got["Nodes"], Value::Null);
        assert_eq!(
            got["FailedNodes"]["n1"],
            "node(s) didn't match pod topology spread constraints: topology.kubernetes.io/zone=eu-1a would have skew 3 > maxSkew 1 (2 matching pods there, global minimum 0)"
        );
        assert!(got["FailedNodes"]["n2"].is_string());
        assert_eq!(got["FailedAndUnresolvableNodes"]["ghost"], UNKNOWN_NODE);
        assert_eq!(got["Error"], "");
    }

    /// The filter skips reading taints of nodes the view knows are plain;
    /// a node that is cordoned or tainted later must be read again.
    #[test]
    fn a_node_cordoned_or_tainted_after_the_build_fails_as_such() {
        let s = snapshot();
        let body = json!({"Pod": {"metadata": {"name": "p", "namespace": "shop"}},
                          "NodeNames": ["n1", "n2", "n3"]});
        assert_eq!(
            run_filter(Some(&s), body.clone())["NodeNames"],
            json!(["n1", "n2", "n3"])
        );
        let mut cordoned = (*s.nodes()[0].node).clone();
        cordoned.spec.unschedulable = true;
        let mut tainted = (*s.nodes()[1].node).clone();
        tainted.spec.taints =
            serde_json::from_value(json!([{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]))
                .unwrap();
        let changed = s
            .with_node_changes(&[Arc::new(cordoned), Arc::new(tainted)])
            .unwrap();
        let got = run_filter(Some(&changed), body.clone());
        assert_eq!(got["NodeNames"], json!(["n3"]));
        assert_eq!(
            got["FailedAndUnresolvableNodes"],
            json!({"n1": crate::policy::filter::UNSCHEDULABLE_REASON,
                   "n2": crate::policy::taint_toleration::UNTOLERATED_TAINT_REASON})
        );
        let healed = (*s.nodes()[1].node).clone();
        let again = changed.with_node_changes(&[Arc::new(healed)]).unwrap();
        assert_eq!(
            run_filter(Some(&again), body)["NodeNames"],
            json!(["n2", "n3"])
        );
    }

    #[test]
    fn nodes_mode_echoes_the_request_objects_and_judges_unknown_nodes_by_them() {
        let s = snapshot();
        let n4 = json!({"metadata": {"name": "n4", "labels": {"topology.kubernetes.io/zone": "eu-1c"}},
                        "status": {"capacity": {"cpu": "4"}}});
        let n1 =
            json!({"metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "eu-1a"}}});
        let got = run_filter(
            Some(&s),
            json!({"pod": web_pod(), "nodes": {"items": [n1, n4.clone()]}}),
        );
        assert_eq!(got["Nodes"]["items"], json!([n4]));
        assert_eq!(got["NodeNames"], Value::Null);
        assert!(got["FailedNodes"]["n1"].is_string());
    }

    #[test]
    fn extender_level_failures_are_errors_in_the_answer() {
        let s = snapshot();
        let cases = [
            (Some(&s), json!({"NodeNames": ["n1"]}), "no Pod"),
            (
                None,
                json!({"Pod": web_pod(), "NodeNames": ["n1"]}),
                "not ready",
            ),
            (
                Some(&s),
                json!({"Pod": web_pod()}),
                "neither Nodes nor NodeNames",
            ),
            (
                Some(&s),
                json!({"Pod": {"metadata": {"name": "p", "namespace": "shop"}, "spec": {"topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}}]}},
                "NodeNames": ["n1"]}),
                "pod shop/p: PodTopologySpread",
            ),
            (
                Some(&s),
                json!({"Pod": {"spec": {"priority": "high"}}, "NodeNames": []}),
                "cannot decode",
            ),
        ];
        for (snap, body, needle) in cases {
            let got = run_filter(snap, body);
            let err = got["Error"].as_str().unwrap();
            assert!(err.contains(needle), "{err}");
        }
        let got = serde_json::to_value(filter(
            Some(&s),
            &SchedulingSettings::default(),
            b"not json",
            &RecentNodes::default(),
            &Splitter::default(),
        ))
        .unwrap();
        assert!(got["Error"].as_str().unwrap().contains("cannot decode"));
    }

    #[test]
    fn a_list_split_over_the_cores_gets_the_one_thread_answer() {
        let count = PARALLEL_CHECK_MIN + 501;
        let node = |i: usize| -> Node {
            serde_json::from_value(json!({"metadata": {"name": format!("n{i:05}"), "labels": {
                "kubernetes.io/hostname": format!("n{i:05}"),
                "topology.kubernetes.io/zone": format!("z{}", i % 3)}}}))
            .unwrap()
        };
        let pod = |i: usize| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": format!("w{i}"), "namespace": "shop",
                "labels": {"app": "web"}}, "spec": {"nodeName": format!("n{:05}", (i * 7) % count)}}))
            .unwrap()
        };
        let s = Snapshot::build(ClusterObjects {
            nodes: (0..count).map(node).collect(),
            pods: (0..count / 3).map(pod).collect(),
            ..Default::default()
        });
        let mut incoming = web_pod();
        incoming["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}});
        // Reversed order and unknown names mixed in: the answer keeps the
        // request's order.
        let mut names: Vec<String> = (0..count).rev().map(|i| format!("n{i:05}")).collect();
        names.insert(count / 2, "ghost".into());
        let got = run_filter(Some(&s), json!({"Pod": incoming, "NodeNames": names}));

        let pod: Pod = serde_json::from_value(incoming.clone()).unwrap();
        let filters = PodFilters::prepare(&s, &pod, &SchedulingSettings::default()).unwrap();
        let mut want = ExtenderFilterResult::default();
        let mut feasible = Vec::new();
        for name in &names {
            let verdict = match s.node_idx(name) {
                Some(i) => filters.check_at(NodeAt::indexed(&s.nodes()[i as usize].node, i)),
                None => Err(Failure::unresolvable(UNKNOWN_NODE)),
            };
            match verdict {
                Ok(()) => feasible.push(name.clone().into()),
                Err(f) => record_failure(&mut want, name.clone(), f),
            }
        }
        want.node_names = Some(feasible);
        let want = serde_json::to_value(want).unwrap();
        assert_eq!(got, want);
        assert!(got["FailedNodes"].as_object().unwrap().len() > 100);
        assert!(got["NodeNames"].as_array().unwrap().len() > 100);

        // The names were read as plain, and the hand-written answer, which
        // then copies them unchecked, is serde's to the byte.
        let body = serde_json::to_vec(&json!({"Pod": incoming, "NodeNames": names})).unwrap();
        let answer = filter(
            Some(&s),
            &SchedulingSettings::default(),
            &body,
            &RecentNodes::default(),
            &Splitter::default(),
        );
        assert!(answer.node_names_plain);
        assert_eq!(
            answer.to_json(0).unwrap(),
            serde_json::to_vec(&answer).unwrap()
        );
        // Each part wrote its failures, and the answer sends those runs as
        // chunks of their own.
        let chunks = answer.to_json_chunks(0).unwrap();
        assert!(chunks.len() > 1, "{} chunk(s)", chunks.len());
        assert_eq!(chunks.concat(), serde_json::to_vec(&answer).unwrap());
    }

    #[test]
    fn pods_nominated_to_a_node_count_there_when_at_least_as_important() {
        let incoming = json!({"metadata": {"name": "x", "namespace": "shop", "uid": "uid-x"},
            "spec": {"priority": 100, "affinity": {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "kubernetes.io/hostname"}]}}}});
        let nominated = |uid: &str, priority: i32| {
            make_pod("shop", "pre")
                .uid(uid)
                .label("app", "db")
                .priority(priority)
                .nominated("n3")
                .obj()
        };
        let cases = [
            (
                "an equal-priority nominated pod counts on its node",
                nominated("uid-pre", 100),
                false,
            ),
            (
                "a lower-priority nominated pod does not",
                nominated("uid-pre", 50),
                true,
            ),
            (
                "the incoming pod itself does not",
                nominated("uid-x", 100),
                true,
            ),
        ];
        for (rule, pod, n3_feasible) in cases {
            let s = snapshot()
                .with_pod_changes(&[crate::cluster::PodChange::upsert(std::sync::Arc::new(pod))]);
            let got = run_filter(
                Some(&s),
                json!({"Pod": incoming, "NodeNames": ["n1", "n3"]}),
            );
            let feasible = got["NodeNames"].as_array().unwrap().contains(&json!("n3"));
            assert_eq!(feasible, n3_feasible, "{rule}: {got}");
            assert!(
                got["NodeNames"].as_array().unwrap().contains(&json!("n1")),
                "{rule}"
            );
        }
    }

    /// Where the pod may now go, for the ledger: the view's node of each
    /// feasible candidate, in both request modes; unknown nodes left out.
    #[test]
    fn the_feasible_nodes_come_out_for_the_ledger_in_both_modes() {
        let s = snapshot();
        let names = |idxs: &[NodeIdx]| -> Vec<String> {
            let nodes = s.nodes();
            idxs.iter()
                .map(|&i| nodes[i as usize].node.name().to_string())
                .collect()
        };
        let n4 =
            json!({"metadata": {"name": "n4", "labels": {"topology.kubernetes.io/zone": "eu-1c"}}});
        let n3 =
            json!({"metadata": {"name": "n3", "labels": {"topology.kubernetes.io/zone": "eu-1b"}}});
        let n1 =
            json!({"metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "eu-1a"}}});
        let bodies = [
            json!({"Pod": web_pod(), "NodeNames": ["n1", "n3", "ghost"]}),
            json!({"Pod": web_pod(), "Nodes": {"items": [n1, n3, n4]}}),
        ];
        for body in bodies {
            let bytes = serde_json::to_vec(&body).unwrap();
            let mut out = Vec::new();
            let settings = SchedulingSettings::default();
            let args = read_args(&bytes, &RecentNodes::default(), &Splitter::default()).unwrap();
            let answer = filter_args(
                Some(&s),
                &settings,
                &Splitter::default(),
                args,
                &[],
                Some(&mut out),
            );
            assert!(answer.has_feasible_node(), "{body}");
            assert_eq!(names(&out), ["n3"], "{body}");
        }
    }

    /// Where the pod may go after prioritize, for the ledger: the view's
    /// node of each scored candidate, in both request modes; unknown nodes
    /// left out.
    #[test]
    fn the_scored_nodes_come_out_for_the_ledger_in_both_modes() {
        let s = snapshot();
        let n4 = json!({"metadata": {"name": "n4"}});
        let n3 = json!({"metadata": {"name": "n3"}});
        let n1 = json!({"metadata": {"name": "n1"}});
        let bodies = [
            json!({"Pod": web_pod(), "NodeNames": ["n3", "ghost", "n1"]}),
            json!({"Pod": web_pod(), "Nodes": {"items": [n3, n4, n1]}}),
        ];
        for body in bodies {
            let bytes = serde_json::to_vec(&body).unwrap();
            let settings = SchedulingSettings::default();
            let args = read_args(&bytes, &RecentNodes::default(), &Splitter::default()).unwrap();
            let (list, in_view) = prioritize_args_in_view(&s, &settings, args).unwrap();
            assert_eq!(list.len(), 3, "{body}");
            let names: Vec<&str> = in_view
                .iter()
                .map(|&i| s.nodes()[i as usize].node.name())
                .collect();
            assert_eq!(names, ["n3", "n1"], "{body}");
        }
    }

    #[test]
    fn prioritize_scores_every_candidate_in_request_order() {
        let s = snapshot();
        let mut pod = web_pod();
        pod["spec"]["topologySpreadConstraints"][0]["whenUnsatisfiable"] = json!("ScheduleAnyway");
        let body =
            serde_json::to_vec(&json!({"Pod": pod, "NodeNames": ["n3", "n1", "ghost"]})).unwrap();
        let got = prioritize_body(
            &s,
            &SchedulingSettings::default(),
            &body,
            &RecentNodes::default(),
            &Splitter::default(),
        )
        .unwrap();
        let hosts: Vec<_> = got.iter().map(|h| (&*h.host, h.score)).collect();
        assert_eq!(hosts, [("n3", 10), ("n1", 0), ("ghost", 0)]);
        // The answer's names are the request's text, not a copy per node.
        assert!(
            got.iter()
                .all(|h| matches!(h.host, std::borrow::Cow::Borrowed(_)))
        );
    }

    #[test]
    fn prioritize_rejects_requests_without_a_pod() {
        let err = prioritize_body(
            &snapshot(),
            &SchedulingSettings::default(),
            br#"{"NodeNames":[]}"#,
            &RecentNodes::default(),
            &Splitter::default(),
        )
        .unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
    }

    /// The Nodes-mode cache is the server's own (AppState), not the
    /// process's: a filter through one server's routes fills its cache only.
    #[tokio::test]
    async fn nodes_mode_texts_are_kept_in_the_servers_state() {
        use tower::ServiceExt;

        let view = Arc::new(crate::cluster::ClusterView::new());
        view.publish(snapshot());
        let state = AppState::new(view.clone(), crate::config::Config::default());
        let other = AppState::new(view, crate::config::Config::default());
        // Large enough (over 8 KiB) for the reader that consults the cache.
        let pad = "x".repeat(4_000);
        let items: Vec<Value> = ["n1", "n2", "n3"]
            .iter()
            .map(|n| json!({"metadata": {"name": n, "annotations": {"pad": pad}}}))
            .collect();
        let body = json!({"Pod": web_pod(), "Nodes": {"items": items}}).to_string();
        let response = routes()
            .with_state(state.clone())
            .oneshot(
                axum::http::Request::post("/scheduler/filter")
                    .header("content-type", "application/json")
                    .body(axum::body::Body::from(body))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(state.recent_nodes.kept(), 3);
        assert_eq!(other.recent_nodes.kept(), 0);
    }

    /// The answer lists the candidates only when some score is not 0: a
    /// pod no scoring rule applies to gets `[]`, which adds the same 0 to
    /// every node's total in kube-scheduler.
    #[tokio::test]
    async fn prioritize_sends_no_entries_when_every_score_is_0() {
        use crate::cluster::ClusterView;
        use crate::config::Config;
        use tower::ServiceExt;

        let view = Arc::new(ClusterView::new());
        view.publish(snapshot());
        let state = AppState::new(view, Config::default());
        let answer = |pod: Value| {
            let body = json!({"Pod": pod, "NodeNames": ["n1", "n2", "n3"]}).to_string();
            let request = axum::http::Request::post("/scheduler/prioritize")
                .body(axum::body::Body::from(body))
                .unwrap();
            let router = routes().with_state(state.clone());
            async move {
                let response = router.oneshot(request).await.unwrap();
                assert_eq!(response.status(), StatusCode::OK);
                let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                    .await
                    .unwrap();
                serde_json::from_slice::<Value>(&bytes).unwrap()
            }
        };
        // DoNotSchedule only: PodTopologySpread does not score it.
        assert_eq!(answer(web_pod()).await, json!([]));
        let mut soft = web_pod();
        soft["spec"]["topologySpreadConstraints"][0]["whenUnsatisfiable"] = json!("ScheduleAnyway");
        let hosts: Vec<Value> = answer(soft)
            .await
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["Host"].clone())
            .collect();
        assert_eq!(hosts, [json!("n1"), json!("n2"), json!("n3")]);
    }

    /// Bodies past `INLINE_BODY_MAX` (decided in place) and past
    /// `IN_PLACE_BODY_MAX` (on the blocking pool) are decoded there and
    /// drive the ledger's wait there: the same answers as a small body,
    /// and the pod the handler decoded is the one recorded, in both roles.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn large_bodies_are_decided_off_the_worker_with_the_ledger_on() {
        use crate::cluster::{ClusterView, InFlight};
        use crate::config::{Config, Role};
        use std::time::Duration;
        use tower::ServiceExt;

        async fn post(
            state: &AppState,
            verb: &str,
            body: &Value,
        ) -> (StatusCode, axum::body::Bytes) {
            let response = routes()
                .with_state(state.clone())
                .oneshot(
                    axum::http::Request::post(format!("/scheduler/{verb}"))
                        .body(axum::body::Body::from(body.to_string()))
                        .unwrap(),
                )
                .await
                .unwrap();
            let status = response.status();
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap();
            (status, bytes)
        }
        let web = |name: &str| {
            let mut pod = web_pod();
            pod["metadata"]["name"] = json!(name);
            pod
        };
        for role in [Role::NextToInTreePlugins, Role::Enforcer] {
            let mut answers = Vec::new();
            for pad in [
                0,
                super::super::run::INLINE_BODY_MAX,
                super::super::run::IN_PLACE_BODY_MAX,
            ] {
                let view = Arc::new(ClusterView::new());
                view.publish(snapshot());
                let mut config = Config::default();
                config.scheduling.role = role;
                let state = AppState::new(view, config).with_in_flight(InFlight::new(
                    Duration::from_millis(20),
                    Duration::from_secs(60),
                ));
                let first = json!({"Pod": web("w-first"), "NodeNames": ["n1", "n2", "n3"]});
                assert_eq!(post(&state, "filter", &first).await.0, StatusCode::OK);
                // Padding the reader skips puts the body in the size class.
                let body = json!({"Pod": web("w-next"), "NodeNames": ["n1", "n2", "n3"],
                                  "pad": "x".repeat(pad)});
                let filtered = post(&state, "filter", &body).await;
                let scored = post(&state, "prioritize", &body).await;
                // The enforcer waited for w-first (a related pod), gave up
                // and dropped it; next to the in-tree plugins both count.
                let timeouts = state.metrics.in_flight_wait_timeouts.get();
                let in_flight = state.in_flight.len(state.view.current().as_deref());
                let want = match role {
                    Role::Enforcer => (1, 1),
                    Role::NextToInTreePlugins => (0, 2),
                };
                assert_eq!((timeouts, in_flight), want, "{role:?}, pad {pad}");
                answers.push((filtered, scored));
            }
            assert!(answers.iter().all(|a| *a == answers[0]), "{role:?}");
            let (filtered, scored) = &answers[0];
            assert_eq!(filtered.0, StatusCode::OK);
            assert_eq!(scored.0, StatusCode::OK);
        }
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::cluster::ClusterObjects;

    proptest! {
        #[test]
        fn every_candidate_is_feasible_or_failed_exactly_once(
            zones in prop::collection::vec(prop::option::of(0u8..3), 1..8),
            placements in prop::collection::vec(0usize..8, 0..12),
            asked in prop::collection::btree_set(0usize..10, 0..10),
            max_skew in 1i32..3,
        ) {
            let nodes: Vec<Node> = zones.iter().enumerate().map(|(i, z)| {
                let mut labels = json!({"kubernetes.io/hostname": format!("n{i}")});
                if let Some(z) = z { labels["zone"] = json!(format!("z{z}")); }
                serde_json::from_value(json!({"metadata": {"name": format!("n{i}"), "labels": labels}})).unwrap()
            }).collect();
            let pods: Vec<Pod> = placements.iter().enumerate().map(|(i, n)| serde_json::from_value(json!({
                "metadata": {"name": format!("p{i}"), "namespace": "ns", "labels": {"app": "a"}},
                "spec": {"nodeName": format!("n{n}")}})).unwrap()).collect();
            let s = Snapshot::build(ClusterObjects { nodes, pods, ..Default::default() });
            let names: Vec<String> = asked.iter().map(|i| format!("n{i}")).collect();
            let body = serde_json::to_vec(&json!({"Pod": {"metadata": {"name": "x", "namespace": "ns", "labels": {"app": "a"}},
                "spec": {"topologySpreadConstraints": [{"maxSkew": max_skew, "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "a"}}}],
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}]}}}},
                "NodeNames": names})).unwrap();
            let r = filter(Some(&s), &SchedulingSettings::default(), &body, &RecentNodes::default(), &Splitter::default());
            prop_assert_eq!(&r.error, "");
            let feasible = r.node_names.clone().unwrap();
            for name in &names {
                let places = usize::from(feasible.iter().any(|f| f == name))
                    + usize::from(r.failed_nodes.contains_key(name))
                    + usize::from(r.failed_and_unresolvable_nodes.contains_key(name));
                prop_assert_eq!(places, 1, "{}", name);
            }
            prop_assert_eq!(feasible.len() + r.failed_nodes.len() + r.failed_and_unresolvable_nodes.len(), names.len());
        }
    }
}
