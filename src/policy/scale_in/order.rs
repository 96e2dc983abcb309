//! ActivePodsWithRanks: the order in which a ReplicaSet controller deletes
//! pods when it scales in, and which rule put each pod before the next.
//!
//! A pod goes first when the first rule that tells two pods apart says so:
//! unassigned; earlier phase (Pending < Unknown < Running); not ready;
//! lower pod-deletion-cost; more related pods on its node (rank); ready
//! more recently; more container restarts (regular containers, then
//! sidecars as a tie-break); created more recently. Times
//! are compared in log2 buckets of their age, and two different times in the
//! same bucket are decided by the smaller UID, which ends the comparison.

use std::cmp::Ordering;

use jiff::Timestamp;

use crate::model::Pod;
use crate::model::meta::POD_DELETION_COST;

/// A pod with what the comparison reads, computed once.
#[derive(Debug, Clone)]
pub struct Ranked<'a> {
    pub pod: &'a Pod,
    pub rank: usize,
    pub cost: i32,
    phase: u8,
    ready: bool,
    ready_since: Aged,
    created: Aged,
    restarts: i32,
    sidecar_restarts: i32,
}

/// A time with its log2 age bucket at the request's "now", computed once
/// per pod rather than in every comparison.
#[derive(Debug, Clone, Copy)]
struct Aged {
    at: Option<Timestamp>,
    bucket: i64,
}

impl Aged {
    fn new(at: Option<Timestamp>, now: Timestamp) -> Self {
        Self {
            at,
            bucket: at.map_or(-1, |t| age_bucket(t, now)),
        }
    }
}

impl<'a> Ranked<'a> {
    /// `pod` with its rank, its times bucketed by age at `now`.
    pub fn new(pod: &'a Pod, rank: usize, now: Timestamp) -> Self {
        let ready = pod.is_ready();
        Self {
            pod,
            rank,
            cost: deletion_cost(pod),
            phase: phase_ordinal(&pod.status.phase),
            ready,
            ready_since: Aged::new(
                pod.condition("Ready")
                    .filter(|_| ready)
                    .and_then(|c| c.last_transition_time),
                now,
            ),
            created: Aged::new(pod.metadata.creation_timestamp, now),
            restarts: pod
                .status
                .container_statuses
                .iter()
                .map(|c| c.restart_count)
                .max()
                .unwrap_or(0),
            sidecar_restarts: sidecar_restarts(pod),
        }
    }

    /// Rules 1–3 (unassigned, phase, readiness) as a key: smaller goes first.
    /// No deletion cost can move a pod across these.
    pub fn class(&self) -> (bool, u8, bool) {
        (!self.pod.spec.node_name.is_empty(), self.phase, self.ready)
    }
}

/// The rule that ordered two pods, with the values it compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    Unassigned,
    Phase(String, String),
    NotReady,
    DeletionCost(i32, i32),
    Rank(usize, usize),
    ReadyTime,
    ReadyTimeUid,
    Restarts(i32, i32),
    SidecarRestarts(i32, i32),
    CreationTime,
    CreationUid,
}

impl Rule {
    /// `rule: detail`, the `reason` answered for a victim.
    pub fn describe(&self) -> String {
        match self {
            Rule::Unassigned => "unassigned: not scheduled to a node".into(),
            Rule::Phase(a, b) => format!("phase: {} before {}", phase_name(a), phase_name(b)),
            Rule::NotReady => "readiness: not ready".into(),
            Rule::DeletionCost(a, b) => format!("podDeletionCost: {a} < {b}"),
            Rule::Rank(a, b) => format!("rank: {a} related pods on its node > {b}"),
            Rule::ReadyTime => "readyTime: ready more recently".into(),
            Rule::ReadyTimeUid => {
                "readyTimeUID: ready times in the same log2 age bucket, smaller UID".into()
            }
            Rule::Restarts(a, b) => format!("restarts: {a} > {b} container restarts"),
            Rule::SidecarRestarts(a, b) => {
                format!("sidecarRestarts: {a} > {b} sidecar container restarts")
            }
            Rule::CreationTime => "creationTime: created more recently".into(),
            Rule::CreationUid => {
                "creationUID: creation times in the same log2 age bucket, smaller UID".into()
            }
        }
    }
}

fn phase_name(p: &str) -> &str {
    if p.is_empty() { "(no phase)" } else { p }
}

/// Pending 0, Unknown 1, Running 2; anything else counts as Pending.
fn phase_ordinal(phase: &str) -> u8 {
    match phase {
        "Unknown" => 1,
        "Running" => 2,
        _ => 0,
    }
}

/// `controller.kubernetes.io/pod-deletion-cost` as the controller reads it:
/// an int32 in plain decimal; "+1", "007", " 1" or garbage count as 0.
pub fn deletion_cost(pod: &Pod) -> i32 {
    pod.metadata
        .annotations
        .get(POD_DELETION_COST)
        .and_then(|v| parse_deletion_cost(v))
        .unwrap_or(0)
}

/// The most restarts of a sidecar (an init container with `restartPolicy:
/// Always`), upstream `maxContainerRestarts`' second value (1.32, PR
/// 124952): plain init containers do not count.
fn sidecar_restarts(pod: &Pod) -> i32 {
    pod.status
        .init_container_statuses
        .iter()
        .filter(|s| {
            pod.spec
                .init_containers
                .iter()
                .any(|c| c.name == s.name && c.restart_policy.as_deref() == Some("Always"))
        })
        .map(|s| s.restart_count)
        .max()
        .unwrap_or(0)
}

pub fn parse_deletion_cost(value: &str) -> Option<i32> {
    let first_ok = match value.as_bytes().first()? {
        b'-' | b'1'..=b'9' => true,
        b'0' => value == "0",
        _ => false,
    };
    if !first_ok {
        return None;
    }
    value.parse::<i32>().ok()
}

/// Which of `a` and `b` the controller deletes first and why; `None` when
/// no rule tells them apart (their order is then unspecified).
pub fn compare(a: &Ranked, b: &Ranked) -> Option<(Ordering, Rule)> {
    let (pa, pb) = (a.pod, b.pod);
    let a_unassigned = pa.spec.node_name.is_empty();
    if a_unassigned != pb.spec.node_name.is_empty() {
        return Some((first_if(a_unassigned), Rule::Unassigned));
    }
    if a.phase != b.phase {
        let (x, y) = ordered(a.phase < b.phase, &pa.status.phase, &pb.status.phase);
        return Some((
            first_if(a.phase < b.phase),
            Rule::Phase(x.clone(), y.clone()),
        ));
    }
    if a.ready != b.ready {
        return Some((first_if(!a.ready), Rule::NotReady));
    }
    if a.cost != b.cost {
        let (x, y) = ordered(a.cost < b.cost, &a.cost, &b.cost);
        return Some((first_if(a.cost < b.cost), Rule::DeletionCost(*x, *y)));
    }
    if a.rank != b.rank {
        let (x, y) = ordered(a.rank > b.rank, &a.rank, &b.rank);
        return Some((first_if(a.rank > b.rank), Rule::Rank(*x, *y)));
    }
    if a.ready && b.ready && a.ready_since.at != b.ready_since.at {
        return newer_first(a.ready_since, b.ready_since, pa, pb).map(|(o, by_uid)| {
            (
                o,
                if by_uid {
                    Rule::ReadyTimeUid
                } else {
                    Rule::ReadyTime
                },
            )
        });
    }
    if a.restarts != b.restarts {
        let (x, y) = ordered(a.restarts > b.restarts, &a.restarts, &b.restarts);
        return Some((first_if(a.restarts > b.restarts), Rule::Restarts(*x, *y)));
    }
    if a.sidecar_restarts != b.sidecar_restarts {
        let more = a.sidecar_restarts > b.sidecar_restarts;
        let (x, y) = ordered(more, &a.sidecar_restarts, &b.sidecar_restarts);
        return Some((first_if(more), Rule::SidecarRestarts(*x, *y)));
    }
    if a.created.at != b.created.at {
        return newer_first(a.created, b.created, pa, pb).map(|(o, by_uid)| {
            (
                o,
                if by_uid {
                    Rule::CreationUid
                } else {
                    Rule::CreationTime
                },
            )
        });
    }
    None
}

fn first_if(a_first: bool) -> Ordering {
    if a_first {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

/// The pair with the value of the pod that goes first in front.
fn ordered<'t, T>(a_first: bool, a: &'t T, b: &'t T) -> (&'t T, &'t T) {
    if a_first { (a, b) } else { (b, a) }
}

/// For two different times: newer first, a missing time before any time;
/// ages in the same log2 bucket are decided by the smaller UID, and equal
/// UIDs leave the pods unordered (`None`). The bool says the UID decided.
fn newer_first(ta: Aged, tb: Aged, pa: &Pod, pb: &Pod) -> Option<(Ordering, bool)> {
    match (ta.at, tb.at) {
        (None, _) => Some((Ordering::Less, false)),
        (_, None) => Some((Ordering::Greater, false)),
        (Some(_), Some(_)) => {
            let diff = ta.bucket - tb.bucket;
            if diff != 0 {
                return Some((first_if(diff < 0), false));
            }
            let (ua, ub) = (&pa.metadata.uid, &pb.metadata.uid);
            (ua != ub).then(|| (first_if(ua < ub), true))
        }
    }
}

/// floor(log2(age in ns)), or -1 for a time not in the past.
fn age_bucket(t: Timestamp, now: Timestamp) -> i64 {
    let age = now.as_nanosecond() - t.as_nanosecond();
    if age > 0 {
        (age as f64).log2() as i64
    } else {
        -1
    }
}

/// Stable merge sort by `compare`, which need not be a total order (the
/// UID tie-break inside a bucket is not transitive); never panics. Runs
/// are merged as positions between two buffers, so a sort allocates three
/// vectors whatever the number of pods.
pub fn sort(pods: &mut Vec<Ranked>) {
    let goes_first = |a: &Ranked, b: &Ranked| matches!(compare(a, b), Some((Ordering::Less, _)));
    let n = pods.len();
    let mut from: Vec<usize> = (0..n).collect();
    let mut to: Vec<usize> = vec![0; n];
    let mut width = 1;
    while width < n {
        for start in (0..n).step_by(2 * width) {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut l, mut r) = (start, mid);
            for slot in &mut to[start..end] {
                let take_right =
                    r < end && (l == mid || goes_first(&pods[from[r]], &pods[from[l]]));
                let side = if take_right { &mut r } else { &mut l };
                *slot = from[*side];
                *side += 1;
            }
        }
        std::mem::swap(&mut from, &mut to);
        width *= 2;
    }
    let mut slots: Vec<Option<Ranked>> = std::mem::take(pods).into_iter().map(Some).collect();
    *pods = from.iter().filter_map(|&i| slots[i].take()).collect();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: &str = "2024-06-01T00:00:00Z";

    fn now() -> Timestamp {
        NOW.parse().unwrap()
    }

    /// A pod from the fields the comparison reads.
    fn pod(uid: &str, fields: serde_json::Value) -> Pod {
        let f = |k: &str| fields.get(k).cloned().unwrap_or(serde_json::Value::Null);
        let ready = f("ready");
        let conditions = match ready {
            serde_json::Value::Null => json!([]),
            serde_json::Value::Bool(r) => {
                json!([{"type": "Ready", "status": if r { "True" } else { "False" }}])
            }
            since => json!([{"type": "Ready", "status": "True", "lastTransitionTime": since}]),
        };
        let cost = f("cost");
        let annotations = if cost.is_null() {
            json!({})
        } else {
            json!({ POD_DELETION_COST: cost })
        };
        serde_json::from_value(json!({
            "metadata": {"name": uid, "uid": uid, "annotations": annotations,
                         "creationTimestamp": f("created")},
            "spec": {"nodeName": f("node").as_str().unwrap_or(""),
                     "initContainers": [{"name": "setup"}, {"name": "proxy", "restartPolicy": "Always"}]},
            "status": {"phase": f("phase").as_str().unwrap_or(""),
                       "conditions": conditions,
                       "containerStatuses": f("restarts").as_array().cloned().unwrap_or_default()
                           .into_iter().map(|n| json!({"name": "c", "restartCount": n})).collect::<Vec<_>>(),
                       "initContainerStatuses": [
                           {"name": "setup", "restartCount": f("initRestarts").as_i64().unwrap_or(0)},
                           {"name": "proxy", "restartCount": f("sidecarRestarts").as_i64().unwrap_or(0)}]}
        }))
        .unwrap()
    }

    fn running(uid: &str, extra: serde_json::Value) -> Pod {
        let mut base = json!({"node": "n1", "phase": "Running", "ready": true});
        if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                b.insert(k.clone(), v.clone());
            }
        }
        pod(uid, base)
    }

    fn first(a: &Pod, ra: usize, b: &Pod, rb: usize) -> Option<(Ordering, Rule)> {
        compare(&Ranked::new(a, ra, now()), &Ranked::new(b, rb, now()))
    }

    #[test]
    fn deletion_cost_parsing_table() {
        let cases = [
            ("0", Some(0)),
            ("5", Some(5)),
            ("-5", Some(-5)),
            ("-007", Some(-7)),
            ("2147483647", Some(i32::MAX)),
            ("-2147483648", Some(i32::MIN)),
            ("2147483648", None),
            ("+10", None),
            ("007", None),
            ("00", None),
            (" 1", None),
            ("", None),
            ("1.5", None),
            ("-", None),
            ("abc", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_deletion_cost(text), want, "{text:?}");
        }
    }

    #[test]
    fn comparison_table() {
        // Situations from ActivePodsWithRanks' test rows: each pair differs
        // in exactly the rule named, and `a` goes first.
        let cases: Vec<(&str, Pod, usize, Pod, usize, Rule)> = vec![
            (
                "unassigned before assigned",
                pod("z", json!({"phase": "Running"})),
                0,
                running("a", json!({})),
                0,
                Rule::Unassigned,
            ),
            (
                "pending before running",
                pod("z", json!({"node": "n1", "phase": "Pending"})),
                0,
                running("a", json!({})),
                0,
                Rule::Phase("Pending".into(), "Running".into()),
            ),
            (
                "unknown before running",
                pod("z", json!({"node": "n1", "phase": "Unknown"})),
                0,
                running("a", json!({})),
                0,
                Rule::Phase("Unknown".into(), "Running".into()),
            ),
            (
                "an unexpected phase counts as pending",
                pod("z", json!({"node": "n1", "phase": "Weird"})),
                0,
                pod("a", json!({"node": "n1", "phase": "Unknown"})),
                0,
                Rule::Phase("Weird".into(), "Unknown".into()),
            ),
            (
                "not ready before ready",
                running("z", json!({"ready": false})),
                0,
                running("a", json!({})),
                0,
                Rule::NotReady,
            ),
            (
                "lower deletion cost first",
                running("z", json!({"cost": "-1"})),
                0,
                running("a", json!({"cost": "10"})),
                0,
                Rule::DeletionCost(-1, 10),
            ),
            (
                "an invalid deletion cost counts as zero",
                running("z", json!({"cost": "+10"})),
                0,
                running("a", json!({"cost": "1"})),
                0,
                Rule::DeletionCost(0, 1),
            ),
            (
                "cost before rank",
                running("z", json!({"cost": "1"})),
                0,
                running("a", json!({"cost": "2"})),
                5,
                Rule::DeletionCost(1, 2),
            ),
            (
                "more related pods on the node first",
                running("z", json!({})),
                3,
                running("a", json!({})),
                1,
                Rule::Rank(3, 1),
            ),
            (
                "rank before readiness time",
                running("z", json!({"ready": "1975-01-01T00:00:00Z"})),
                2,
                running("a", json!({"ready": "2024-05-31T00:00:00Z"})),
                1,
                Rule::Rank(2, 1),
            ),
            (
                "ready more recently first",
                running("z", json!({"ready": "2024-05-31T00:00:00Z"})),
                0,
                running("a", json!({"ready": "1975-01-01T00:00:00Z"})),
                0,
                Rule::ReadyTime,
            ),
            (
                "a ready pod without transition time goes first",
                running("z", json!({"ready": true})),
                0,
                running("a", json!({"ready": "2024-05-31T00:00:00Z"})),
                0,
                Rule::ReadyTime,
            ),
            (
                "ready times in the same bucket: smaller uid first, restarts not consulted",
                running(
                    "a",
                    json!({"ready": "2020-01-01T00:00:00Z", "restarts": [0]}),
                ),
                0,
                running(
                    "b",
                    json!({"ready": "2020-01-01T00:00:01Z", "restarts": [9]}),
                ),
                0,
                Rule::ReadyTimeUid,
            ),
            (
                "more restarts first, max over containers",
                running("z", json!({"restarts": [0, 4]})),
                0,
                running("a", json!({"restarts": [3, 3]})),
                0,
                Rule::Restarts(4, 3),
            ),
            (
                // compareMaxContainerRestarts (controller_utils.go, 1.32+).
                "equal regular restarts: more sidecar restarts first",
                running("z", json!({"restarts": [1], "sidecarRestarts": 5})),
                0,
                running("a", json!({"restarts": [1]})),
                0,
                Rule::SidecarRestarts(5, 0),
            ),
            (
                "regular restarts decide before sidecar restarts",
                running("z", json!({"restarts": [2]})),
                0,
                running("a", json!({"restarts": [1], "sidecarRestarts": 9})),
                0,
                Rule::Restarts(2, 1),
            ),
            (
                "plain init container restarts do not count: creation time decides",
                running("z", json!({"created": "2024-05-31T00:00:00Z"})),
                0,
                running(
                    "a",
                    json!({"initRestarts": 7, "created": "1975-01-01T00:00:00Z"}),
                ),
                0,
                Rule::CreationTime,
            ),
            (
                "created more recently first",
                running("z", json!({"created": "2024-05-31T00:00:00Z"})),
                0,
                running("a", json!({"created": "1975-01-01T00:00:00Z"})),
                0,
                Rule::CreationTime,
            ),
            (
                "creation in the same bucket: smaller uid first",
                running("a", json!({"created": "2020-01-01T00:00:01Z"})),
                0,
                running("b", json!({"created": "2020-01-01T00:00:00Z"})),
                0,
                Rule::CreationUid,
            ),
        ];
        for (name, a, ra, b, rb, rule) in cases {
            assert_eq!(
                first(&a, ra, &b, rb),
                Some((Ordering::Less, rule.clone())),
                "{name}"
            );
            assert_eq!(
                first(&b, rb, &a, ra).map(|x| x.0),
                Some(Ordering::Greater),
                "{name} reversed"
            );
        }
    }

    #[test]
    fn identical_pods_have_no_order() {
        let a = running("a", json!({"created": "2020-01-01T00:00:00Z"}));
        let b = running("b", json!({"created": "2020-01-01T00:00:00Z"}));
        assert_eq!(first(&a, 1, &b, 1), None);
    }

    /// The pods' names in the order `sort` puts them (all rank 0).
    fn sorted_names(pods: &[Pod]) -> Vec<&str> {
        let mut ranked: Vec<Ranked> = pods.iter().map(|p| Ranked::new(p, 0, now())).collect();
        sort(&mut ranked);
        ranked
            .iter()
            .map(|r| r.pod.metadata.name.as_str())
            .collect()
    }

    #[test]
    fn sort_puts_pods_in_deletion_order() {
        let pods = [
            running("ready-old", json!({"ready": "1975-01-01T00:00:00Z"})),
            pod("pending", json!({"node": "n1", "phase": "Pending"})),
            running("cheap", json!({"cost": "-100"})),
            pod("unassigned", json!({"phase": "Pending"})),
            running("not-ready", json!({"ready": false})),
        ];
        assert_eq!(
            sorted_names(&pods),
            ["unassigned", "pending", "not-ready", "cheap", "ready-old"]
        );
    }

    #[test]
    fn sort_is_stable_across_uneven_runs() {
        // 37 pods (runs of 1, 2, 4... with a short last one), five costs:
        // equal pods keep their input order, as a stable sort by cost would.
        let pods: Vec<Pod> = (0..37)
            .map(|i| {
                running(
                    &format!("p{i:02}"),
                    json!({"cost": ((i * 7) % 5).to_string()}),
                )
            })
            .collect();
        let got = sorted_names(&pods);
        let mut want: Vec<&Pod> = pods.iter().collect();
        want.sort_by_key(|p| deletion_cost(p));
        let want: Vec<&str> = want.iter().map(|p| p.metadata.name.as_str()).collect();
        assert_eq!(got, want);
    }

    /// ActivePodsWithRanks' own rows: pods without UIDs, times relative to
    /// now (zero = absent).
    #[test]
    fn upstream_rows_rank_and_time_buckets() {
        let ago = |secs: i64| -> Option<String> {
            Some(
                Timestamp::from_second(now().as_second() - secs)
                    .unwrap()
                    .to_string(),
            )
        };
        let month = 30 * 24 * 3600;
        let p = |name: &str,
                 node: &str,
                 phase: &str,
                 ready: bool,
                 restarts: i32,
                 since: Option<String>,
                 created: Option<String>,
                 cost: Option<&str>|
         -> Pod {
            let mut v = json!({"node": node, "phase": phase, "created": created, "cost": cost});
            if ready {
                v["ready"] = since.map_or(json!(true), |s| json!(s));
                v["restarts"] = json!([restarts]);
            } else {
                v["ready"] = json!(false);
            }
            let mut pod = pod(name, v);
            pod.metadata.uid.clear();
            pod
        };
        let unscheduled = p("unscheduled", "", "Pending", false, 0, None, None, None);
        let pending = p("pending", "node", "Pending", false, 0, None, None, None);
        let unknown = p(
            "unknown-phase",
            "node",
            "Unknown",
            false,
            0,
            None,
            None,
            None,
        );
        let not_ready = p("not-ready", "node", "Running", false, 0, None, None, None);
        let ready_no_ltt = p("ready-no-ltt", "node", "Running", true, 0, None, None, None);
        let ready_now = p(
            "ready-now",
            "node",
            "Running",
            true,
            0,
            ago(0),
            ago(0),
            None,
        );
        let ready_then = p(
            "ready-then",
            "node",
            "Running",
            true,
            0,
            ago(month),
            ago(month),
            None,
        );
        let high_restarts = p(
            "ready-high-restarts",
            "node",
            "Running",
            true,
            9001,
            ago(0),
            ago(0),
            None,
        );
        let created_then = p(
            "ready-now-created-then",
            "node",
            "Running",
            true,
            0,
            ago(0),
            ago(month),
            None,
        );
        let low_cost = p(
            "low-cost",
            "node",
            "Running",
            true,
            0,
            ago(0),
            ago(month),
            Some("10"),
        );
        let high_cost = p(
            "high-cost",
            "node",
            "Running",
            true,
            0,
            ago(0),
            ago(month),
            Some("100"),
        );
        let unscheduled_5h = p(
            "u5",
            "",
            "Pending",
            false,
            0,
            ago(5 * 3600),
            ago(5 * 3600),
            None,
        );
        let unscheduled_8h = p(
            "u8",
            "",
            "Pending",
            false,
            0,
            ago(8 * 3600),
            ago(8 * 3600),
            None,
        );
        let ready_2h = p(
            "r2",
            "",
            "Running",
            true,
            0,
            ago(2 * 3600),
            ago(month),
            None,
        );
        let ready_5h = p(
            "r5",
            "",
            "Running",
            true,
            0,
            ago(5 * 3600),
            ago(month),
            None,
        );
        let ready_8h = p(
            "r8",
            "",
            "Running",
            true,
            0,
            ago(8 * 3600),
            ago(month),
            None,
        );

        for (a, b) in [
            (&unscheduled, &unscheduled),
            (&ready_now, &ready_now),
            (&created_then, &created_then),
            (&unscheduled_5h, &unscheduled_8h),
            (&ready_5h, &ready_8h),
        ] {
            assert_eq!(
                first(a, 1, b, 1),
                None,
                "{} ~ {}",
                a.metadata.name,
                b.metadata.name
            );
        }
        let lesser = [
            (&unscheduled, 1, &pending, 2),
            (&unscheduled, 2, &pending, 1),
            (&pending, 1, &unknown, 2),
            (&unknown, 1, &not_ready, 2),
            (&not_ready, 1, &ready_no_ltt, 1),
            (&ready_no_ltt, 1, &ready_now, 1),
            (&ready_now, 2, &ready_no_ltt, 1),
            (&ready_now, 1, &ready_then, 1),
            (&ready_now, 2, &ready_then, 1),
            (&high_restarts, 1, &ready_now, 1),
            (&ready_now, 2, &high_restarts, 1),
            (&ready_now, 1, &created_then, 1),
            (&created_then, 2, &ready_now, 1),
            (&low_cost, 2, &high_cost, 1),
            (&ready_2h, 1, &ready_5h, 1),
        ];
        for (a, ra, b, rb) in lesser {
            let name = format!("{}({ra}) < {}({rb})", a.metadata.name, b.metadata.name);
            assert_eq!(
                first(a, ra, b, rb).map(|x| x.0),
                Some(Ordering::Less),
                "{name}"
            );
            assert_eq!(
                first(b, rb, a, ra).map(|x| x.0),
                Some(Ordering::Greater),
                "{name}"
            );
        }
    }
}
