//! What the fuzz targets share: the cluster views they decide on, loaded
//! through the same decoder the file source uses, and checks on the
//! answers every target encodes.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll, Waker};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use kube_arbiter::api::AppState;
use kube_arbiter::cluster::decode::decode;
use kube_arbiter::cluster::{ClusterView, Snapshot};
use kube_arbiter::config::Config;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// The demo cluster (6 nodes in 3 zones, pods with priorities, PDBs,
/// PriorityClasses, owners): the view the raw-bytes targets decide on.
pub static DEMO: LazyLock<Snapshot> =
    LazyLock::new(|| load(include_str!("../../examples/demo-cluster.yaml")));

pub static DEFAULTS: LazyLock<Config> = LazyLock::new(Config::default);

/// A review's answer: without an API server to read from, a webhook
/// decides in one poll; one that waits is a bug worth a crash.
pub fn decided<T>(review: impl Future<Output = T>) -> T {
    match pin!(review).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(answer) => answer,
        Poll::Pending => panic!("a review waited without an API server to read from"),
    }
}

/// A cluster-state text as `cluster::file::load` indexes it.
pub fn load(text: &str) -> Snapshot {
    let (objects, _ignored) = decode(text).expect("a fixed fuzz fixture decodes");
    Snapshot::build(objects)
}

/// An answer the server would send must be JSON; anything else means an
/// encoder wrote broken bytes.
pub fn assert_json(bytes: &[u8]) -> Value {
    match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => panic!(
            "an answer is not JSON ({e}): {}",
            String::from_utf8_lossy(bytes)
        ),
    }
}

/// The demo cluster behind an `AppState`, as the admission handlers get it.
pub static DEMO_STATE: LazyLock<AppState> = LazyLock::new(|| {
    let view = Arc::new(ClusterView::new());
    view.publish(load(include_str!("../../examples/demo-cluster.yaml")));
    AppState::new(view, Config::default())
});

/// A review answer must be a v1 AdmissionReview for the request's uid, and
/// its JSONPatch must apply to the submitted object as it stands (`add`
/// only where a field is absent, `replace` only where it is present).
pub fn check_review(body: &[u8], answer: &[u8]) {
    let answer = assert_json(answer);
    assert_eq!(answer["apiVersion"], "admission.k8s.io/v1", "{answer}");
    assert_eq!(answer["kind"], "AdmissionReview", "{answer}");
    let response = &answer["response"];
    let request = serde_json::from_slice::<Envelope>(body)
        .expect("an answered review decodes")
        .request;
    assert_eq!(response["uid"], request.uid, "{answer}");
    let allowed = response["allowed"].as_bool().expect("allowed is a bool");
    assert_eq!(allowed, response.get("status").is_none(), "{answer}");
    let Some(patch) = response.get("patch") else {
        assert!(response.get("patchType").is_none(), "{answer}");
        return;
    };
    assert!(allowed, "a denial carries no patch: {answer}");
    assert_eq!(response["patchType"], "JSONPatch", "{answer}");
    let patch = BASE64
        .decode(patch.as_str().expect("patch is a string"))
        .expect("patch is base64");
    let patch: json_patch::Patch = serde_json::from_slice(&patch).expect("patch is a JSONPatch");
    // The object is decoded only where the webhook reads it: a part it
    // skips may hold what a `Value` refuses (a number out of range).
    let Some(Ok(mut object)) = request
        .object
        .map(|raw| serde_json::from_str::<Value>(raw.get()))
    else {
        return;
    };
    if let Err(e) = json_patch::patch(&mut object, &patch) {
        panic!("the patch does not apply to the object ({e}): {answer}");
    }
}

/// What `check_review` reads of a request, as leniently as the webhook
/// reads it (skipped parts are not decoded).
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    request: Request<'a>,
}

#[derive(Deserialize)]
struct Request<'a> {
    uid: String,
    #[serde(borrow, default)]
    object: Option<&'a RawValue>,
}
