//! `POST /scheduler/preempt`: kube-scheduler's extender preempt verb.
//!
//! The request names candidate nodes with kube-scheduler's own victims
//! (full pods, or UIDs only with nodeCacheCapable); we treat them only as
//! the list of nodes and recompute the victims on each from our view. The
//! answer is always `NodeNameToMetaVictims` with the nodes where preemption
//! helps, victims most important first — or only the best node with
//! `preemption.answer: best`.

use std::collections::{BTreeSet, HashMap};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use jiff::Timestamp;
use serde::de::IgnoredAny;

use super::any_case::AnyCase;
use super::{json_bytes, on_snapshot};
use crate::cluster::Snapshot;
use crate::config::{Config, PreemptionAnswer};
use crate::model::Pod;
use crate::policy::filter::PodFilters;
use crate::policy::preemption::{Candidate, Preemptor, Victims, pick_one_node};
use crate::server::{ApiError, AppState};

pub fn routes() -> Router<AppState> {
    Router::new().route("/scheduler/preempt", post(handle))
}

/// `ExtenderPreemptionResult`: the nodes where preemption helps, in node
/// name order, each with its victims.
#[derive(Debug, Default)]
pub struct PreemptResult<'s> {
    pub candidates: Vec<Candidate<'s>>,
}

impl PreemptResult<'_> {
    /// The answer as kube-scheduler reads it (Go field names):
    /// `{"NodeNameToMetaVictims": {node: {"Pods": [{"UID": ...}],
    /// "NumPDBViolations": n}}}`.
    ///
    /// Written by hand: thousands of UIDs come pre-encoded from the nodes'
    /// pod summaries, so the answer is mostly copying contiguous bytes
    /// instead of reading every victim pod again.
    pub fn to_json(&self) -> Vec<u8> {
        let victims: usize = self.candidates.iter().map(|c| c.victims.pods.len()).sum();
        let mut out = Vec::with_capacity(64 + 64 * self.candidates.len() + 56 * victims);
        out.extend_from_slice(br#"{"NodeNameToMetaVictims":{"#);
        for (i, c) in self.candidates.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            // Writing a string into a Vec cannot fail.
            serde_json::to_writer(&mut out, c.node.node.name()).ok();
            out.extend_from_slice(br#":{"Pods":["#);
            for (k, v) in c.victims.pods.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(br#"{"UID":"#);
                out.extend_from_slice(c.node.pods.uid_json(v.position as usize));
                out.push(b'}');
            }
            out.extend_from_slice(br#"],"NumPDBViolations":"#);
            out.extend_from_slice(c.victims.num_pdb_violations.to_string().as_bytes());
            out.push(b'}');
        }
        out.extend_from_slice(b"}}");
        out
    }
}

async fn handle(State(state): State<AppState>, body: Bytes) -> Response {
    on_snapshot(&state, move |snapshot, config| {
        answer(snapshot, config, &body, Timestamp::now()).map(|result| json_bytes(result.to_json()))
    })
    .await
}

/// Decode `ExtenderPreemptionArgs` (keys in any case, the unused map
/// `null`) and answer from `snapshot`.
pub fn answer<'s>(
    snapshot: &'s Snapshot,
    config: &Config,
    body: &[u8],
    now: Timestamp,
) -> Result<PreemptResult<'s>, ApiError> {
    let args = AnyCase::parse(body).map_err(ApiError::bad_request)?;
    let pod: Pod = args
        .get("Pod")
        .map_err(ApiError::bad_request)?
        .ok_or_else(|| ApiError::bad_request("ExtenderPreemptionArgs has no Pod"))?;
    let mut nodes = BTreeSet::new();
    for field in ["NodeNameToVictims", "NodeNameToMetaVictims"] {
        let map: Option<HashMap<String, IgnoredAny>> =
            args.get(field).map_err(ApiError::bad_request)?;
        nodes.extend(map.into_iter().flat_map(HashMap::into_keys));
    }

    let filters = PodFilters::prepare(snapshot, &pod, &config.scheduling)
        .map_err(|e| ApiError::bad_request(format!("pod {}: {e}", pod.metadata.key())))?;
    let mut preemptor = Preemptor::new(snapshot, &pod, filters, now);
    if let Err(why) = preemptor.eligibility() {
        tracing::debug!(pod = %pod.metadata.key(), "no preemption: {why}");
        return Ok(PreemptResult::default());
    }
    let mut candidates: Vec<Candidate> = Vec::new();
    for name in nodes {
        let Some(idx) = snapshot.node_idx(&name) else {
            tracing::debug!(node = %name, "preempt: node not in the view, dropped");
            continue;
        };
        let info = &snapshot.nodes()[idx as usize];
        match preemptor.select_victims(idx) {
            // The scheduler refuses the whole answer if a victim cannot be
            // found by UID, so a node with such a victim is left out.
            Ok(victims) if all_have_uids(info, &victims) => candidates.push(Candidate {
                node: info,
                victims,
            }),
            Ok(_) => tracing::debug!(node = %name, "preempt: a victim has no UID, dropped"),
            Err(f) => tracing::debug!(node = %name, "preempt: dropped: {f}"),
        }
    }
    if config.preemption.answer == PreemptionAnswer::Best {
        let victims: Vec<&Victims> = candidates.iter().map(|c| &c.victims).collect();
        candidates = pick_one_node(&victims)
            .map(|i| candidates.swap_remove(i))
            .into_iter()
            .collect();
    }
    Ok(PreemptResult { candidates })
}

fn all_have_uids(info: &crate::cluster::NodeInfo, victims: &Victims) -> bool {
    victims
        .pods
        .iter()
        .all(|v| info.pods.has_uid(v.position as usize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::policy::preemption::Victim;
    use crate::policy::preemption::testing::{node, now, pod};
    use serde_json::json;

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
