//! The webhooks' wire behaviour, driven through `review_pod` /
//! `review_priority_class` on raw bodies: patches applied with json-patch,
//! denials, bad bodies, readiness. Without an API server (no
//! `AppState::reads`) a review never waits, so each is driven to its end
//! on the calling thread.

use std::sync::Arc;

use axum::http::StatusCode;
use base64::Engine;
use serde_json::{Value, json};

use super::*;
use crate::cluster::{ClusterObjects, ClusterView, Snapshot};
use crate::config::Config;

fn review_pod(state: &AppState, body: &[u8]) -> Result<Vec<u8>, ApiError> {
    futures::executor::block_on(super::review_pod(state, body))
}

fn review_priority_class(state: &AppState, body: &[u8]) -> Result<Vec<u8>, ApiError> {
    futures::executor::block_on(super::review_priority_class(state, body))
}

fn classes() -> Vec<PriorityClass> {
    [
        json!({"metadata":{"name":"high-priority"},"value":1_000_000,"preemptionPolicy":"PreemptLowerPriority"}),
        json!({"metadata":{"name":"default-priority"},"value":1000,"globalDefault":true,"preemptionPolicy":"PreemptLowerPriority"}),
        json!({"metadata":{"name":"low-priority"},"value":-10,"preemptionPolicy":"Never"}),
    ]
    .into_iter()
    .map(|v| serde_json::from_value(v).unwrap())
    .collect()
}

pub(super) fn ready_state() -> AppState {
    let view = Arc::new(ClusterView::new());
    view.publish(Snapshot::build(ClusterObjects {
        priority_classes: classes(),
        ..Default::default()
    }));
    AppState::new(view, Config::default())
}

fn unready_state() -> AppState {
    AppState::new(Arc::new(ClusterView::new()), Config::default())
}

pub(super) fn review(operation: &str, resource: Value, object: Value, old: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": resource,
            "namespace": "shop",
            "operation": operation,
            "object": object,
            "oldObject": old,
        }
    }))
    .unwrap()
}

fn pods() -> Value {
    json!({"group": "", "version": "v1", "resource": "pods"})
}

fn pod_review(operation: &str, pod: Value) -> Vec<u8> {
    review(operation, pods(), pod, Value::Null)
}

fn pod(spec_extra: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "web", "image": "nginx:1.27",
        "resources": {"requests": {"cpu": "100m"}}}]});
    spec.as_object_mut()
        .unwrap()
        .extend(spec_extra.as_object().unwrap().clone());
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}},
           "spec": spec})
}

pub(super) fn response(body: &[u8]) -> Value {
    let review: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    assert_eq!(
        review["response"]["uid"],
        "705ab4f5-6393-11e8-b7cc-42010a800002"
    );
    review["response"].clone()
}

/// The pod after applying the answer's patch (unchanged when there is none).
pub(super) fn patched(object: &Value, response: &Value) -> Value {
    let mut object = object.clone();
    if let Some(patch) = response["patch"].as_str() {
        assert_eq!(response["patchType"], "JSONPatch");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .unwrap();
        let ops: json_patch::Patch = serde_json::from_slice(&bytes).unwrap();
        json_patch::patch(&mut object, &ops).unwrap();
    } else {
        assert!(response.get("patchType").is_none(), "{response}");
    }
    object
}

fn ops(response: &Value) -> Vec<Value> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(response["patch"].as_str().unwrap())
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn create_pods_get_their_class_fields() {
    struct Case {
        name: &'static str,
        spec: Value,
        class: Value,
        priority: i64,
        policy: &'static str,
    }
    let cases = [
        Case {
            name: "named class",
            spec: json!({"priorityClassName": "high-priority"}),
            class: json!("high-priority"),
            priority: 1_000_000,
            policy: "PreemptLowerPriority",
        },
        Case {
            name: "no class: the default class is written back",
            spec: json!({}),
            class: json!("default-priority"),
            priority: 1000,
            policy: "PreemptLowerPriority",
        },
        Case {
            name: "class with Never",
            spec: json!({"priorityClassName": "low-priority"}),
            class: json!("low-priority"),
            priority: -10,
            policy: "Never",
        },
        Case {
            name: "built-in system class missing from the view",
            spec: json!({"priorityClassName": "system-node-critical"}),
            class: json!("system-node-critical"),
            priority: 2_000_001_000,
            policy: "PreemptLowerPriority",
        },
        Case {
            name: "empty class name counts as none and is replaced",
            spec: json!({"priorityClassName": ""}),
            class: json!("default-priority"),
            priority: 1000,
            policy: "PreemptLowerPriority",
        },
        Case {
            name: "null fields are replaced",
            spec: json!({"priorityClassName": "high-priority", "priority": null, "preemptionPolicy": null}),
            class: json!("high-priority"),
            priority: 1_000_000,
            policy: "PreemptLowerPriority",
        },
    ];
    let state = ready_state();
    for case in cases {
        let object = pod(case.spec.clone());
        let answer = response(&review_pod(&state, &pod_review("CREATE", object.clone())).unwrap());
        assert_eq!(answer["allowed"], true, "{}: {answer}", case.name);
        let after = patched(&object, &answer);
        assert_eq!(
            after["spec"]["priorityClassName"], case.class,
            "{}",
            case.name
        );
        assert_eq!(after["spec"]["priority"], case.priority, "{}", case.name);
        assert_eq!(
            after["spec"]["preemptionPolicy"], case.policy,
            "{}",
            case.name
        );
        // Everything else is exactly as submitted.
        assert_eq!(
            after["spec"]["containers"], object["spec"]["containers"],
            "{}",
            case.name
        );
        assert_eq!(after["metadata"], object["metadata"], "{}", case.name);
    }
}

#[test]
fn patch_adds_missing_fields_and_replaces_present_ones() {
    let state = ready_state();
    let answer = response(
        &review_pod(
            &state,
            &pod_review(
                "CREATE",
                pod(json!({"priorityClassName": "", "priority": null})),
            ),
        )
        .unwrap(),
    );
    assert_eq!(
        ops(&answer),
        vec![
            json!({"op": "replace", "path": "/spec/priorityClassName", "value": "default-priority"}),
            json!({"op": "replace", "path": "/spec/priority", "value": 1000}),
            json!({"op": "add", "path": "/spec/preemptionPolicy", "value": "PreemptLowerPriority"}),
        ]
    );
}

#[test]
fn pod_without_spec_gets_the_whole_spec_member() {
    let state = ready_state();
    let object = json!({"metadata": {"name": "bare"}});
    let answer = response(&review_pod(&state, &pod_review("CREATE", object.clone())).unwrap());
    let after = patched(&object, &answer);
    assert_eq!(
        after["spec"],
        json!({"priorityClassName": "default-priority", "priority": 1000,
               "preemptionPolicy": "PreemptLowerPriority"})
    );
}

#[test]
fn an_already_resolved_pod_gets_no_patch() {
    let state = ready_state();
    let body = pod_review(
        "CREATE",
        pod(
            json!({"priorityClassName": "high-priority", "priority": 1_000_000,
                    "preemptionPolicy": "PreemptLowerPriority"}),
        ),
    );
    let answer = response(&review_pod(&state, &body).unwrap());
    assert_eq!(
        answer,
        json!({"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": true})
    );
}

#[test]
fn create_denials_name_the_pod_and_the_rule() {
    let cases = [
        (
            "unknown class",
            pod(json!({"priorityClassName": "gold"})),
            403,
            "Forbidden",
            r#"pods "web-1" is forbidden: no PriorityClass with name gold was found"#,
        ),
        (
            "conflicting priority",
            pod(json!({"priorityClassName": "high-priority", "priority": 5})),
            403,
            "Forbidden",
            r#"pods "web-1" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000000 from the given PriorityClass name"#,
        ),
        (
            "conflicting preemption policy",
            pod(
                json!({"priorityClassName": "low-priority", "preemptionPolicy": "PreemptLowerPriority"}),
            ),
            403,
            "Forbidden",
            r#"pods "web-1" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name"#,
        ),
        (
            "controller pods are named by generateName",
            json!({"metadata": {"generateName": "web-7d9f5-", "namespace": "shop"},
                   "spec": {"priorityClassName": "gold"}}),
            403,
            "Forbidden",
            r#"pods "web-7d9f5-" is forbidden: no PriorityClass with name gold was found"#,
        ),
        (
            "wrong field type in the pod",
            pod(json!({"priority": "high"})),
            400,
            "BadRequest",
            "request.object is not a valid Pod: invalid type: string \"high\", expected i32",
        ),
        (
            "wrong type for spec",
            json!({"metadata": {"name": "x"}, "spec": "small"}),
            400,
            "BadRequest",
            "request.object is not a valid Pod: invalid type: string \"small\", expected struct PodSpecPriority",
        ),
        (
            "object missing",
            Value::Null,
            400,
            "BadRequest",
            "request.object is missing",
        ),
    ];
    let state = ready_state();
    for (name, object, code, reason, message) in cases {
        let answer = response(&review_pod(&state, &pod_review("CREATE", object)).unwrap());
        assert_eq!(answer["allowed"], false, "{name}");
        assert!(answer.get("patch").is_none(), "{name}");
        assert_eq!(answer["status"]["code"], code, "{name}");
        assert_eq!(answer["status"]["reason"], reason, "{name}");
        let got = answer["status"]["message"].as_str().unwrap();
        assert!(got.starts_with(message), "{name}: {got}");
    }
}

#[test]
fn update_copies_dropped_fields_from_the_old_pod() {
    let state = ready_state();
    let old = pod(json!({"priorityClassName": "low-priority", "priority": -10,
                          "preemptionPolicy": "Never"}));
    let new = pod(json!({"priorityClassName": "low-priority"}));
    let answer =
        response(&review_pod(&state, &review("UPDATE", pods(), new.clone(), old.clone())).unwrap());
    assert_eq!(answer["allowed"], true);
    let after = patched(&new, &answer);
    assert_eq!(after["spec"]["priority"], -10);
    assert_eq!(after["spec"]["preemptionPolicy"], "Never");

    // Nothing dropped: no patch, and no resolution (a class that no longer
    // exists does not matter on update).
    let gone =
        pod(json!({"priorityClassName": "gone", "priority": 7, "preemptionPolicy": "Never"}));
    let answer =
        response(&review_pod(&state, &review("UPDATE", pods(), gone.clone(), gone)).unwrap());
    assert_eq!(answer["allowed"], true);
    assert!(answer.get("patch").is_none());
}

#[test]
fn requests_this_webhook_does_not_judge_are_allowed_untouched() {
    let state = ready_state();
    let unknown_class = pod(json!({"priorityClassName": "gold"}));
    let mut binding = review("CREATE", pods(), unknown_class.clone(), Value::Null);
    let mut v: Value = serde_json::from_slice(&binding).unwrap();
    v["request"]["subResource"] = json!("binding");
    binding = serde_json::to_vec(&v).unwrap();
    let bodies = [
        ("subresource", binding),
        (
            "delete",
            review("DELETE", pods(), Value::Null, unknown_class.clone()),
        ),
        (
            "other resource",
            review(
                "CREATE",
                json!({"group": "apps", "version": "v1", "resource": "deployments"}),
                json!({}),
                Value::Null,
            ),
        ),
    ];
    for (name, body) in bodies {
        let answer = response(&review_pod(&state, &body).unwrap());
        assert_eq!(
            answer,
            json!({"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": true}),
            "{name}"
        );
    }
}

#[test]
fn dry_run_gets_the_same_answer() {
    let state = ready_state();
    let body = pod_review("CREATE", pod(json!({})));
    let mut v: Value = serde_json::from_slice(&body).unwrap();
    v["request"]["dryRun"] = json!(true);
    let dry = serde_json::to_vec(&v).unwrap();
    assert_eq!(
        review_pod(&state, &dry).unwrap(),
        review_pod(&state, &body).unwrap()
    );
}

#[test]
fn bodies_that_are_not_v1_reviews_are_400s() {
    let cases: [(&str, &[u8], &str); 7] = [
        ("not JSON", b"hello", "request body is not valid JSON: expected value at line 1 column 1"),
        ("truncated JSON", b"{\"kind\":", "request body is not valid JSON: EOF while parsing a value"),
        ("a JSON string", br#""review""#, "request body is not an AdmissionReview: invalid type: string"),
        ("another object", br#"{"kind":"Pod","apiVersion":"v1"}"#, r#"request body is not an AdmissionReview: kind is "Pod", apiVersion "v1""#),
        (
            "v1beta1",
            br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","request":{}}"#,
            r#"AdmissionReview apiVersion "admission.k8s.io/v1beta1" is not supported: kube-arbiter answers admission.k8s.io/v1 only"#,
        ),
        ("no request", br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}"#, "AdmissionReview has no request"),
        (
            "request without uid",
            br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"operation":"CREATE"}}"#,
            "AdmissionReview request is malformed: missing field `uid`",
        ),
    ];
    let state = ready_state();
    for (name, body, message) in cases {
        let err = review_pod(&state, body).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST, "{name}");
        assert!(err.message.starts_with(message), "{name}: {}", err.message);
        let err = review_priority_class(&state, body).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST, "{name}");
    }
}

#[test]
fn before_the_view_is_ready_creates_get_503_and_updates_pass() {
    let state = unready_state();
    let err = review_pod(&state, &pod_review("CREATE", pod(json!({})))).unwrap_err();
    assert_eq!(err.status, StatusCode::SERVICE_UNAVAILABLE);
    let same = pod(json!({"priority": 1}));
    let answer =
        response(&review_pod(&state, &review("UPDATE", pods(), same.clone(), same)).unwrap());
    assert_eq!(answer["allowed"], true);
    let err = review_priority_class(
        &state,
        &class_review("CREATE", class_obj("x", 1, false), Value::Null),
    )
    .unwrap_err();
    assert_eq!(err.status, StatusCode::SERVICE_UNAVAILABLE);
}

#[test]
fn decisions_are_counted_by_result() {
    let state = ready_state();
    review_pod(&state, &pod_review("CREATE", pod(json!({})))).unwrap();
    review_pod(
        &state,
        &pod_review("CREATE", pod(json!({"priorityClassName": "gold"}))),
    )
    .unwrap();
    review_pod(
        &state,
        &pod_review("CREATE", pod(json!({"priorityClassName": "gold"}))),
    )
    .unwrap();
    review_priority_class(
        &state,
        &class_review("CREATE", class_obj("ok", 1, false), Value::Null),
    )
    .unwrap();
    let text = state.metrics.render(&state.view);
    assert!(
        text.contains(r#"kube_arbiter_admission_pod_decisions_total{result="patched"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"kube_arbiter_admission_pod_decisions_total{result="denied"} 2"#),
        "{text}"
    );
    assert!(
        text.contains(
            r#"kube_arbiter_admission_priorityclass_decisions_total{result="allowed"} 1"#
        ),
        "{text}"
    );
}

fn class_obj(name: &str, value: i64, global_default: bool) -> Value {
    json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
           "metadata": {"name": name}, "value": value, "globalDefault": global_default,
           "preemptionPolicy": "PreemptLowerPriority"})
}

fn class_review(operation: &str, object: Value, old: Value) -> Vec<u8> {
    review(
        operation,
        json!({"group": "scheduling.k8s.io", "version": "v1", "resource": "priorityclasses"}),
        object,
        old,
    )
}

#[test]
fn priority_class_reviews() {
    let state = ready_state();
    let cases = [
        (
            "valid class",
            class_review("CREATE", class_obj("batch-high", 500, false), Value::Null),
            None,
        ),
        (
            "reserved prefix",
            class_review(
                "CREATE",
                class_obj("system-important", 10, false),
                Value::Null,
            ),
            Some((
                422,
                "Invalid",
                r#"PriorityClass.scheduling.k8s.io "system-important" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-important is not a known system priority class"#,
            )),
        ),
        (
            "value too high",
            class_review(
                "CREATE",
                class_obj("huge", 1_000_000_001, false),
                Value::Null,
            ),
            Some((
                422,
                "Invalid",
                r#"PriorityClass.scheduling.k8s.io "huge" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000"#,
            )),
        ),
        (
            "second default",
            class_review("CREATE", class_obj("another-default", 5, true), Value::Null),
            Some((
                403,
                "Forbidden",
                r#"priorityclasses.scheduling.k8s.io "another-default" is forbidden: PriorityClass default-priority is already marked as default. Only one default can exist"#,
            )),
        ),
        (
            "value changed on update",
            class_review(
                "UPDATE",
                class_obj("high-priority", 7, false),
                class_obj("high-priority", 1_000_000, false),
            ),
            Some((
                422,
                "Invalid",
                r#"PriorityClass.scheduling.k8s.io "high-priority" is invalid: value: Forbidden: may not be changed in an update."#,
            )),
        ),
        (
            "description changed on update",
            class_review(
                "UPDATE",
                class_obj("high-priority", 1_000_000, false),
                class_obj("high-priority", 1_000_000, false),
            ),
            None,
        ),
        (
            "value out of int32 range",
            class_review(
                "CREATE",
                class_obj("huge", 3_000_000_000, false),
                Value::Null,
            ),
            Some((
                400,
                "BadRequest",
                "request.object is not a valid PriorityClass: invalid value: integer `3000000000`, expected i32",
            )),
        ),
        (
            "update without old object",
            class_review(
                "UPDATE",
                class_obj("high-priority", 1_000_000, false),
                Value::Null,
            ),
            Some((400, "BadRequest", "request.oldObject is missing")),
        ),
        (
            "pods are not judged here",
            pod_review("CREATE", pod(json!({"priorityClassName": "gold"}))),
            None,
        ),
    ];
    for (name, body, want) in cases {
        let answer = response(&review_priority_class(&state, &body).unwrap());
        assert!(answer.get("patch").is_none(), "{name}");
        match want {
            None => assert_eq!(answer["allowed"], true, "{name}: {answer}"),
            Some((code, reason, message)) => {
                assert_eq!(answer["allowed"], false, "{name}");
                assert_eq!(answer["status"]["code"], code, "{name}");
                assert_eq!(answer["status"]["reason"], reason, "{name}");
                let got = answer["status"]["message"].as_str().unwrap();
                assert!(got.starts_with(message), "{name}: {got}");
            }
        }
    }
}

/// Found by fuzzing: kube-apiserver's reviews are read the way Go reads
/// JSON, which skips what it does not decode without converting it. A
/// number out of range or bytes that are not UTF-8 in a part the webhook
/// skips must not make the review unreadable; where the webhook reads, they
/// are a clear 400.
#[test]
fn parts_the_webhook_skips_are_not_judged() {
    let object = pod(json!({"priorityClassName": "high-priority"}));
    let body = pod_review("CREATE", object.clone());
    let mut odd = br#"{"note": [1e99999, ""#.to_vec();
    odd.push(0xff);
    odd.extend_from_slice(br#""], "#);
    odd.extend_from_slice(&body[1..]);
    let answer = response(&review_pod(&ready_state(), &odd).unwrap());
    assert_eq!(answer["allowed"], true);
    assert_eq!(patched(&object, &answer)["spec"]["priority"], 1_000_000);

    let text = String::from_utf8(body).unwrap();
    let read = text.replacen(r#""uid":"#, r#""uid":1e99999,"x":"#, 1);
    let err = review_pod(&ready_state(), read.as_bytes()).unwrap_err();
    assert_eq!(err.status, StatusCode::BAD_REQUEST);
    assert!(err.message.contains("malformed"), "{}", err.message);
}

/// The one pass must answer every body exactly as the two-step decode
/// does (which answers every body the one pass refuses).
mod one_pass {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::{class_obj, pod, ready_state, review_pod, review_priority_class};
    use crate::api::admission::*;
    use crate::server::ApiError;

    /// Without an API server a review never asks for a read.
    fn answered(reviewed: Result<Reviewed<'_>, ApiError>) -> Result<Vec<u8>, ApiError> {
        reviewed.map(|r| match r {
            Reviewed::Answer(answer) => answer,
            Reviewed::Ask(_) => panic!("a review without an API server asked for a read"),
        })
    }
    use crate::wire::admission::{Decoded, PodPriorityFields};

    fn pick(choices: Vec<Option<Value>>) -> impl Strategy<Value = Option<Value>> {
        proptest::sample::select(choices)
    }

    fn objects() -> impl Strategy<Value = Option<Value>> {
        pick(vec![
            None,
            Some(Value::Null),
            Some(pod(json!({}))),
            Some(pod(
                json!({"priorityClassName": "high-priority", "priority": 7}),
            )),
            Some(pod(json!({"priority": "high"}))),
            Some(json!({"metadata": {"generateName": "web-"}, "spec": null})),
            Some(json!({"spec": "not an object"})),
            Some(class_obj("high-priority", 5, false)),
            Some(class_obj("second-default", 5, true)),
            Some(json!({"metadata": {"name": "x"}, "value": "high"})),
            Some(json!([1, 2])),
        ])
    }

    prop_compose! {
        fn bodies()(
            // Valid choices repeated: most bodies should reach the decision.
            version in pick(vec![None, Some(json!("admission.k8s.io/v1")),
                Some(json!("admission.k8s.io/v1")), Some(json!("admission.k8s.io/v1")),
                Some(json!("admission.k8s.io/v1beta1")), Some(json!(1))]),
            kind in pick(vec![None, Some(json!("AdmissionReview")), Some(json!("AdmissionReview")),
                Some(json!("AdmissionReview")), Some(json!("Pod"))]),
            resource in pick(vec![None, Some(json!({"group": "", "version": "v1", "resource": "pods"})),
                Some(json!({"group": "scheduling.k8s.io", "version": "v1", "resource": "priorityclasses"})),
                Some(json!({"resource": 5}))]),
            operation in pick(vec![None, Some(json!("CREATE")), Some(json!("UPDATE")),
                Some(json!("DELETE")), Some(json!(true))]),
            uid in pick(vec![None, Some(json!("u-1")), Some(json!("u-1")), Some(json!("quote\"d")),
                Some(json!(7))]),
            sub_resource in pick(vec![None, Some(json!("")), Some(json!("status"))]),
            object in objects(),
            old_object in objects(),
            request_null in prop::bool::weighted(0.1),
            tail in pick(vec![None, None, None, Some(json!(" ")), Some(json!(" x")),
                Some(json!("\u{0}"))]),
        ) -> Vec<u8> {
            let mut request = serde_json::Map::new();
            let mut put = |key: &str, value: Option<Value>| {
                if let Some(v) = value { request.insert(key.to_string(), v); }
            };
            put("uid", uid);
            put("kind", Some(json!({"group": "", "version": "v1", "kind": "Pod"})));
            put("resource", resource);
            put("subResource", sub_resource);
            put("namespace", Some(json!("shop")));
            put("operation", operation);
            put("object", object);
            put("oldObject", old_object);
            let mut review = serde_json::Map::new();
            if let Some(v) = version { review.insert("apiVersion".into(), v); }
            if let Some(k) = kind { review.insert("kind".into(), k); }
            let request = if request_null { Value::Null } else { Value::Object(request) };
            review.insert("request".into(), request);
            let mut body = serde_json::to_vec(&review).unwrap();
            if let Some(Value::String(t)) = tail { body.extend(t.as_bytes()); }
            body
        }
    }

    proptest! {
        #[test]
        fn one_pass_answers_as_the_two_step_decode(body in bodies()) {
            let state = ready_state();
            let in_steps = decode_request_in_steps(&body)
                .and_then(|r| answered(finish_pod(&state, Admitted::Pod, r, &Read::Nothing)));
            prop_assert_eq!(review_pod(&state, &body), in_steps);
            let in_steps = decode_request_in_steps(&body)
                .and_then(|r| answered(finish_priority_class(&state, r, &Read::Nothing)));
            prop_assert_eq!(review_priority_class(&state, &body), in_steps);
        }
    }

    #[test]
    fn the_example_reviews_are_read_in_one_pass() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/requests");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if !name.starts_with("admit-") {
                continue;
            }
            let body = std::fs::read(&path).unwrap();
            assert!(
                decode_in_one_pass::<Decoded<PodPriorityFields>>(&body).is_some(),
                "{name}"
            );
            seen += 1;
        }
        assert!(seen >= 6, "{seen} example reviews");
    }

    #[test]
    fn a_body_that_is_not_utf8_is_answered_by_the_two_step_decode() {
        let state = ready_state();
        let mut body = super::pod_review("CREATE", pod(json!({})));
        let at = body.windows(5).position(|w| w == b"web-1").unwrap();
        body[at] = 0xff;
        let err = review_pod(&state, &body).unwrap_err();
        assert_eq!(err, decode_request_in_steps(&body).unwrap_err());
    }
}

#[test]
fn the_hand_written_patch_is_what_serde_writes() {
    let op = |op, path, value| PatchOp { op, path, value };
    let cases = [
        vec![],
        vec![op("add", "/spec/priority", json!(-5))],
        vec![
            op(
                "replace",
                "/spec/priorityClassName",
                json!("high \"quoted\" é\ttab"),
            ),
            op("add", "/spec/priority", json!(1_000_000)),
            op("add", "/spec/preemptionPolicy", json!("Never")),
        ],
        vec![op(
            "add",
            "/spec",
            json!({"priorityClassName": "x", "priority": 7, "preemptionPolicy": null}),
        )],
    ];
    for ops in cases {
        assert_eq!(
            String::from_utf8(patch_json(&ops).unwrap()).unwrap(),
            serde_json::to_string(&ops).unwrap()
        );
    }
}

#[test]
fn the_hand_written_answer_is_the_v1_review_response() {
    let op = PatchOp {
        op: "add",
        path: "/spec/priority",
        value: json!(1000),
    };
    let patch = base64::engine::general_purpose::STANDARD
        .encode(serde_json::to_vec(std::slice::from_ref(&op)).unwrap());
    let denial = status(403, "Forbidden", "pods \"a\" is forbidden: \"x\"\n".into());
    let cases = [
        (Verdict::Allowed, json!({"uid": "u\"1", "allowed": true})),
        (Verdict::Ignored, json!({"uid": "u\"1", "allowed": true})),
        (
            Verdict::Patched(vec![op]),
            json!({"uid": "u\"1", "allowed": true, "patchType": "JSONPatch", "patch": patch}),
        ),
        (
            Verdict::Denied(denial),
            json!({"uid": "u\"1", "allowed": false, "status": {"status": "Failure", "code": 403,
                   "reason": "Forbidden", "message": "pods \"a\" is forbidden: \"x\"\n"}}),
        ),
    ];
    for (verdict, want) in cases {
        let bytes = encode("u\"1", verdict).unwrap();
        let got: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            got,
            json!({"apiVersion": ADMISSION_V1, "kind": ADMISSION_REVIEW, "response": want})
        );
    }
}
