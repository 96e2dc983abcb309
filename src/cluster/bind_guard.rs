//! Which bindings kube-arbiter agrees to make with its own ServiceAccount's
//! `pods/binding` right. Even a caller that passed the TLS guard may only
//! bind a pod that exists, is not bound (or assumed) yet, belongs to a
//! scheduler this kube-arbiter serves and has the UID the request names, to
//! a node that exists: defence in depth against a confused deputy
//! (docs/security.md). What the view has not shown yet is judged again on
//! the API server's copy (`api::bind`), by the same rules.

use super::BindRequest;
use super::Snapshot;
use crate::model::Pod;

/// The schedulerName the API server gives a pod that names none.
const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// What the view alone says about a binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InView {
    Allowed,
    /// Refused whatever the view lags behind: no UID, already bound (or
    /// assumed), a scheduler this kube-arbiter does not serve.
    Refused(String),
    /// The view lacks what a refusal would rest on: the pod, the pod with
    /// this UID (the view may hold an older pod of that name), or the
    /// node. `reason` is the view's refusal, for when nobody can be asked
    /// (a state file is the whole cluster).
    Unseen {
        pod: bool,
        node: bool,
        reason: String,
    },
}

/// `req` judged on `snapshot` (the current view, assumed bindings
/// included).
pub fn judge_in_view(snapshot: &Snapshot, req: &BindRequest, served: &[String]) -> InView {
    let key = req.key();
    if req.uid.is_empty() {
        return InView::Refused(format!("binding of {key} names no PodUID"));
    }
    let node = snapshot.node_idx(&req.node).is_none();
    let unseen = |reason| InView::Unseen {
        pod: true,
        node,
        reason,
    };
    let Some(found) = snapshot.pod(&req.namespace, &req.name) else {
        return unseen(format!("pod {key} is not in the cluster view"));
    };
    if let Some(reason) = uid_refusal(&found.pod, req) {
        return unseen(reason);
    }
    if let Some(reason) = placement_refusal(&found.pod, found.node.is_some(), req, served) {
        return InView::Refused(reason);
    }
    if node {
        return InView::Unseen {
            pod: false,
            node,
            reason: format!("node {} is not in the cluster view", req.node),
        };
    }
    InView::Allowed
}

/// Why `req` must not bind `pod` as the API server has it now (`None`:
/// there is no such pod); `None` when it may.
pub fn fresh_pod_refusal(
    pod: Option<&Pod>,
    req: &BindRequest,
    served: &[String],
) -> Option<String> {
    let Some(pod) = pod else {
        return Some(format!(
            "pod {} does not exist (the API server has no such pod)",
            req.key()
        ));
    };
    uid_refusal(pod, req).or_else(|| placement_refusal(pod, false, req, served))
}

/// Why `req` must not bind to its node as the API server has it now.
pub fn fresh_node_refusal(exists: bool, req: &BindRequest) -> Option<String> {
    (!exists).then(|| {
        format!(
            "node {} does not exist (the API server has no such node)",
            req.node
        )
    })
}

fn uid_refusal(pod: &Pod, req: &BindRequest) -> Option<String> {
    (pod.metadata.uid != req.uid).then(|| {
        format!(
            "pod {} has UID {}, the binding names {}",
            req.key(),
            pod.metadata.uid,
            req.uid
        )
    })
}

/// Already bound (`bound_in_view`: the view places it, an assumption
/// included), or a scheduler this kube-arbiter does not serve.
fn placement_refusal(
    pod: &Pod,
    bound_in_view: bool,
    req: &BindRequest,
    served: &[String],
) -> Option<String> {
    let on = pod.spec.node_name.as_str();
    if bound_in_view || !on.is_empty() {
        return Some(format!("pod {} is already bound to {on}", req.key()));
    }
    let scheduler = match pod.spec.scheduler_name.as_str() {
        "" => DEFAULT_SCHEDULER,
        name => name,
    };
    if !served.iter().any(|s| s == scheduler) {
        return Some(format!(
            "pod {} names schedulerName {scheduler:?}, which this kube-arbiter does not serve (--scheduler-name: {})",
            req.key(),
            served.join(", ")
        ));
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
            judge_in_view(&s, &req("victim", "u-victim", "n2"), &served()),
            InView::Allowed
        );
        // No schedulerName in the object: the API server's default.
        assert_eq!(
            judge_in_view(&s, &req("nameless", "u-nameless", "n2"), &served()),
            InView::Allowed
        );
    }

    #[test]
    fn what_the_view_decides_is_refused_naming_it() {
        let s = view();
        let cases = [
            (req("victim", "", "n2"), "names no PodUID"),
            (req("running", "u-running", "n2"), "already bound to n1"),
            (req("other", "u-other", "n2"), "\"gpu-scheduler\""),
        ];
        for (r, reason) in cases {
            match judge_in_view(&s, &r, &served()) {
                InView::Refused(got) => assert!(got.contains(reason), "{r:?}: {got:?}"),
                other => panic!("{r:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn what_the_view_may_not_have_seen_yet_is_left_to_the_api_server() {
        let s = view();
        let cases = [
            (
                req("ghost", "u", "n2"),
                (true, false),
                "not in the cluster view",
            ),
            (
                req("ghost", "u", "n9"),
                (true, true),
                "not in the cluster view",
            ),
            (
                req("victim", "u-new", "n2"),
                (true, false),
                "has UID u-victim",
            ),
            (
                req("victim", "u-victim", "n9"),
                (false, true),
                "node n9 is not in the cluster view",
            ),
        ];
        for (r, (pod, node), reason) in cases {
            match judge_in_view(&s, &r, &served()) {
                InView::Unseen {
                    pod: p,
                    node: n,
                    reason: got,
                } => {
                    assert_eq!((p, n), (pod, node), "{r:?}");
                    assert!(got.contains(reason), "{r:?}: {got:?}");
                }
                other => panic!("{r:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_api_servers_copy_meets_the_same_rules() {
        let fresh = |name, uid, node, scheduler| -> Pod {
            serde_json::from_value(pod(name, uid, node, scheduler)).unwrap()
        };
        let new = fresh("new", "u-new", "", None);
        assert_eq!(
            fresh_pod_refusal(Some(&new), &req("new", "u-new", "n2"), &served()),
            None
        );
        let cases = [
            (None, req("ghost", "u", "n2"), "does not exist"),
            (
                Some(new.clone()),
                req("new", "u-old", "n2"),
                "has UID u-new",
            ),
            (
                Some(fresh("b", "u-b", "n1", None)),
                req("b", "u-b", "n2"),
                "already bound to n1",
            ),
            (
                Some(fresh("g", "u-g", "", Some("gpu-scheduler"))),
                req("g", "u-g", "n2"),
                "\"gpu-scheduler\"",
            ),
        ];
        for (pod, r, reason) in cases {
            let got = fresh_pod_refusal(pod.as_ref(), &r, &served()).unwrap_or_default();
            assert!(got.contains(reason), "{r:?}: {got:?}");
        }
        let r = req("new", "u-new", "n9");
        assert_eq!(fresh_node_refusal(true, &r), None);
        assert!(
            fresh_node_refusal(false, &r)
                .unwrap()
                .contains("node n9 does not exist")
        );
    }
}
