//! Which bindings kube-arbiter agrees to make with its own ServiceAccount's
//! `pods/binding` right. Even a caller that passed the TLS guard may only
//! bind a pod that exists, is not bound (or assumed) yet, belongs to a
//! scheduler this kube-arbiter serves and has the UID the request names, to
//! a node that exists: defence in depth against a confused deputy
//! (docs/security.md).

use super::BindRequest;
use super::Snapshot;

/// The schedulerName the API server gives a pod that names none.
const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// Why `req` must not be bound, judged on `snapshot` (the current view,
/// assumed bindings included); `None` when it may be.
pub fn refusal(snapshot: &Snapshot, req: &BindRequest, served: &[String]) -> Option<String> {
    let key = format!("{}/{}", req.namespace, req.name);
    let Some(found) = snapshot.pod(&req.namespace, &req.name) else {
        return Some(format!("pod {key} is not in the cluster view"));
    };
    let pod = &found.pod;
    if req.uid.is_empty() {
        return Some(format!("binding of {key} names no PodUID"));
    }
    if pod.metadata.uid != req.uid {
        return Some(format!(
            "pod {key} has UID {}, the binding names {}",
            pod.metadata.uid, req.uid
        ));
    }
    let on = pod.spec.node_name.as_str();
    if found.node.is_some() || !on.is_empty() {
        return Some(format!("pod {key} is already bound to {on}"));
    }
    let scheduler = match pod.spec.scheduler_name.as_str() {
        "" => DEFAULT_SCHEDULER,
        name => name,
    };
    if !served.iter().any(|s| s == scheduler) {
        return Some(format!(
            "pod {key} names schedulerName {scheduler:?}, which this kube-arbiter does not serve (--scheduler-name: {})",
            served.join(", ")
        ));
    }
    if snapshot.node_idx(&req.node).is_none() {
        return Some(format!("node {} is not in the cluster view", req.node));
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::cluster::ClusterObjects;

    fn pod(name: &str, uid: &str, node: &str, scheduler: Option<&str>) -> Value {
        let mut spec = json!({"nodeName": node, "containers": []});
        if let Some(s) = scheduler {
            spec["schedulerName"] = s.into();
        }
        json!({"metadata": {"name": name, "namespace": "tenant-b", "uid": uid}, "spec": spec})
    }

    fn view() -> Snapshot {
        let node =
            |name: &str| serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        let pods = [
            pod("victim", "u-victim", "", Some("default-scheduler")),
            pod("nameless", "u-nameless", "", None),
            pod("running", "u-running", "n1", Some("default-scheduler")),
            pod("other", "u-other", "", Some("gpu-scheduler")),
        ];
        Snapshot::build(ClusterObjects {
            nodes: vec![node("n1"), node("n2")],
            pods: pods
                .into_iter()
                .map(|p| serde_json::from_value(p).unwrap())
                .collect(),
            ..Default::default()
        })
    }

    fn req(name: &str, uid: &str, node: &str) -> BindRequest {
        BindRequest {
            namespace: "tenant-b".into(),
            name: name.into(),
            uid: uid.into(),
            node: node.into(),
        }
    }

    fn served() -> Vec<String> {
        vec!["default-scheduler".into()]
    }

    #[test]
    fn a_pending_pod_of_a_served_scheduler_with_its_uid_may_be_bound() {
        let s = view();
        assert_eq!(
            refusal(&s, &req("victim", "u-victim", "n2"), &served()),
            None
        );
        // No schedulerName in the object: the API server's default.
        assert_eq!(
            refusal(&s, &req("nameless", "u-nameless", "n2"), &served()),
            None
        );
    }

    #[test]
    fn each_unmet_condition_is_refused_naming_it() {
        let s = view();
        let cases = [
            (req("ghost", "u", "n2"), "not in the cluster view"),
            (req("victim", "", "n2"), "names no PodUID"),
            (req("victim", "u-other", "n2"), "has UID u-victim"),
            (req("running", "u-running", "n2"), "already bound to n1"),
            (req("other", "u-other", "n2"), "\"gpu-scheduler\""),
            (
                req("victim", "u-victim", "n9"),
                "node n9 is not in the cluster view",
            ),
        ];
        for (r, reason) in cases {
            let got = refusal(&s, &r, &served()).unwrap_or_default();
            assert!(got.contains(reason), "{r:?}: {got:?}");
        }
    }
}
