//! `kube-arbiter fit` and `/debug/fit`: "will it fit?" for a workload
//! before it is applied. The replicas are placed one after another, as
//! kube-scheduler takes them from its queue, each counted on its node for
//! the next (as the scheduler's assumed pods are): every node is judged by
//! `explain` (the filter rules and NodeResourcesFit, the same code as the
//! extender's verbs), the feasible ones scored as kube-scheduler sums its
//! default plugins and kube-arbiter's answer ([`score`]), and the best
//! taken. A replica that fits nowhere gets the FailedScheduling summary
//! and, when it may preempt, the node preemption would nominate and its
//! victims, which are then evicted from the view for the replicas after
//! it. What is and is not modelled: docs/fit.md.

mod named;
mod render;
mod run;
pub mod score;
pub mod workload;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::cluster::{PodChange, Snapshot};
use crate::config::Config;
use crate::explain::{DraExtendedResource, Explanation, explain};
use crate::model::Pod;

pub use self::named::namespaces_named;
pub use self::render::{render_json, render_table};
pub use self::run::{FitError, Output, Source, live_kind, run_fit};
pub use self::score::NodeScore;
pub use self::workload::{Workload, admit, parse_manifest};

/// The node label placements are counted by.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// What to ask besides the workload.
#[derive(Debug, Clone, Copy, Default)]
pub struct FitOptions {
    /// How many replicas to place (default: the workload's).
    pub replicas: Option<u32>,
    /// Whether a replica that fits nowhere may preempt (default: when its
    /// preemption policy allows it).
    pub preempt: Option<bool>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FitAnswer {
    /// `Kind namespace/name`.
    pub workload: String,
    pub priority: i32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
    pub preemption_policy: String,
    /// Whether replicas that fit nowhere were allowed to preempt.
    pub preempt: bool,
    pub replicas: u32,
    /// Replicas placed, those placed by preemption included.
    pub placed: u32,
    pub placed_by_preemption: u32,
    pub unplaced: u32,
    /// Replicas per node, by node name.
    pub nodes: Vec<Count>,
    /// Replicas per `topology.kubernetes.io/zone` (`-`: nodes without one).
    pub zones: Vec<Count>,
    pub placements: Vec<Placement>,
    /// The first replica that fit on no node as the cluster was, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_unschedulable: Option<Unschedulable>,
    /// The replica placement stopped at (not even preemption placed it),
    /// when preemption placed the first unschedulable one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_unplaced: Option<Unschedulable>,
    /// Every pod preemption would evict, in the order it would.
    pub victims: Vec<Victim>,
    /// The requested extended resources DeviceClasses map: no replica was
    /// counted against them on nodes that do not list them (the DRA plugin
    /// allocates their devices; `fit` does not).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dra_extended_resources: Vec<DraExtendedResource>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Count {
    pub name: String,
    pub replicas: u32,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// The replica's number (a StatefulSet's ordinal).
    pub replica: u32,
    pub pod: String,
    pub node: String,
    pub zone: String,
    /// How many nodes it fitted on.
    pub feasible: usize,
    /// The chosen node's scores; `None` when preemption placed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<NodeScore>,
    /// Whether it took the place of evicted pods.
    pub preempted: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unschedulable {
    pub replica: u32,
    pub pod: String,
    /// "0/N nodes are available: COUNT REASON, …." as FailedScheduling says it.
    pub summary: String,
    /// Each node's first failing rule.
    pub nodes: Vec<NodeReason>,
    /// The preemption line, when preemption was allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReason {
    pub node: String,
    pub result: &'static str,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Victim {
    pub pod: String,
    pub node: String,
    pub priority: i32,
    pub breaks_pdb: bool,
    /// The replica it makes room for.
    pub for_replica: u32,
}

/// Place `options.replicas` (default: the workload's) replicas of the
/// admitted `workload` on `snapshot`, one after another. `Err` when the
/// pod template itself is invalid (a bad selector), naming the rule.
pub fn fit(
    snapshot: &Snapshot,
    workload: &Workload,
    options: FitOptions,
    config: &Config,
) -> Result<FitAnswer, String> {
    let replicas = options.replicas.unwrap_or(workload.replicas);
    let spec = &workload.template.spec;
    let may_preempt = spec.preemption_policy.as_deref() != Some("Never");
    let mut run = Run {
        view: match &workload.owner {
            Some(o) => snapshot.with_selector_owner(o.kind == "StatefulSet", o.object.clone()),
            None => snapshot.clone(),
        },
        non_zero: vec![None; snapshot.nodes().len()],
        answer: FitAnswer {
            workload: workload.title(),
            priority: workload.template.priority(),
            priority_class_name: spec.priority_class_name.clone(),
            preemption_policy: spec.preemption_policy.clone().unwrap_or_default(),
            preempt: options.preempt.unwrap_or(may_preempt),
            replicas,
            placed: 0,
            placed_by_preemption: 0,
            unplaced: 0,
            nodes: Vec::new(),
            zones: Vec::new(),
            placements: Vec::new(),
            first_unschedulable: None,
            first_unplaced: None,
            victims: Vec::new(),
            dra_extended_resources: Vec::new(),
        },
    };
    for i in 0..replicas {
        let number = workload.first + i;
        let pod = workload.replica(number, &run.view);
        let e = explain(&run.view, &pod, config);
        if let Some(error) = &e.error {
            return Err(format!("{}: {error}", workload.title()));
        }
        if i == 0 {
            run.answer
                .dra_extended_resources
                .clone_from(&e.dra_extended_resources);
        }
        let placed = if e.feasible > 0 {
            run.place_best(number, pod, &e);
            true
        } else {
            let why = run.unschedulable(number, &pod, &e);
            let first = run
                .answer
                .first_unschedulable
                .get_or_insert_with(|| why.clone());
            let later = first.replica != number;
            let placed = run.answer.preempt && run.place_by_preemption(number, pod, &e);
            if !placed && later {
                run.answer.first_unplaced = Some(why);
            }
            placed
        };
        if !placed {
            // The next replica is the same pod on the same view: it fits
            // nowhere either.
            run.answer.unplaced = replicas - i;
            break;
        }
    }
    Ok(run.finish())
}

/// The view as the replicas so far changed it, and the answer so far.
struct Run {
    view: Snapshot,
    /// Per node, its pods' non-zero cpu and memory once computed.
    non_zero: Vec<Option<(i64, i64)>>,
    answer: FitAnswer,
}

impl Run {
    fn non_zero_at(&mut self, idx: usize) -> (i64, i64) {
        let view = &self.view;
        *self.non_zero[idx].get_or_insert_with(|| score::node_non_zero(&view.nodes()[idx].pods))
    }

    /// Score the feasible nodes of `e` and put `pod` on the best.
    fn place_best(&mut self, number: u32, pod: Pod, e: &Explanation) {
        let feasible: Vec<usize> = (0..e.nodes.len())
            .filter(|&i| e.nodes[i].scores.is_some())
            .collect();
        let used: Vec<(i64, i64)> = feasible.iter().map(|&i| self.non_zero_at(i)).collect();
        let nodes = self.view.nodes();
        let inputs: Vec<_> = feasible
            .iter()
            .zip(&used)
            .map(|(&i, used)| (&nodes[i], *used, e.nodes[i].scores.as_ref().unwrap()))
            .collect();
        let ask = score::PodAsk::of(&pod);
        let scores = score::score_nodes(&inputs, &ask);
        let names = feasible.iter().map(|&i| e.nodes[i].node.as_str());
        let best = score::pick(names.zip(scores.iter().map(|s| s.total)))
            .expect("feasible nodes were scored");
        let idx = feasible[best];
        let node_score = scores[best].clone();
        self.put(number, pod, idx, Vec::new(), e.feasible, Some(node_score));
    }

    /// Why `pod` fits on no node, as FailedScheduling and preemption say it.
    fn unschedulable(&self, number: u32, pod: &Pod, e: &Explanation) -> Unschedulable {
        let preemption = match (&e.preemption, self.answer.preempt) {
            (Some(p), true) => Some(p.message.clone()),
            _ => None,
        };
        Unschedulable {
            replica: number,
            pod: pod.metadata.key(),
            summary: e.summary.clone(),
            nodes: e
                .nodes
                .iter()
                .filter_map(|n| {
                    Some(NodeReason {
                        node: n.node.clone(),
                        result: n.result,
                        reason: n.reason.clone()?,
                    })
                })
                .collect(),
            preemption,
        }
    }

    /// Evict the victims on the node preemption nominates and put `pod`
    /// there; false when preemption helps nowhere.
    fn place_by_preemption(&mut self, number: u32, pod: Pod, e: &Explanation) -> bool {
        let Some(outlook) = &e.preemption else {
            return false;
        };
        let Some(node) = &outlook.nominate else {
            return false;
        };
        let Some(candidate) = outlook.candidates.iter().find(|c| &c.node == node) else {
            return false;
        };
        let Some(idx) = self.view.node_idx(node) else {
            return false;
        };
        let mut evicted = Vec::with_capacity(candidate.victims.len());
        for key in &candidate.victims {
            let (namespace, name) = key.split_once('/').unwrap_or(("", key));
            let priority = self
                .view
                .pod(namespace, name)
                .map_or(0, |r| r.pod.priority());
            self.answer.victims.push(Victim {
                pod: key.clone(),
                node: node.clone(),
                priority,
                breaks_pdb: candidate.pdb_violating.contains(key),
                for_replica: number,
            });
            evicted.push(PodChange::delete(namespace, name));
        }
        self.answer.placed_by_preemption += 1;
        self.put(number, pod, idx as usize, evicted, 0, None);
        true
    }

    /// `pod` bound to the node at `idx`, after `evicted` are gone.
    fn put(
        &mut self,
        number: u32,
        mut pod: Pod,
        idx: usize,
        mut changes: Vec<PodChange>,
        feasible: usize,
        score: Option<NodeScore>,
    ) {
        let node = Arc::clone(&self.view.nodes()[idx].node);
        pod.spec.node_name = node.name().to_string();
        pod.status.phase = "Pending".into();
        let key = pod.metadata.key();
        let ask = score::PodAsk::of(&pod);
        changes.push(PodChange::upsert(Arc::new(pod)));
        let evicted = changes.len() > 1;
        self.view = self.view.with_pod_changes(&changes);
        self.non_zero[idx] = match (evicted, self.non_zero[idx]) {
            (false, Some((cpu, memory))) => {
                let (pc, pm) = ask.non_zero();
                Some((cpu + pc, memory + pm))
            }
            _ => None,
        };
        self.answer.placed += 1;
        self.answer.placements.push(Placement {
            replica: number,
            pod: key,
            node: node.name().to_string(),
            zone: zone_of(&node),
            feasible,
            score,
            preempted: evicted,
        });
    }

    fn finish(mut self) -> FitAnswer {
        let mut nodes: BTreeMap<&str, u32> = BTreeMap::new();
        let mut zones: BTreeMap<&str, u32> = BTreeMap::new();
        for p in &self.answer.placements {
            *nodes.entry(&p.node).or_default() += 1;
            *zones.entry(&p.zone).or_default() += 1;
        }
        let counts = |m: BTreeMap<&str, u32>| -> Vec<Count> {
            m.into_iter()
                .map(|(name, replicas)| Count {
                    name: name.to_string(),
                    replicas,
                })
                .collect()
        };
        let (nodes, zones) = (counts(nodes), counts(zones));
        self.answer.nodes = nodes;
        self.answer.zones = zones;
        self.answer
    }
}

#[cfg(test)]
mod tests;

fn zone_of(node: &crate::model::Node) -> String {
    node.metadata
        .labels
        .get(ZONE_LABEL)
        .cloned()
        .unwrap_or_else(|| "-".into())
}
