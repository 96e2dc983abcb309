//! The PodGroup priority webhook (`/admission/podgroup-priority` and
//! `-and-policy`) on raw AdmissionReviews, as kube-apiserver 1.37 sends
//! them for `scheduling.k8s.io/v1beta1` PodGroups. What it must match is
//! upstream's `admitPodGroup` (plugin/pkg/admission/priority/admission.go).

use serde_json::{Value, json};

use super::tests::{patched, ready_state, response, review};
use super::*;

fn review_group(admitted: Admitted, body: &[u8]) -> Value {
    let answer = futures::executor::block_on(super::review(&ready_state(), body, admitted));
    response(&answer.unwrap())
}

const GATE_OFF: Admitted = Admitted::PodGroup {
    preemption_policy: false,
};
const GATE_ON: Admitted = Admitted::PodGroup {
    preemption_policy: true,
};

fn pod_groups() -> Value {
    json!({"group": "scheduling.k8s.io", "version": "v1beta1", "resource": "podgroups"})
}

fn pod_group(spec_extra: Value) -> Value {
    let mut spec = json!({"schedulingPolicy": {"gang": {"minCount": 2}},
                          "disruptionMode": {"all": {}}});
    spec.as_object_mut()
        .unwrap()
        .extend(spec_extra.as_object().unwrap().clone());
    json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
           "metadata": {"name": "trainer", "namespace": "shop"},
           "spec": spec})
}

fn create(group: &Value) -> Vec<u8> {
    review("CREATE", pod_groups(), group.clone(), Value::Null)
}

/// A named class gives `spec.priority`; no class gives the globalDefault
/// class's name and value (`establishPriority`). The preemption policy is
/// left alone while `PodGroupPreemptionPolicy` is off.
#[test]
fn create_pod_groups_get_their_class_priority() {
    let named = pod_group(json!({"priorityClassName": "high-priority"}));
    let answer = review_group(GATE_OFF, &create(&named));
    assert_eq!(answer["allowed"], true);
    let spec = &patched(&named, &answer)["spec"];
    assert_eq!(spec["priority"], 1_000_000);
    assert_eq!(spec["priorityClassName"], "high-priority");
    assert!(spec.get("preemptionPolicy").is_none(), "{spec}");
    assert_eq!(spec["schedulingPolicy"]["gang"]["minCount"], 2);

    let unnamed = pod_group(json!({}));
    let spec = &patched(&unnamed, &review_group(GATE_OFF, &create(&unnamed)))["spec"];
    assert_eq!(spec["priority"], 1000);
    assert_eq!(spec["priorityClassName"], "default-priority");
}

/// With `PodGroupPreemptionPolicy` on (the `-and-policy` path) the class's
/// policy is set, and a different one the group carries is refused.
#[test]
fn the_policy_path_sets_and_checks_the_preemption_policy() {
    let group = pod_group(json!({"priorityClassName": "low-priority"}));
    let spec = &patched(&group, &review_group(GATE_ON, &create(&group)))["spec"];
    assert_eq!(spec["priority"], -10);
    assert_eq!(spec["preemptionPolicy"], "Never");

    let carrying = pod_group(
        json!({"priorityClassName": "low-priority", "preemptionPolicy": "PreemptLowerPriority"}),
    );
    let refused = review_group(GATE_ON, &create(&carrying));
    assert_eq!(refused["allowed"], false);
    assert_eq!(
        refused["status"]["message"],
        "podgroups.scheduling.k8s.io \"trainer\" is forbidden: the string value of \
         PreemptionPolicy (PreemptLowerPriority) must not be provided in pod group spec; \
         priority admission controller computed Never from the given PriorityClass name"
    );
    // Gate off: upstream neither checks nor sets it (and kube-apiserver
    // drops the field, `dropDisabledPreemptionPolicyField`).
    let allowed = review_group(GATE_OFF, &create(&carrying));
    assert_eq!(allowed["allowed"], true);
    assert_eq!(patched(&carrying, &allowed)["spec"]["priority"], -10);
}

/// Upstream's refusals, worded as kube-apiserver words a PodGroup's
/// (`admission.NewForbidden` on `podgroups.scheduling.k8s.io`).
#[test]
fn unknown_classes_and_other_priorities_are_refused_like_upstream() {
    for (group, message) in [
        (
            pod_group(json!({"priorityClassName": "gold"})),
            "podgroups.scheduling.k8s.io \"trainer\" is forbidden: no PriorityClass with name \
             gold was found",
        ),
        (
            pod_group(json!({"priorityClassName": "high-priority", "priority": 5})),
            "podgroups.scheduling.k8s.io \"trainer\" is forbidden: priority set in the pod group \
             (5) must match the priority computed (1000000) based on the priority class set in \
             the spec",
        ),
    ] {
        let answer = review_group(GATE_OFF, &create(&group));
        assert_eq!(answer["allowed"], false, "{group}");
        assert_eq!(answer["status"]["code"], 403);
        assert_eq!(answer["status"]["reason"], "Forbidden");
        assert_eq!(answer["status"]["message"], message);
    }
    // Equal to what the class gives: nothing to change (re-invocation).
    let equal = pod_group(json!({"priorityClassName": "high-priority", "priority": 1_000_000}));
    let answer = review_group(GATE_OFF, &create(&equal));
    assert_eq!(answer["allowed"], true);
    assert!(answer.get("patch").is_none(), "{answer}");
}

/// Upstream's `Admit` resolves PodGroups on CREATE only, skips
/// subresources, and the PodGroup paths judge no pod (and the pod path no
/// PodGroup): each is allowed untouched.
#[test]
fn updates_status_and_other_resources_are_not_judged() {
    let group = pod_group(json!({"priorityClassName": "gold"}));
    let update = review("UPDATE", pod_groups(), group.clone(), group.clone());
    assert_eq!(review_group(GATE_OFF, &update)["allowed"], true);
    assert!(review_group(GATE_OFF, &update).get("patch").is_none());

    let mut status: Value = serde_json::from_slice(&create(&group)).unwrap();
    status["request"]["subResource"] = json!("status");
    let status = serde_json::to_vec(&status).unwrap();
    assert!(review_group(GATE_OFF, &status).get("patch").is_none());
    assert_eq!(review_group(GATE_OFF, &status)["allowed"], true);

    let pod = json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "gold"}});
    let pods = json!({"group": "", "version": "v1", "resource": "pods"});
    let pod_review = review("CREATE", pods, pod, Value::Null);
    assert_eq!(review_group(GATE_OFF, &pod_review)["allowed"], true);
    let pod_path = futures::executor::block_on(review_pod(&ready_state(), &create(&group)));
    assert_eq!(response(&pod_path.unwrap())["allowed"], true);
}

/// Each decision is counted under the PodGroup webhook's own metric, so
/// an operator (and the real-cluster story) can tell it did the work.
#[test]
fn decisions_are_counted_apart_from_pods() {
    let state = ready_state();
    let group = pod_group(json!({"priorityClassName": "high-priority"}));
    futures::executor::block_on(super::review(&state, &create(&group), GATE_OFF)).unwrap();
    let patched = ResultLabel { result: "patched" };
    assert_eq!(
        state
            .metrics
            .pod_group_admissions
            .get_or_create(&patched)
            .get(),
        1
    );
    assert_eq!(
        state.metrics.pod_admissions.get_or_create(&patched).get(),
        0
    );
}
