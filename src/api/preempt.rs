//! `POST /scheduler/preempt`: kube-scheduler's extender preempt verb.
//!
//! The request names candidate nodes with kube-scheduler's own victims
//! (full pods, or UIDs only with nodeCacheCapable); we treat them only as
//! the list of nodes and recompute the victims on each from our view. The
//! answer is always `NodeNameToMetaVictims` with the nodes where preemption
//! helps, victims most important first — or only the best node with
//! `preemption.answer: best`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use jiff::Timestamp;
use serde::Serialize;
use serde::de::IgnoredAny;
use serde::ser::{SerializeStruct, Serializer};

use super::any_case::AnyCase;
use crate::cluster::Snapshot;
use crate::config::{Config, PreemptionAnswer};
use crate::model::Pod;
use crate::policy::filter::PodFilters;
use crate::policy::preemption::{Candidate, Preemptor, pick_one_node};
use crate::server::{ApiError, AppState};

pub fn routes() -> Router<AppState> {
    Router::new().route("/scheduler/preempt", post(handle))
}

/// `ExtenderPreemptionResult`: Go field names on the wire.
#[derive(Debug, Default, Serialize, PartialEq)]
pub struct ExtenderPreemptionResult {
    #[serde(rename = "NodeNameToMetaVictims")]
    pub node_name_to_meta_victims: BTreeMap<String, MetaVictims>,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct MetaVictims {
    #[serde(rename = "Pods")]
    pub pods: Vec<MetaPod>,
    #[serde(rename = "NumPDBViolations")]
    pub num_pdb_violations: i64,
}

/// A victim on the wire: `{"UID": ...}`. Holds the pod rather than a copy
/// of its UID: copying thousands of UIDs (each its own heap string) was a
/// quarter of the end-to-end time.
#[derive(Debug, PartialEq)]
pub struct MetaPod(pub Arc<Pod>);

impl MetaPod {
    pub fn uid(&self) -> &str {
        &self.0.metadata.uid
    }
}

impl Serialize for MetaPod {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("MetaPod", 1)?;
        s.serialize_field("UID", self.uid())?;
        s.end()
    }
}

async fn handle(
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Json<ExtenderPreemptionResult>, ApiError> {
    let snapshot = state.snapshot()?;
    answer(&snapshot, &state.config, &body, Timestamp::now()).map(Json)
}

/// Decode `ExtenderPreemptionArgs` (keys in any case, the unused map
/// `null`) and answer from `snapshot`.
pub fn answer(
    snapshot: &Snapshot,
    config: &Config,
    body: &[u8],
    now: Timestamp,
) -> Result<ExtenderPreemptionResult, ApiError> {
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
        return Ok(ExtenderPreemptionResult::default());
    }
    let mut candidates: Vec<Candidate> = Vec::new();
    for name in nodes {
        let Some(info) = snapshot.node(&name) else {
            tracing::debug!(node = %name, "preempt: node not in the view, dropped");
            continue;
        };
        match preemptor.select_victims(info) {
            // The scheduler refuses the whole answer if a victim cannot be
            // found by UID, so a node with such a victim is left out.
            Ok(v) if v.pods.iter().all(|p| !p.metadata.uid.is_empty()) => {
                candidates.push(Candidate {
                    node: name,
                    victims: v,
                })
            }
            Ok(_) => tracing::debug!(node = %name, "preempt: a victim has no UID, dropped"),
            Err(f) => tracing::debug!(node = %name, "preempt: dropped: {f}"),
        }
    }
    if config.preemption.answer == PreemptionAnswer::Best {
        candidates = pick_one_node(&candidates, now)
            .map(|i| candidates.swap_remove(i))
            .into_iter()
            .collect();
    }
    Ok(ExtenderPreemptionResult {
        node_name_to_meta_victims: candidates
            .into_iter()
            .map(|c| {
                let victims = MetaVictims {
                    pods: c.victims.pods.into_iter().map(MetaPod).collect(),
                    num_pdb_violations: c.victims.num_pdb_violations as i64,
                };
                (c.node, victims)
            })
            .collect(),
    })
}
