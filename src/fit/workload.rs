//! What `fit` places: a workload manifest (Deployment, StatefulSet,
//! ReplicaSet, Job or Pod) read into its pod template, its replica count,
//! and the pods its controller would create, admitted as the API server's
//! Priority plugin admits them.

use serde_json::Value;

use crate::cluster::Snapshot;
use crate::model::{LabelSelector, Pod, SelectorOwner};
use crate::policy::priority::{PodPriority, admit_create};

/// The kinds `fit` reads, as `kind` says them.
pub const KINDS: [&str; 5] = ["Deployment", "StatefulSet", "ReplicaSet", "Job", "Pod"];

/// The label the Deployment controller puts on its ReplicaSet's pods and
/// selector.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// A workload read from its manifest.
#[derive(Debug, Clone)]
pub struct Workload {
    /// As the manifest says it: `Deployment`, `StatefulSet`, ...
    pub kind: String,
    pub name: String,
    pub namespace: String,
    /// The manifest's replicas: `spec.replicas` (default 1), a Job's
    /// `spec.parallelism` capped by `spec.completions`, 1 for a Pod.
    pub replicas: u32,
    /// The pod template as a Pod: its metadata (namespace set) and spec.
    pub template: Pod,
    /// The object whose selector the scheduler's default spread
    /// constraints read for these pods: the ReplicaSet (a Deployment's,
    /// made here) or the StatefulSet. `None` for Jobs and Pods.
    pub owner: Option<Owner>,
    /// The first replica's number: the current count of a live workload
    /// scaled up, else 0 (StatefulSet ordinals start there).
    pub first: u32,
}

/// The controller of the pods, as the view will know it.
#[derive(Debug, Clone)]
pub struct Owner {
    /// `ReplicaSet` or `StatefulSet`.
    pub kind: &'static str,
    pub object: SelectorOwner,
}

/// Why a manifest cannot be placed: always the caller's input (exit 2).
pub type ManifestError = String;

/// A manifest from JSON or YAML text.
pub fn parse_manifest(text: &[u8]) -> Result<Workload, ManifestError> {
    let first = text.iter().find(|b| !b.is_ascii_whitespace());
    let value: Value = if first == Some(&b'{') {
        serde_json::from_slice(text).map_err(|e| format!("not a JSON manifest: {e}"))?
    } else {
        let text = std::str::from_utf8(text).map_err(|e| format!("not UTF-8 text: {e}"))?;
        serde_saphyr::from_str(text).map_err(|e| format!("not a YAML manifest: {e}"))?
    };
    workload(value)
}

/// A manifest already decoded (a live object, or a request body).
pub fn workload(mut value: Value) -> Result<Workload, ManifestError> {
    let kind = value["kind"].as_str().unwrap_or_default().to_string();
    if !KINDS.contains(&kind.as_str()) {
        let said = if kind.is_empty() {
            "no kind".to_string()
        } else {
            format!("kind {kind}")
        };
        return Err(format!(
            "the manifest has {said}; fit places a {}",
            KINDS.join(", ")
        ));
    }
    let name = value["metadata"]["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| format!("the {kind} has no metadata.name"))?
        .to_string();
    let namespace = value["metadata"]["namespace"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
        .to_string();
    let what = format!("{kind} {namespace}/{name}");
    let count = |field: &str, default: u32| -> Result<u32, ManifestError> {
        match &value["spec"][field] {
            Value::Null => Ok(default),
            v => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| format!("{what}: spec.{field} is not a count: {v}")),
        }
    };
    let replicas = match kind.as_str() {
        "Pod" => 1,
        "Job" => {
            let parallelism = count("parallelism", 1)?;
            match value["spec"]["completions"] {
                Value::Null => parallelism,
                _ => parallelism.min(count("completions", 1)?),
            }
        }
        _ => count("replicas", 1)?,
    };
    // Hashed before the template is taken out of the manifest.
    let hash = template_hash(&value["spec"]["template"].to_string());
    let mut template = if kind == "Pod" {
        let mut pod = value.clone();
        if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("nodeName");
        }
        pod
    } else {
        match value["spec"]["template"].take() {
            Value::Object(t) => Value::Object(t),
            _ => return Err(format!("{what} has no spec.template")),
        }
    };
    if !template["metadata"].is_object() {
        template["metadata"] = serde_json::json!({});
    }
    template["metadata"]["namespace"] = Value::String(namespace.clone());
    template["status"] = serde_json::json!({});
    let template: Pod =
        serde_json::from_value(template).map_err(|e| format!("{what}: pod template: {e}"))?;
    let selector = match &value["spec"]["selector"] {
        Value::Null => None,
        s => Some(
            serde_json::from_value::<LabelSelector>(s.clone())
                .map_err(|e| format!("{what}: spec.selector: {e}"))?,
        ),
    };
    let owner = match kind.as_str() {
        "Deployment" => Some(replica_set_of_deployment(&name, &namespace, selector, hash)),
        "ReplicaSet" | "StatefulSet" => Some(Owner {
            kind: if kind == "ReplicaSet" {
                "ReplicaSet"
            } else {
                "StatefulSet"
            },
            object: selector_owner(&name, &namespace, selector),
        }),
        _ => None,
    };
    Ok(Workload {
        kind,
        name,
        namespace,
        replicas,
        template,
        owner,
        first: 0,
    })
}

/// The ReplicaSet the Deployment controller would make for this template:
/// named `<deployment>-<hash>`, its selector the Deployment's plus
/// `pod-template-hash`. The hash is one of the template's text (stable,
/// not upstream's value), so the new pods count apart from other
/// revisions' exactly as a new ReplicaSet's do.
fn replica_set_of_deployment(
    name: &str,
    namespace: &str,
    selector: Option<LabelSelector>,
    hash: String,
) -> Owner {
    let mut selector = selector.unwrap_or_default();
    selector
        .match_labels
        .insert(POD_TEMPLATE_HASH.to_string(), hash.clone());
    Owner {
        kind: "ReplicaSet",
        object: selector_owner(&format!("{name}-{hash}"), namespace, Some(selector)),
    }
}

fn selector_owner(name: &str, namespace: &str, selector: Option<LabelSelector>) -> SelectorOwner {
    let mut owner = SelectorOwner::default();
    owner.metadata.name = name.to_string();
    owner.metadata.namespace = namespace.to_string();
    owner.spec.selector = selector;
    owner
}

/// Ten characters of the FNV-1a hash of `text`, in the alphabet the
/// Deployment controller uses for its hashes (no vowels).
fn template_hash(text: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (0..10)
        .map(|_| {
            let c = ALPHABET[(h % ALPHABET.len() as u64) as usize];
            h /= ALPHABET.len() as u64;
            c as char
        })
        .collect()
}

/// The pod template admitted as the API server's Priority plugin admits a
/// new pod: its class (or the globalDefault) gives priority and
/// preemption policy; an unknown class or a conflicting value is refused
/// with upstream's message.
pub fn admit(workload: &mut Workload, snapshot: &Snapshot) -> Result<(), ManifestError> {
    let spec = &workload.template.spec;
    let asked = PodPriority {
        class_name: &spec.priority_class_name,
        priority: spec.priority,
        preemption_policy: spec.preemption_policy.as_deref(),
    };
    let resolved = admit_create(snapshot, &asked).map_err(|denial| {
        format!(
            "{} {}/{}: pods would be refused: pods {:?} is forbidden: {}",
            workload.kind, workload.namespace, workload.name, workload.name, denial.reason
        )
    })?;
    let spec = &mut workload.template.spec;
    spec.priority = Some(resolved.priority);
    spec.preemption_policy = Some(resolved.preemption_policy.as_str().to_string());
    spec.priority_class_name = resolved.class_name;
    Ok(())
}

impl Workload {
    /// `kind namespace/name`, as messages name it.
    pub fn title(&self) -> String {
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }

    /// Replica `i` (counting from [`Self::first`]) as its controller would
    /// create it: the template's labels (a Deployment's with its
    /// ReplicaSet's `pod-template-hash`, a StatefulSet's with its pod
    /// name), owned by the controller, named so that no pod of `snapshot`
    /// has the name.
    pub fn replica(&self, i: u32, snapshot: &Snapshot) -> Pod {
        let mut pod = self.template.clone();
        let base = match &self.owner {
            Some(o) => o.object.metadata.name.clone(),
            None => self.name.clone(),
        };
        let mut name = match (self.kind.as_str(), i) {
            ("Pod", 0) => self.name.clone(),
            ("StatefulSet", _) => format!("{base}-{i}"),
            _ => format!("{base}-fit-{i}"),
        };
        let mut extra = 0;
        while snapshot.pod(&self.namespace, &name).is_some() {
            extra += 1;
            name = format!("{base}-fit-{i}-{extra}");
        }
        let mut labels = (*pod.metadata.labels).clone();
        if let Some(owner) = &self.owner {
            if let Some(hash) = owner
                .object
                .spec
                .selector
                .as_ref()
                .and_then(|s| s.match_labels.get(POD_TEMPLATE_HASH))
            {
                labels.insert(POD_TEMPLATE_HASH.to_string(), hash.clone());
            }
            if owner.kind == "StatefulSet" {
                labels.insert("statefulset.kubernetes.io/pod-name".into(), name.clone());
                labels.insert("apps.kubernetes.io/pod-index".into(), i.to_string());
            }
            let reference = crate::model::OwnerReference {
                api_version: "apps/v1".into(),
                kind: owner.kind.into(),
                name: owner.object.metadata.name.clone(),
                uid: String::new(),
                controller: Some(true),
            };
            pod.metadata.owner_references = crate::model::Shared::new(vec![reference]);
        }
        pod.metadata.labels = crate::model::Shared::new(labels);
        pod.metadata.uid = format!("fit-{}-{}-{name}", self.namespace, self.kind);
        pod.metadata.name = name;
        pod
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::model::PriorityClass;

    const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  replicas: 4\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      priorityClassName: high\n      containers:\n      - name: c\n        resources: {requests: {cpu: 500m}}\n";

    fn classes(classes: serde_json::Value) -> Snapshot {
        let classes: Vec<PriorityClass> = serde_json::from_value(classes).unwrap();
        Snapshot::build(ClusterObjects {
            priority_classes: classes,
            ..Default::default()
        })
    }

    #[test]
    fn each_kind_gives_its_replica_count_and_template() {
        let cases: [(&str, &str, u32); 6] = [
            ("deployment with replicas", DEPLOYMENT, 4),
            (
                "statefulset without replicas defaults to one",
                "kind: StatefulSet\nmetadata: {name: db}\nspec: {template: {metadata: {labels: {app: db}}, spec: {}}}\n",
                1,
            ),
            (
                "job runs its parallelism at once",
                r#"{"kind":"Job","metadata":{"name":"j"},"spec":{"parallelism":5,"template":{"spec":{}}}}"#,
                5,
            ),
            (
                "job parallelism capped by completions",
                r#"{"kind":"Job","metadata":{"name":"j"},"spec":{"parallelism":5,"completions":2,"template":{"spec":{}}}}"#,
                2,
            ),
            (
                "a pod is one replica",
                "kind: Pod\nmetadata: {name: p}\nspec: {nodeName: n1}\n",
                1,
            ),
            (
                "replicaset",
                "kind: ReplicaSet\nmetadata: {name: rs}\nspec: {replicas: 3, template: {spec: {}}}\n",
                3,
            ),
        ];
        for (name, text, replicas) in cases {
            let w = parse_manifest(text.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(w.replicas, replicas, "{name}");
            assert!(w.template.spec.node_name.is_empty(), "{name}");
        }
        let w = parse_manifest(DEPLOYMENT.as_bytes()).unwrap();
        assert_eq!(w.template.metadata.namespace, "shop");
        let owner = w.owner.unwrap();
        assert_eq!(owner.kind, "ReplicaSet");
        assert!(owner.object.metadata.name.starts_with("web-"));
        let selector = owner.object.spec.selector.unwrap();
        assert_eq!(selector.match_labels["app"], "web");
        assert!(selector.match_labels.contains_key(POD_TEMPLATE_HASH));
    }

    #[test]
    fn bad_manifests_say_what_is_wrong() {
        let cases = [
            ("kind: Service\nmetadata: {name: s}\n", "kind Service"),
            ("metadata: {name: s}\n", "no kind"),
            ("kind: Deployment\nmetadata: {}\n", "no metadata.name"),
            (
                "kind: Deployment\nmetadata: {name: d}\nspec: {replicas: -1, template: {}}\n",
                "spec.replicas is not a count",
            ),
            (
                "kind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n",
                "has no spec.template",
            ),
            ("{not json", "not a JSON manifest"),
            ("- a\n- b\n", "no kind"),
        ];
        for (text, want) in cases {
            let err = parse_manifest(text.as_bytes()).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn replicas_carry_the_controllers_labels_owner_and_free_names() {
        let w = parse_manifest(DEPLOYMENT.as_bytes()).unwrap();
        let owner = w.owner.clone().unwrap().object;
        let taken: Pod = serde_json::from_value(serde_json::json!({"metadata": {
            "name": format!("{}-fit-0", owner.metadata.name), "namespace": "shop"}}))
        .unwrap();
        let s = Snapshot::build(ClusterObjects {
            pods: vec![taken],
            ..Default::default()
        });
        let first = w.replica(0, &s);
        let second = w.replica(1, &s);
        assert_eq!(
            first.metadata.name,
            format!("{}-fit-0-1", owner.metadata.name)
        );
        assert_eq!(
            second.metadata.name,
            format!("{}-fit-1", owner.metadata.name)
        );
        assert_eq!(
            first.metadata.labels[POD_TEMPLATE_HASH],
            owner.spec.selector.unwrap().match_labels[POD_TEMPLATE_HASH]
        );
        assert_eq!(
            first.metadata.controller().unwrap().name,
            owner.metadata.name
        );
    }

    #[test]
    fn admission_resolves_the_class_or_refuses_as_upstream() {
        let s = classes(serde_json::json!([
            {"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"},
            {"metadata": {"name": "base"}, "value": 10, "globalDefault": true}]));
        let mut w = parse_manifest(DEPLOYMENT.as_bytes()).unwrap();
        admit(&mut w, &s).unwrap();
        assert_eq!(w.template.spec.priority, Some(1000));
        assert_eq!(w.template.spec.preemption_policy.as_deref(), Some("Never"));

        let mut unclassed = parse_manifest(b"kind: Pod\nmetadata: {name: p}\n").unwrap();
        admit(&mut unclassed, &s).unwrap();
        assert_eq!(unclassed.template.spec.priority, Some(10));
        assert_eq!(unclassed.template.spec.priority_class_name, "base");

        let mut unknown = parse_manifest(DEPLOYMENT.as_bytes()).unwrap();
        let err = admit(&mut unknown, &classes(serde_json::json!([]))).unwrap_err();
        assert!(
            err.ends_with("pods \"web\" is forbidden: no PriorityClass with name high was found"),
            "{err}"
        );
    }
}
