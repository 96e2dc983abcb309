//! `POST /scheduler/bind`: kube-scheduler's ExtenderBindingArgs in, its
//! ExtenderBindingResult out. Keys are accepted in any case (Go decodes
//! JSON keys case-insensitively); the answer uses the Go field names.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Deserializer, Serialize};

use crate::cluster::{BindRequest, bind_guard};
use crate::server::{ApiJson, AppState};

/// `k8s.io/kube-scheduler/extender/v1.ExtenderBindingArgs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtenderBindingArgs {
    pub pod_name: String,
    pub pod_namespace: String,
    pub pod_uid: String,
    pub node: String,
}

/// `k8s.io/kube-scheduler/extender/v1.ExtenderBindingResult`: `Error` is
/// empty on success.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtenderBindingResult {
    #[serde(rename = "Error")]
    pub error: String,
}

impl<'de> Deserialize<'de> for ExtenderBindingArgs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let fields = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let mut args = ExtenderBindingArgs::default();
        for (key, value) in fields {
            let slot = match key.to_ascii_lowercase().as_str() {
                "podname" => &mut args.pod_name,
                "podnamespace" => &mut args.pod_namespace,
                "poduid" => &mut args.pod_uid,
                "node" => &mut args.node,
                _ => continue,
            };
            *slot = match value {
                serde_json::Value::String(s) => s,
                serde_json::Value::Null => String::new(),
                other => {
                    return Err(D::Error::custom(format!(
                        "{key} must be a string, got {other}"
                    )));
                }
            };
        }
        Ok(args)
    }
}

impl ExtenderBindingArgs {
    /// The binding to make, or which of the fields it needs are missing.
    pub fn request(self) -> Result<BindRequest, String> {
        let missing: Vec<&str> = [
            ("PodName", &self.pod_name),
            ("PodNamespace", &self.pod_namespace),
            ("Node", &self.node),
        ]
        .into_iter()
        .filter(|(_, v)| v.is_empty())
        .map(|(k, _)| k)
        .collect();
        if !missing.is_empty() {
            return Err(format!("binding needs {}", missing.join(", ")));
        }
        Ok(BindRequest {
            namespace: self.pod_namespace,
            name: self.pod_name,
            uid: self.pod_uid,
            node: self.node,
        })
    }
}

pub async fn bind(
    State(state): State<AppState>,
    ApiJson(args): ApiJson<ExtenderBindingArgs>,
) -> Json<ExtenderBindingResult> {
    let outcome = match args.request() {
        Ok(req) => match refused(&state, &req) {
            Some(reason) => {
                tracing::warn!(pod = %format!("{}/{}", req.namespace, req.name), node = %req.node, "binding refused: {reason}");
                state.metrics.bindings_refused.inc();
                Err(reason)
            }
            None => {
                state
                    .binder
                    .bind(&state.view, &req, state.config.live.assume_ttl())
                    .await
            }
        },
        Err(e) => Err(e),
    };
    Json(ExtenderBindingResult {
        error: outcome.err().unwrap_or_default(),
    })
}

/// Why this binding must not be made (nothing is sent to the API server).
fn refused(state: &AppState, req: &BindRequest) -> Option<String> {
    match state.view.current() {
        Some(snapshot) => bind_guard::refusal(&snapshot, req, &state.scheduler_names),
        None => Some("the cluster view is not ready yet".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_args_decode_in_any_key_case() {
        for body in [
            r#"{"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n1"}"#,
            r#"{"podName":"p","podNamespace":"ns","podUID":"u","node":"n1"}"#,
            r#"{"podname":"p","PODNAMESPACE":"ns","poduid":"u","NODE":"n1","extra":1}"#,
        ] {
            let args: ExtenderBindingArgs = serde_json::from_str(body).unwrap();
            assert_eq!(
                args,
                ExtenderBindingArgs {
                    pod_name: "p".into(),
                    pod_namespace: "ns".into(),
                    pod_uid: "u".into(),
                    node: "n1".into(),
                },
                "{body}"
            );
        }
    }

    #[test]
    fn a_non_string_field_is_a_clear_error() {
        let err = serde_json::from_str::<ExtenderBindingArgs>(r#"{"Node":3}"#).unwrap_err();
        assert!(err.to_string().contains("Node must be a string"), "{err}");
    }

    #[test]
    fn a_binding_without_pod_or_node_names_what_is_missing() {
        let args: ExtenderBindingArgs = serde_json::from_str(r#"{"PodName":"p"}"#).unwrap();
        assert_eq!(
            args.request().unwrap_err(),
            "binding needs PodNamespace, Node"
        );
    }

    #[test]
    fn the_result_uses_the_go_field_name() {
        let out = serde_json::to_string(&ExtenderBindingResult::default()).unwrap();
        assert_eq!(out, r#"{"Error":""}"#);
    }
}
