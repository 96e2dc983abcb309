//! Turning a cluster-state document (docs/design.md §2.2) into [`ClusterObjects`]:
//! a JSON or YAML `kind: List`, a single object, or multi-document YAML.
//! Errors carry the line of the object that failed and what was wrong.

use std::fmt;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::ClusterObjects;

/// A refused document: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// 1-based line in the document, when known.
    pub line: Option<usize>,
    pub reason: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

/// What decoding produced besides the objects: kinds we do not use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ignored {
    /// kind → how many objects of it were skipped.
    pub kinds: std::collections::BTreeMap<String, usize>,
}

/// Decode a whole cluster-state document.
pub fn decode(text: &str) -> Result<(ClusterObjects, Ignored), DecodeError> {
    let mut sink = Sink::default();
    if text.trim_start().starts_with(['{', '[']) {
        decode_json(text, &mut sink)?;
    } else {
        decode_yaml(text, &mut sink)?;
    }
    Ok((sink.objects, sink.ignored))
}

#[derive(Default)]
struct Sink {
    objects: ClusterObjects,
    ignored: Ignored,
}

/// The header every object and list shares.
#[derive(Deserialize)]
struct Header<'a> {
    #[serde(default, borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
}

/// A JSON document: a list's kind and items, or else a single object.
#[derive(Deserialize)]
struct JsonDoc<'a> {
    #[serde(default, borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    items: Vec<&'a RawValue>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn decode_json(text: &str, sink: &mut Sink) -> Result<(), DecodeError> {
    let syntax = |e: serde_json::Error| DecodeError {
        line: Some(e.line()),
        reason: format!("not valid JSON: {e}"),
    };
    if text.trim_start().starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(text).map_err(syntax)?;
        return json_items(text, &items, sink);
    }
    // One pass reads both: the document is often hundreds of MB.
    let doc: JsonDoc = serde_json::from_str(text).map_err(syntax)?;
    if doc.kind.as_deref().is_some_and(is_list_kind) {
        json_items(text, &doc.items, sink)
    } else {
        let raw: &RawValue = serde_json::from_str(text).map_err(syntax)?;
        json_item(text, raw, sink)
    }
}

/// Below this many items one thread decodes them all.
const PARALLEL_FROM: usize = 2_000;

/// Decode list items on every available core, each thread a contiguous
/// part, then join the parts in document order; the first failing item (in
/// document order) is the error.
fn json_items(text: &str, items: &[&RawValue], sink: &mut Sink) -> Result<(), DecodeError> {
    let parts = crate::parallel::map_parts(items, PARALLEL_FROM, |_, part| {
        let mut sink = Sink::default();
        part.iter()
            .try_for_each(|raw| json_item(text, raw, &mut sink))
            .map(|()| sink)
    })?;
    sink.join(parts);
    Ok(())
}

impl Sink {
    /// Append `parts` in order, each list allocated once at its final size.
    fn join(&mut self, mut parts: Vec<Sink>) {
        fn append<T>(all: &mut Vec<T>, parts: Vec<Vec<T>>) {
            all.reserve_exact(parts.iter().map(Vec::len).sum());
            parts.into_iter().for_each(|p| all.extend(p));
        }
        macro_rules! append_field {
            ($($f:ident),*) => {$(
                let field = parts.iter_mut().map(|p| std::mem::take(&mut p.objects.$f)).collect();
                append(&mut self.objects.$f, field);
            )*};
        }
        append_field!(
            nodes,
            pods,
            namespaces,
            pdbs,
            priority_classes,
            device_classes,
            services,
            replica_sets,
            stateful_sets,
            replication_controllers
        );
        for part in parts {
            for (kind, n) in part.ignored.kinds {
                *self.ignored.kinds.entry(kind).or_default() += n;
            }
        }
    }
}

fn is_list_kind(kind: &str) -> bool {
    kind == "List" || kind.ends_with("List")
}

/// Decode one object given as raw JSON borrowed from `text`, reporting
/// errors at their line in the whole document.
fn json_item(text: &str, raw: &RawValue, sink: &mut Sink) -> Result<(), DecodeError> {
    let item = raw.get();
    // `item` borrows from `text`, so the pointer difference is its offset.
    let start = (item.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    // Counted only on error: counting per item would rescan the document
    // from its start for every object.
    let at = |e: serde_json::Error, what: &str| DecodeError {
        line: Some(line_of(text, start) + e.line().saturating_sub(1)),
        reason: format!("{what}: {e}"),
    };
    let header: Header = serde_json::from_str(item).map_err(|e| at(e, "object"))?;
    let kind = header.kind.unwrap_or_default();
    let kind = kind.as_ref();
    let described = || describe(kind, item);
    add_object(kind, sink, |k| match k {
        Kind::Node => serde_json::from_str(item).map(Obj::Node),
        Kind::Pod => serde_json::from_str(item).map(Obj::Pod),
        Kind::Namespace => serde_json::from_str(item).map(Obj::Namespace),
        Kind::Pdb => serde_json::from_str(item).map(Obj::Pdb),
        Kind::PriorityClass => serde_json::from_str(item).map(Obj::PriorityClass),
        Kind::DeviceClass => serde_json::from_str(item).map(Obj::DeviceClass),
        Kind::Service => serde_json::from_str(item).map(Obj::Service),
        Kind::ReplicaSet => serde_json::from_str(item).map(Obj::ReplicaSet),
        Kind::StatefulSet => serde_json::from_str(item).map(Obj::StatefulSet),
        Kind::ReplicationController => serde_json::from_str(item).map(Obj::ReplicationController),
    })
    .map_err(|e| at(e, &described()))
}

/// "Pod shop/web-1" for messages, from whatever metadata parses.
fn describe(kind: &str, item: &str) -> String {
    #[derive(Deserialize, Default)]
    struct Meta {
        #[serde(default)]
        name: String,
        #[serde(default)]
        namespace: String,
    }
    #[derive(Deserialize)]
    struct WithMeta {
        #[serde(default)]
        metadata: Meta,
    }
    let meta = serde_json::from_str::<WithMeta>(item)
        .map(|m| m.metadata)
        .unwrap_or_default();
    let kind = if kind.is_empty() { "object" } else { kind };
    match (meta.namespace.is_empty(), meta.name.is_empty()) {
        (_, true) => kind.to_string(),
        (true, false) => format!("{kind} {}", meta.name),
        (false, false) => format!("{kind} {}/{}", meta.namespace, meta.name),
    }
}

fn describe_value(kind: &str, value: &serde_json::Value) -> String {
    let field = |f: &str| {
        value
            .pointer(&format!("/metadata/{f}"))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let meta =
        serde_json::json!({"metadata": {"name": field("name"), "namespace": field("namespace")}});
    describe(kind, &meta.to_string())
}

#[derive(Clone, Copy)]
enum Kind {
    Node,
    Pod,
    Namespace,
    Pdb,
    PriorityClass,
    DeviceClass,
    Service,
    ReplicaSet,
    StatefulSet,
    ReplicationController,
}

// Lives for one object only; boxing would cost an allocation per object.
#[allow(clippy::large_enum_variant)]
enum Obj {
    Node(crate::model::Node),
    Pod(crate::model::Pod),
    Namespace(crate::model::Namespace),
    Pdb(crate::model::PodDisruptionBudget),
    PriorityClass(crate::model::PriorityClass),
    DeviceClass(crate::model::DeviceClass),
    Service(crate::model::MapSelectorOwner),
    ReplicaSet(crate::model::SelectorOwner),
    StatefulSet(crate::model::SelectorOwner),
    ReplicationController(crate::model::MapSelectorOwner),
}

fn kind_of(kind: &str) -> Option<Kind> {
    Some(match kind {
        "Node" => Kind::Node,
        "Pod" => Kind::Pod,
        "Namespace" => Kind::Namespace,
        "PodDisruptionBudget" => Kind::Pdb,
        "PriorityClass" => Kind::PriorityClass,
        "DeviceClass" => Kind::DeviceClass,
        "Service" => Kind::Service,
        "ReplicaSet" => Kind::ReplicaSet,
        "StatefulSet" => Kind::StatefulSet,
        "ReplicationController" => Kind::ReplicationController,
        _ => return None,
    })
}

/// Decode with `decode_as` if `kind` is one we keep, else count it ignored.
fn add_object<E>(
    kind: &str,
    sink: &mut Sink,
    decode_as: impl FnOnce(Kind) -> Result<Obj, E>,
) -> Result<(), E> {
    let Some(k) = kind_of(kind) else {
        let name = if kind.is_empty() { "<no kind>" } else { kind };
        *sink.ignored.kinds.entry(name.to_string()).or_default() += 1;
        return Ok(());
    };
    let o = &mut sink.objects;
    match decode_as(k)? {
        Obj::Node(x) => o.nodes.push(x),
        Obj::Pod(x) => o.pods.push(x),
        Obj::Namespace(x) => o.namespaces.push(x),
        Obj::Pdb(x) => o.pdbs.push(x),
        Obj::PriorityClass(x) => o.priority_classes.push(x),
        Obj::DeviceClass(x) => o.device_classes.push(x),
        Obj::Service(x) => o.services.push(x),
        Obj::ReplicaSet(x) => o.replica_sets.push(x),
        Obj::StatefulSet(x) => o.stateful_sets.push(x),
        Obj::ReplicationController(x) => o.replication_controllers.push(x),
    }
    Ok(())
}

type SpannedValue = serde_saphyr::Spanned<serde_json::Value>;

#[derive(Deserialize)]
struct YamlDoc {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    items: Option<Vec<SpannedValue>>,
}

fn yaml_options() -> serde_saphyr::Options {
    // The default budget refuses a 5,000-node NodeList; cluster files are
    // operator-provided, so allow them to be large.
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_nodes: 50_000_000,
            max_events: 200_000_000,
            max_documents: 1_000_000,
        },
    }
}

fn decode_yaml(text: &str, sink: &mut Sink) -> Result<(), DecodeError> {
    let syntax = |e: serde_saphyr::Error| {
        let line = e.location().map(|l| l.line() as usize).filter(|&l| l > 0);
        DecodeError {
            line,
            reason: format!("not valid YAML: {e}"),
        }
    };
    // First pass: the List documents with their items and positions (the
    // usual `kubectl get -o yaml` output is one List, so one pass).
    let docs: Vec<Option<YamlDoc>> =
        serde_saphyr::from_multiple_with_options(text, yaml_options()).map_err(syntax)?;
    let mut plain_docs = false;
    for doc in docs.iter().flatten() {
        if doc.kind.as_deref().is_some_and(is_list_kind) {
            for item in doc.items.iter().flatten() {
                yaml_item(item, sink)?;
            }
        } else {
            plain_docs = true;
        }
    }
    // Second pass only when there are single-object documents.
    if plain_docs {
        let values: Vec<SpannedValue> =
            serde_saphyr::from_multiple_with_options(text, yaml_options()).map_err(syntax)?;
        for value in &values {
            let kind = value.value.get("kind").and_then(|k| k.as_str());
            if value.value.is_null() || kind.is_some_and(is_list_kind) {
                continue;
            }
            yaml_item(value, sink)?;
        }
    }
    Ok(())
}

fn yaml_item(item: &SpannedValue, sink: &mut Sink) -> Result<(), DecodeError> {
    let line = Some(item.referenced.line() as usize).filter(|&l| l > 0);
    let kind = item
        .value
        .get("kind")
        .and_then(|k| k.as_str())
        .unwrap_or_default()
        .to_string();
    let described = describe_value(&kind, &item.value);
    let value = &item.value;
    add_object(&kind, sink, |k| match k {
        Kind::Node => Deserialize::deserialize(value).map(Obj::Node),
        Kind::Pod => Deserialize::deserialize(value).map(Obj::Pod),
        Kind::Namespace => Deserialize::deserialize(value).map(Obj::Namespace),
        Kind::Pdb => Deserialize::deserialize(value).map(Obj::Pdb),
        Kind::PriorityClass => Deserialize::deserialize(value).map(Obj::PriorityClass),
        Kind::DeviceClass => Deserialize::deserialize(value).map(Obj::DeviceClass),
        Kind::Service => Deserialize::deserialize(value).map(Obj::Service),
        Kind::ReplicaSet => Deserialize::deserialize(value).map(Obj::ReplicaSet),
        Kind::StatefulSet => Deserialize::deserialize(value).map(Obj::StatefulSet),
        Kind::ReplicationController => {
            Deserialize::deserialize(value).map(Obj::ReplicationController)
        }
    })
    .map_err(|e| DecodeError {
        line,
        reason: format!("{described}: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Shared;

    const JSON_LIST: &str = r#"{
  "apiVersion": "v1",
  "kind": "List",
  "items": [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "shop"},
     "spec": {"nodeName": "n1"}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
  ]
}"#;

    #[test]
    fn json_list_is_decoded_and_unused_kinds_are_counted() {
        let (objects, ignored) = decode(JSON_LIST).unwrap();
        assert_eq!(objects.nodes.len(), 1);
        assert_eq!(objects.pods[0].spec.node_name, "n1");
        assert_eq!(ignored.kinds["Deployment"], 1);
    }

    #[test]
    fn json_error_names_the_line_and_the_object() {
        let text = JSON_LIST.replace(r#""nodeName": "n1""#, r#""priority": "high""#);
        let err = decode(&text).unwrap_err();
        assert_eq!(err.line, Some(7), "{err}");
        assert!(err.reason.contains("Pod shop/p1"), "{err}");
        assert!(err.reason.contains("invalid type"), "{err}");
    }

    #[test]
    fn json_syntax_error_has_a_line() {
        let err = decode("{\n  \"kind\": \"List\",\n  \"items\": [\n  {,\n]}").unwrap_err();
        assert_eq!(err.line, Some(4), "{err}");
        assert!(err.reason.contains("not valid JSON"), "{err}");
    }

    #[test]
    fn single_json_object_and_json_array_are_accepted() {
        let (o, _) = decode(r#"{"kind":"Node","metadata":{"name":"a"}}"#).unwrap();
        assert_eq!(o.nodes.len(), 1);
        let (o, _) = decode(r#"[{"kind":"Node","metadata":{"name":"a"}}]"#).unwrap();
        assert_eq!(o.nodes.len(), 1);
    }

    #[test]
    fn pods_of_one_workload_share_their_common_parts_in_memory() {
        let pod = |name: &str| {
            format!(
                r#"{{"kind":"Pod","metadata":{{"name":"{name}","namespace":"ns","labels":{{"app":"web"}},
                   "ownerReferences":[{{"kind":"ReplicaSet","name":"web-1","controller":true}}]}},
                   "spec":{{"containers":[{{"name":"c","resources":{{"requests":{{"cpu":"1"}}}}}}],
                   "topologySpreadConstraints":[{{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}}]}}}}"#
            )
        };
        let text = format!(r#"{{"kind":"List","items":[{},{}]}}"#, pod("a"), pod("b"));
        let (o, _) = decode(&text).unwrap();
        let [a, b] = [&o.pods[0], &o.pods[1]];
        assert!(Shared::ptr_eq(&a.metadata.labels, &b.metadata.labels));
        assert!(Shared::ptr_eq(
            &a.metadata.owner_references,
            &b.metadata.owner_references
        ));
        assert!(Shared::ptr_eq(&a.spec.containers, &b.spec.containers));
        assert!(Shared::ptr_eq(
            &a.spec.topology_spread_constraints,
            &b.spec.topology_spread_constraints
        ));
        assert_ne!(a.metadata.name, b.metadata.name);
    }

    /// `n` items, one per line: pods, every tenth a ConfigMap.
    fn big_list(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| match i % 10 {
                9 => format!(r#"{{"kind":"ConfigMap","metadata":{{"name":"c{i}"}}}}"#),
                _ => format!(r#"{{"kind":"Pod","metadata":{{"name":"p{i}","namespace":"ns"}}}}"#),
            })
            .collect()
    }

    fn as_list(items: &[String]) -> String {
        format!(
            "{{\"kind\":\"List\",\"items\":[\n{}\n]}}",
            items.join(",\n")
        )
    }

    #[test]
    fn large_lists_keep_document_order_and_count_every_ignored_item() {
        let n = PARALLEL_FROM * 3;
        let (o, ignored) = decode(&as_list(&big_list(n))).unwrap();
        assert_eq!(o.pods.len(), n - n / 10);
        let names: Vec<&str> = o.pods.iter().map(|p| p.metadata.name.as_str()).collect();
        let expected: Vec<String> = (0..n)
            .filter(|i| i % 10 != 9)
            .map(|i| format!("p{i}"))
            .collect();
        assert_eq!(names, expected);
        assert_eq!(ignored.kinds["ConfigMap"], n / 10);
    }

    #[test]
    fn large_lists_report_the_first_broken_item_by_its_line() {
        let mut items = big_list(PARALLEL_FROM * 3);
        let late = items.len() - 5;
        items[late] = r#"{"kind":"Pod","metadata":{"name":"late"},"spec":{"priority":"x"}}"#.into();
        let err = decode(&as_list(&items)).unwrap_err();
        assert_eq!(err.line, Some(late + 2), "{err}");
        let early = 100;
        items[early] =
            r#"{"kind":"Pod","metadata":{"name":"early"},"spec":{"priority":"x"}}"#.into();
        let err = decode(&as_list(&items)).unwrap_err();
        assert_eq!(err.line, Some(early + 2), "{err}");
        assert!(err.reason.contains("Pod early"), "{err}");
    }

    #[test]
    fn typed_lists_such_as_node_list_are_lists() {
        let (o, _) =
            decode(r#"{"kind":"NodeList","items":[{"kind":"Node","metadata":{"name":"a"}}]}"#)
                .unwrap();
        assert_eq!(o.nodes.len(), 1);
    }

    const YAML_LIST: &str = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: shop
    labels:
      team: a
- apiVersion: v1
  kind: Pod
  metadata:
    name: p1
    namespace: shop
  spec:
    priority: 5
    containers:
    - name: c
      resources:
        requests:
          cpu: 100m
          memory: 1Gi
";

    #[test]
    fn yaml_list_is_decoded() {
        let (o, _) = decode(YAML_LIST).unwrap();
        assert_eq!(o.namespaces[0].metadata.labels["team"], "a");
        assert_eq!(o.pods[0].spec.priority, Some(5));
        assert_eq!(o.pods[0].spec.containers[0].resources.requests["cpu"], 100);
    }

    #[test]
    fn yaml_error_names_the_line_of_the_object() {
        let text = YAML_LIST.replace("priority: 5", "priority: high");
        let err = decode(&text).unwrap_err();
        assert_eq!(err.line, Some(10), "{err}"); // the `- apiVersion` line of the item
        assert!(err.reason.contains("Pod shop/p1"), "{err}");
    }

    #[test]
    fn yaml_syntax_error_has_a_line() {
        let err = decode("kind: List\nitems:\n- kind: Node\n  metadata: [unclosed\n").unwrap_err();
        assert!(err.line.is_some(), "{err}");
        assert!(err.reason.contains("not valid YAML"), "{err}");
    }

    #[test]
    fn multi_document_yaml_is_decoded() {
        let text = "---\nkind: Node\nmetadata:\n  name: a\n---\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\nglobalDefault: true\n---\n";
        let (o, _) = decode(text).unwrap();
        assert_eq!(o.nodes.len(), 1);
        assert_eq!(o.priority_classes[0].value, 1000);
        assert!(o.priority_classes[0].global_default);
    }

    #[test]
    fn device_classes_are_read_from_json_and_yaml() {
        let yaml = "kind: DeviceClass\napiVersion: resource.k8s.io/v1\nmetadata:\n  name: gpu\nspec:\n  extendedResourceName: example.com/gpu\n  selectors: [{cel: {expression: 'true'}}]\n";
        let (o, ignored) = decode(yaml).unwrap();
        assert!(ignored.kinds.is_empty(), "{ignored:?}");
        assert_eq!(
            o.device_classes[0].spec.extended_resource_name.as_deref(),
            Some("example.com/gpu")
        );
        let json = r#"{"kind": "List", "items": [{"kind": "DeviceClass", "apiVersion": "resource.k8s.io/v1", "metadata": {"name": "fpga"}, "spec": {}}]}"#;
        let (o, _) = decode(json).unwrap();
        assert_eq!(o.device_classes[0].metadata.name, "fpga");
        assert_eq!(o.device_classes[0].spec.extended_resource_name, None);
        let err = decode(&json.replace("\"spec\": {}", "\"spec\": {\"extendedResourceName\": 3}"))
            .unwrap_err();
        assert!(err.reason.contains("DeviceClass fpga"), "{err}");
    }

    #[test]
    fn wrong_shape_at_top_level_is_an_error() {
        assert!(decode("{\"kind\": \"List\", \"items\": 3}").is_err());
        assert!(decode("just a string").is_err());
    }
}
