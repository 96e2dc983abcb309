//! `k8s.io/kube-scheduler/extender/v1`'s binding verb: ExtenderBindingArgs
//! in, ExtenderBindingResult out. Keys are accepted in any case (Go decodes
//! JSON keys case-insensitively); the answer uses the Go field names.

use serde::{Deserialize, Deserializer, Serialize};

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
    fn the_result_uses_the_go_field_name() {
        let out = serde_json::to_string(&ExtenderBindingResult::default()).unwrap();
        assert_eq!(out, r#"{"Error":""}"#);
    }
}
