//! The admission webhooks: `POST /admission/priority` (mutating, pods),
//! `POST /admission/podgroup-priority` and
//! `/admission/podgroup-priority-and-policy` (mutating, PodGroups, the
//! latter where kube-apiserver's `PodGroupPreemptionPolicy` gate is on) and
//! `POST /admission/priorityclass` (validating, PriorityClasses).
//!
//! Each decodes the AdmissionReview at the edge, hands the few fields that
//! matter to `policy::priority` / `policy::priority_class` with the current
//! snapshot, and encodes the answer: always HTTP 200 with the request's uid
//! once the body is a readable v1 AdmissionReview. Before that, a body that
//! is not one gets a 400 JSON error.
//!
//! Not ready: when a decision needs the cluster view and none is published
//! yet, the answer is HTTP 503 (JSON error), not a denial. kube-apiserver
//! treats a non-200 answer as a failed webhook call and applies the
//! webhook's `failurePolicy` (Fail: the request is refused with "failed
//! calling webhook"; Ignore: it goes on unmodified), so the operator's
//! choice decides what happens while kube-arbiter starts, whereas a denial
//! would refuse pods even under `Ignore`.
//!
//! The view lags the API server. A pod naming a class the view lacks, and
//! a new globalDefault class, are decided on what the API server reads now
//! (live mode; docs/live-source.md): the review is decided again with the
//! answer. A read that fails is an error answer (503), so the webhook's
//! `failurePolicy` decides, not a denial worded as if the class were
//! missing.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;
use serde_json::error::Category;
use serde_json::value::RawValue;

use crate::api::AppState;
use crate::cluster::live::ReadThrough;
use crate::model::PriorityClass;
use crate::policy::priority::{self, Denial, DenialCode, FieldsToSet, PodPriority, Subject};
use crate::policy::priority_class::{self, Classes};
use crate::server::metrics::ResultLabel;
use crate::server::{ApiError, WholeBody};
use crate::wire::admission::{
    ADMISSION_REVIEW, ADMISSION_V1, AdmissionRequest, Decoded, Field, PatchOp, PodPriorityFields,
    Review, ReviewEnvelope, Status,
};
use crate::wire::lexer::json_string;

/// `POST /admission/priority`.
pub async fn priority(State(state): State<AppState>, WholeBody(body): WholeBody) -> Response {
    respond(review_pod(&state, &body).await)
}

/// `POST /admission/podgroup-priority`: PodGroups get `spec.priority`
/// (kube-apiserver's `PodGroupPreemptionPolicy` gate off, as by default
/// in 1.37).
pub async fn pod_group_priority(
    State(state): State<AppState>,
    WholeBody(body): WholeBody,
) -> Response {
    let admitted = Admitted::PodGroup {
        preemption_policy: false,
    };
    respond(review(&state, &body, admitted).await)
}

/// `POST /admission/podgroup-priority-and-policy`: PodGroups get
/// `spec.priority` and `spec.preemptionPolicy` (that gate on).
pub async fn pod_group_priority_and_policy(
    State(state): State<AppState>,
    WholeBody(body): WholeBody,
) -> Response {
    let admitted = Admitted::PodGroup {
        preemption_policy: true,
    };
    respond(review(&state, &body, admitted).await)
}

/// `POST /admission/priorityclass`.
pub async fn priority_class(State(state): State<AppState>, WholeBody(body): WholeBody) -> Response {
    respond(review_priority_class(&state, &body).await)
}

fn respond(answer: Result<Vec<u8>, ApiError>) -> Response {
    match answer {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => e.into_response(),
    }
}

/// What a webhook answers, before encoding.
#[derive(Debug)]
enum Verdict {
    /// Not a request this webhook judges (other resource, subresource,
    /// operation): allowed untouched.
    Ignored,
    Allowed,
    Patched(Vec<PatchOp>),
    Denied(Status),
}

impl Verdict {
    fn result(&self) -> &'static str {
        match self {
            Self::Ignored => "ignored",
            Self::Allowed => "allowed",
            Self::Patched(_) => "patched",
            Self::Denied(_) => "denied",
        }
    }
}

/// What a review wants read from the API server before it decides.
enum Ask<'s> {
    /// The class a pod names, which the view lacks.
    Class(&'s ReadThrough, String),
    /// Every class: a globalDefault class is judged against the others.
    Classes(&'s ReadThrough),
}

/// What was read for a review; a review asks only while it has nothing.
enum Read {
    Nothing,
    Class(Option<Arc<PriorityClass>>),
    Classes(Arc<[PriorityClass]>),
}

impl Read {
    /// The answer to `ask`; a failed read is an error answer, not a
    /// denial.
    async fn of(ask: Ask<'_>) -> Result<Self, ApiError> {
        match ask {
            Ask::Class(reads, name) => (reads.priority_class(&name).await)
                .map(Self::Class)
                .map_err(|e| {
                    unavailable(format!(
                        "PriorityClass {name} is not in kube-arbiter's cluster view yet, and {e}"
                    ))
                }),
            Ask::Classes(reads) => {
                (reads.priority_classes().await)
                    .map(Self::Classes)
                    .map_err(|e| {
                        unavailable(format!(
                            "cannot list the PriorityClasses a new default is judged against: {e}"
                        ))
                    })
            }
        }
    }
}

/// The webhook's failurePolicy decides, not a denial.
fn unavailable(message: String) -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
}

/// A review decided, or what it needs read first.
enum Reviewed<'s> {
    Answer(Vec<u8>),
    Ask(Ask<'s>),
}

/// A decision, or what it needs read first.
enum Decided<'s> {
    Done(Decision),
    Ask(Ask<'s>),
}

impl From<Decision> for Decided<'_> {
    fn from(decision: Decision) -> Self {
        Self::Done(decision)
    }
}

/// One decision with what the log line names.
struct Decision {
    verdict: Verdict,
    /// `namespace/name` of a pod, the name of a PriorityClass.
    object: String,
    /// The class the decision is about.
    class: String,
}

impl Decision {
    fn ignored() -> Self {
        Self {
            verdict: Verdict::Ignored,
            object: String::new(),
            class: String::new(),
        }
    }
}

/// What a priority review resolves: pods (CREATE and UPDATE, upstream's
/// `admitPod`) or PodGroups (`scheduling.k8s.io`, CREATE only,
/// `admitPodGroup`), whose spec carries the same three fields, so both are
/// read as [`PodPriorityFields`] and decided by one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admitted {
    Pod,
    /// `preemption_policy`: kube-apiserver's `PodGroupPreemptionPolicy`
    /// gate, which the webhook's path tells.
    PodGroup {
        preemption_policy: bool,
    },
}

impl Admitted {
    fn matches(self, group: &str, resource: &str) -> bool {
        match self {
            Self::Pod => group.is_empty() && resource == "pods",
            Self::PodGroup { .. } => group == "scheduling.k8s.io" && resource == "podgroups",
        }
    }

    /// Upstream's `Admit` resolves pods on CREATE and UPDATE, PodGroups on
    /// CREATE (their priority fields are immutable).
    fn judges_updates(self) -> bool {
        self == Self::Pod
    }

    fn kind(self) -> &'static str {
        match self {
            Self::Pod => "Pod",
            Self::PodGroup { .. } => "PodGroup",
        }
    }

    /// The resource as kube-apiserver names it in a Forbidden message.
    fn resource(self) -> &'static str {
        match self {
            Self::Pod => "pods",
            Self::PodGroup { .. } => "podgroups.scheduling.k8s.io",
        }
    }

    /// The webhook the log line names.
    fn webhook(self) -> &'static str {
        match self {
            Self::Pod => "pod",
            Self::PodGroup { .. } => "podgroup",
        }
    }

    fn subject(self) -> Subject {
        match self {
            Self::Pod => Subject::Pod,
            Self::PodGroup { preemption_policy } => Subject::PodGroup { preemption_policy },
        }
    }
}

/// Decode, decide and encode one pod review (the mutating webhook); a
/// class the view lacks is read first (live mode), and the review decided
/// again with it.
pub async fn review_pod(state: &AppState, body: &[u8]) -> Result<Vec<u8>, ApiError> {
    review(state, body, Admitted::Pod).await
}

/// [`review_pod`] for what `admitted` names.
pub async fn review(
    state: &AppState,
    body: &[u8],
    admitted: Admitted,
) -> Result<Vec<u8>, ApiError> {
    let mut read = Read::Nothing;
    loop {
        let reviewed = match decode_in_one_pass::<Decoded<PodPriorityFields>>(body) {
            Some(request) => finish_pod(state, admitted, request, &read)?,
            None => finish_pod(state, admitted, decode_request_in_steps(body)?, &read)?,
        };
        match reviewed {
            Reviewed::Answer(answer) => return Ok(answer),
            Reviewed::Ask(ask) => read = Read::of(ask).await?,
        }
    }
}

fn finish_pod<'s, O: AdmittedObject<PodPriorityFields>>(
    state: &'s AppState,
    admitted: Admitted,
    mut request: AdmissionRequest<'_, O>,
    read: &Read,
) -> Result<Reviewed<'s>, ApiError> {
    let decision = match decide_pod(state, admitted, &mut request, read)? {
        Decided::Done(decision) => decision,
        Decided::Ask(ask) => return Ok(Reviewed::Ask(ask)),
    };
    let result = decision.verdict.result();
    let decisions = match admitted {
        Admitted::Pod => &state.metrics.pod_admissions,
        Admitted::PodGroup { .. } => &state.metrics.pod_group_admissions,
    };
    decisions.get_or_create(&ResultLabel { result }).inc();
    log_decision(admitted.webhook(), &request, &decision);
    encode(&request.uid, decision.verdict).map(Reviewed::Answer)
}

/// Decode, decide and encode one PriorityClass review (the validating
/// webhook); a globalDefault class is judged against the classes the API
/// server lists (live mode).
pub async fn review_priority_class(state: &AppState, body: &[u8]) -> Result<Vec<u8>, ApiError> {
    let mut read = Read::Nothing;
    loop {
        let reviewed = match decode_in_one_pass(body) {
            Some(request) => finish_priority_class(state, request, &read)?,
            None => finish_priority_class(state, decode_request_in_steps(body)?, &read)?,
        };
        match reviewed {
            Reviewed::Answer(answer) => return Ok(answer),
            Reviewed::Ask(ask) => read = Read::of(ask).await?,
        }
    }
}

fn finish_priority_class<'s>(
    state: &'s AppState,
    mut request: AdmissionRequest<'_>,
    read: &Read,
) -> Result<Reviewed<'s>, ApiError> {
    let decision = match decide_priority_class(state, &mut request, read)? {
        Decided::Done(decision) => decision,
        Decided::Ask(ask) => return Ok(Reviewed::Ask(ask)),
    };
    let result = decision.verdict.result();
    state
        .metrics
        .priority_class_admissions
        .get_or_create(&ResultLabel { result })
        .inc();
    log_decision("priorityclass", &request, &decision);
    encode(&request.uid, decision.verdict).map(Reviewed::Answer)
}

fn log_decision<O>(webhook: &str, request: &AdmissionRequest<'_, O>, decision: &Decision) {
    let result = decision.verdict.result();
    match &decision.verdict {
        Verdict::Ignored => tracing::debug!(
            webhook,
            uid = %request.uid,
            operation = %request.operation,
            resource = %request.resource.resource,
            sub_resource = %request.sub_resource,
            result,
            "admission request not judged by this webhook"
        ),
        Verdict::Denied(status) => tracing::info!(
            webhook,
            uid = %request.uid,
            operation = %request.operation,
            object = %decision.object,
            class = %decision.class,
            dry_run = request.dry_run,
            result,
            code = status.code,
            reason = %status.message,
            "admission denied"
        ),
        _ => tracing::info!(
            webhook,
            uid = %request.uid,
            operation = %request.operation,
            object = %decision.object,
            class = %decision.class,
            dry_run = request.dry_run,
            result,
            "admission allowed"
        ),
    }
}

/// A well-formed v1 review's request, read in one pass; `None` for any
/// body that pass refuses, which [`decode_request_in_steps`] reads again
/// to say what is wrong.
pub(super) fn decode_in_one_pass<'a, O: serde::Deserialize<'a> + Default>(
    body: &'a [u8],
) -> Option<AdmissionRequest<'a, O>> {
    // Checked once here, the text's strings need no check of their own.
    let text = std::str::from_utf8(body).ok()?;
    match serde_json::from_str::<Review<'a, O>>(text).ok()? {
        Review {
            api_version,
            kind,
            request: Some(request),
        } if kind == ADMISSION_REVIEW && api_version == ADMISSION_V1 => Some(request),
        _ => None,
    }
}

/// The v1 AdmissionReview's request, or a 400 saying what the body is not:
/// the envelope first, so that kind and version are told before the
/// request's shape is judged.
fn decode_request_in_steps(body: &[u8]) -> Result<AdmissionRequest<'_>, ApiError> {
    let envelope: ReviewEnvelope<'_> =
        serde_json::from_slice(body).map_err(|e| match e.classify() {
            Category::Data => {
                ApiError::bad_request(format!("request body is not an AdmissionReview: {e}"))
            }
            _ => ApiError::bad_request(format!("request body is not valid JSON: {e}")),
        })?;
    if envelope.kind != ADMISSION_REVIEW {
        return Err(ApiError::bad_request(format!(
            "request body is not an AdmissionReview: kind is {:?}, apiVersion {:?}",
            envelope.kind, envelope.api_version
        )));
    }
    if envelope.api_version != ADMISSION_V1 {
        return Err(ApiError::bad_request(format!(
            "AdmissionReview apiVersion {:?} is not supported: kube-arbiter answers \
             {ADMISSION_V1} only; set admissionReviewVersions: [\"v1\"] in the webhook \
             configuration",
            envelope.api_version
        )));
    }
    let raw = envelope
        .request
        .ok_or_else(|| ApiError::bad_request("AdmissionReview has no request"))?;
    serde_json::from_str(raw.get())
        .map_err(|e| ApiError::bad_request(format!("AdmissionReview request is malformed: {e}")))
}

/// The AdmissionReview answer. Its frame is fixed text, written as is:
/// encoding it field by field with serde (escaping every key) cost as much
/// as deciding the review. The uid and a denial's status are encoded by
/// serde_json; the patch is base64, which needs no escaping.
fn encode(uid: &str, verdict: Verdict) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(
        br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"#,
    );
    write_str(&mut out, uid)?;
    match verdict {
        Verdict::Ignored | Verdict::Allowed => out.extend_from_slice(br#","allowed":true"#),
        Verdict::Patched(ops) => {
            out.extend_from_slice(br#","allowed":true,"patchType":"JSONPatch","patch":""#);
            let patch = patch_json(&ops)?;
            let start = out.len();
            out.resize(start + patch.len().div_ceil(3) * 4, 0);
            let written = BASE64
                .encode_slice(&patch, &mut out[start..])
                .map_err(|e| encode_error(&e))?;
            out.truncate(start + written);
            out.push(b'"');
        }
        Verdict::Denied(status) => {
            out.extend_from_slice(br#","allowed":false,"status":"#);
            write_json(&mut out, &status)?;
        }
    }
    out.extend_from_slice(b"}}");
    Ok(out)
}

/// The JSONPatch: the bytes serde writes for `ops`, written member by
/// member (serde's derived encoding escaped every key, a third of the
/// answer's cost).
fn patch_json(ops: &[PatchOp]) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::with_capacity(64 * ops.len() + 2);
    out.push(b'[');
    for (i, op) in ops.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"op":"#);
        write_str(&mut out, op.op)?;
        out.extend_from_slice(br#","path":"#);
        write_str(&mut out, op.path)?;
        out.extend_from_slice(br#","value":"#);
        match &op.value {
            Value::String(text) => write_str(&mut out, text)?,
            other => write_json(&mut out, other)?,
        }
        out.push(b'}');
    }
    out.push(b']');
    Ok(out)
}

/// A JSON string: as is between quotes when nothing in it needs escaping
/// (uids, class names, the patch's op names and paths), else by serde.
fn write_str(out: &mut Vec<u8>, text: &str) -> Result<(), ApiError> {
    json_string::write_str(out, text).map_err(|e| encode_error(&e))
}

fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), ApiError> {
    serde_json::to_writer(out, value).map_err(|e| encode_error(&e))
}

fn encode_error(e: &dyn std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("cannot encode the admission response: {e}"),
    )
}

fn status(code: u16, reason: &'static str, message: String) -> Status {
    Status {
        status: "Failure",
        code,
        reason,
        message,
    }
}

fn bad_request(message: String) -> Verdict {
    Verdict::Denied(status(400, "BadRequest", message))
}

/// A policy denial worded as kube-apiserver words its own errors:
/// `<resource> "<name>" is forbidden: ...` (403, reason `Forbidden`) or
/// `<Kind.group> "<name>" is invalid: ...` (422, reason `Invalid`).
fn denied(resource: &str, kind: &str, name: &str, denial: Denial) -> Verdict {
    match denial.code {
        DenialCode::Forbidden => Verdict::Denied(status(
            403,
            "Forbidden",
            format!("{resource} {name:?} is forbidden: {}", denial.reason),
        )),
        DenialCode::Invalid => Verdict::Denied(status(
            422,
            "Invalid",
            format!("{kind} {name:?} is invalid: {}", denial.reason),
        )),
    }
}

/// The name upstream puts in messages: the request's, else the object's,
/// else its generateName (pods from controllers have no name yet).
fn message_name<'a, O>(
    request: &'a AdmissionRequest<'_, O>,
    name: &'a str,
    generate: &'a str,
) -> &'a str {
    [&*request.name, name, generate]
        .into_iter()
        .find(|n| !n.is_empty())
        .unwrap_or("Unknown")
}

fn decide_pod<'s, O: AdmittedObject<PodPriorityFields>>(
    state: &'s AppState,
    admitted: Admitted,
    request: &mut AdmissionRequest<'_, O>,
    read: &Read,
) -> Result<Decided<'s>, ApiError> {
    let ours = admitted.matches(&request.resource.group, &request.resource.resource);
    if !ours || !request.sub_resource.is_empty() {
        return Ok(Decision::ignored().into());
    }
    let update = match &*request.operation {
        "CREATE" => false,
        "UPDATE" if admitted.judges_updates() => true,
        _ => return Ok(Decision::ignored().into()),
    };
    let kind = admitted.kind();
    let pod = match request.object.take_decoded("request.object", kind) {
        Ok(pod) => pod,
        Err(verdict) => {
            return Ok(Decision {
                verdict,
                object: request_key(request),
                class: String::new(),
            }
            .into());
        }
    };
    let name = message_name(request, &pod.metadata.name, &pod.metadata.generate_name);
    let namespace = if request.namespace.is_empty() {
        pod.metadata.namespace.as_str()
    } else {
        &request.namespace
    };
    let object = log_name(|| format!("{namespace}/{name}"));
    let submitted = pod_priority(&pod);
    if update {
        let old = match request.old_object.take_decoded("request.oldObject", kind) {
            Ok(old) => old,
            Err(verdict) => {
                return Ok(Decision {
                    verdict,
                    object,
                    class: submitted.class_name.to_string(),
                }
                .into());
            }
        };
        let set = priority::preserve_on_update(&submitted, &pod_priority(&old));
        return Ok(Decision {
            verdict: patch_verdict(pod_patch(&pod, &set)),
            object,
            class: submitted.class_name.to_string(),
        }
        .into());
    }
    let snapshot = state.snapshot()?;
    let class = match read {
        Read::Class(class) => class.as_deref(),
        _ => match (&state.reads, priority::missing_class(&snapshot, &submitted)) {
            (Some(reads), Some(name)) => return Ok(Decided::Ask(Ask::Class(reads, name.into()))),
            _ => None,
        },
    };
    let decision = match priority::admit_create_as(admitted.subject(), &snapshot, &submitted, class)
    {
        Ok(resolved) => Decision {
            verdict: patch_verdict(pod_patch(&pod, &resolved.set)),
            object,
            class: resolved.class_name,
        },
        Err(denial) => Decision {
            verdict: denied(admitted.resource(), kind, name, denial),
            object,
            class: submitted.class_name.to_string(),
        },
    };
    Ok(decision.into())
}

fn request_key<O>(request: &AdmissionRequest<'_, O>) -> String {
    log_name(|| format!("{}/{}", request.namespace, request.name))
}

/// A name only the decision's log line shows, made only when that line
/// is written (info level): formatting it was a visible part of a review.
fn log_name(name: impl FnOnce() -> String) -> String {
    if tracing::enabled!(tracing::Level::INFO) {
        name()
    } else {
        String::new()
    }
}

fn patch_verdict(ops: Vec<PatchOp>) -> Verdict {
    if ops.is_empty() {
        Verdict::Allowed
    } else {
        Verdict::Patched(ops)
    }
}

/// An admitted object as its request carries it: raw JSON, decoded by the
/// webhook once it knows the object is its kind, or decoded with the
/// review in one pass.
trait AdmittedObject<T> {
    /// The object; a missing or malformed one is a 400 denial in an
    /// otherwise readable review.
    fn take_decoded(&mut self, field: &str, kind: &str) -> Result<T, Verdict>;
}

impl<'de, T: serde::Deserialize<'de>> AdmittedObject<T> for Option<&'de RawValue> {
    fn take_decoded(&mut self, field: &str, kind: &str) -> Result<T, Verdict> {
        let raw = self.ok_or_else(|| missing(field))?;
        serde_json::from_str(raw.get())
            .map_err(|e| bad_request(format!("{field} is not a valid {kind}: {e}")))
    }
}

impl<T> AdmittedObject<T> for Decoded<T> {
    fn take_decoded(&mut self, field: &str, _kind: &str) -> Result<T, Verdict> {
        self.0.take().ok_or_else(|| missing(field))
    }
}

fn missing(field: &str) -> Verdict {
    bad_request(format!("{field} is missing"))
}

fn pod_priority(pod: &PodPriorityFields) -> PodPriority<'_> {
    match pod.spec.value() {
        Some(spec) => PodPriority {
            class_name: spec.priority_class_name.value().map_or("", String::as_str),
            priority: spec.priority.value().copied(),
            preemption_policy: spec.preemption_policy.value().map(String::as_str),
        },
        None => PodPriority::default(),
    }
}

/// JSONPatch ops that give the submitted pod `set`: `add` for a field the
/// object lacks, `replace` for one it has (as `null` or a value); a pod
/// without `spec` gets the whole `spec` member.
fn pod_patch(pod: &PodPriorityFields, set: &FieldsToSet) -> Vec<PatchOp> {
    let wanted = [
        (
            "priorityClassName",
            "/spec/priorityClassName",
            set.class_name.clone().map(Value::from),
        ),
        ("priority", "/spec/priority", set.priority.map(Value::from)),
        (
            "preemptionPolicy",
            "/spec/preemptionPolicy",
            set.preemption_policy.clone().map(Value::from),
        ),
    ];
    let op = |present: bool| if present { "replace" } else { "add" };
    match &pod.spec {
        Field::Set(spec) => {
            let present = [
                spec.priority_class_name.is_present(),
                spec.priority.is_present(),
                spec.preemption_policy.is_present(),
            ];
            wanted
                .into_iter()
                .zip(present)
                .filter_map(|((_, path, value), present)| {
                    value.map(|value| PatchOp {
                        op: op(present),
                        path,
                        value,
                    })
                })
                .collect()
        }
        Field::Absent | Field::Null => {
            let spec: serde_json::Map<String, Value> = wanted
                .into_iter()
                .filter_map(|(key, _, value)| value.map(|v| (key.to_string(), v)))
                .collect();
            if spec.is_empty() {
                return Vec::new();
            }
            vec![PatchOp {
                op: op(pod.spec.is_present()),
                path: "/spec",
                value: Value::Object(spec),
            }]
        }
    }
}

fn decide_priority_class<'s>(
    state: &'s AppState,
    request: &mut AdmissionRequest<'_>,
    read: &Read,
) -> Result<Decided<'s>, ApiError> {
    let is_classes = request.resource.group == "scheduling.k8s.io"
        && request.resource.resource == "priorityclasses";
    if !is_classes || !request.sub_resource.is_empty() {
        return Ok(Decision::ignored().into());
    }
    let update = match &*request.operation {
        "CREATE" => false,
        "UPDATE" => true,
        _ => return Ok(Decision::ignored().into()),
    };
    let decision = |verdict: Verdict, class: &str| Decision {
        verdict,
        object: class.to_string(),
        class: class.to_string(),
    };
    let class: PriorityClass = match request
        .object
        .take_decoded("request.object", "PriorityClass")
    {
        Ok(class) => class,
        Err(verdict) => return Ok(decision(verdict, &request.name).into()),
    };
    let old: Option<Result<PriorityClass, Verdict>> = update.then(|| {
        request
            .old_object
            .take_decoded("request.oldObject", "PriorityClass")
    });
    let name = message_name(request, &class.metadata.name, "");
    let old = match old {
        Some(Ok(old)) => Some(old),
        Some(Err(verdict)) => return Ok(decision(verdict, name).into()),
        None => None,
    };
    let snapshot = state.snapshot()?;
    let classes = match read {
        Read::Classes(listed) => Classes::Listed(listed),
        _ => match &state.reads {
            Some(reads) if priority_class::needs_other_classes(&class) => {
                return Ok(Decided::Ask(Ask::Classes(reads)));
            }
            _ => Classes::View(&snapshot),
        },
    };
    let checked = match &old {
        Some(old) => priority_class::validate_update(classes, &class, old),
        None => priority_class::validate_create(classes, &class),
    };
    let verdict = match checked {
        Ok(()) => Verdict::Allowed,
        Err(denial) => denied(
            "priorityclasses.scheduling.k8s.io",
            "PriorityClass.scheduling.k8s.io",
            name,
            denial,
        ),
    };
    Ok(decision(verdict, name).into())
}

#[cfg(test)]
#[path = "admission_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "admission_pod_group_tests.rs"]
mod pod_group_tests;
