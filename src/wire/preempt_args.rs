//! What a preempt request names: the candidate nodes, each with the
//! victims kube-scheduler chose on it (full pods in `NodeNameToVictims`,
//! UIDs only in `NodeNameToMetaVictims`). The victims are recomputed from
//! our view; the names only tell whether the view knows what
//! kube-scheduler's cache knows (`api::preempt_unknown`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use foldhash::HashMap;

use serde_json::value::RawValue;

use super::lexer::any_case::{AnyCase, field_of};
use super::lexer::json_scan::Scan;
use super::lexer::validated_walk;
use crate::model::Pod;
use crate::model::shared::unpooled;

mod plain_map;

/// Candidate node → the UIDs of the victims the request gives for it,
/// borrowed from the body unless they had to be unescaped.
pub type NamedNodes<'a> = BTreeMap<Cow<'a, str>, Vec<Cow<'a, str>>>;

/// What a preempt handler reads of `ExtenderPreemptionArgs`.
#[derive(Debug, PartialEq)]
pub struct PreemptArgs<'a> {
    pub pod: Pod,
    pub named: NamedNodes<'a>,
}

/// The preemptor and the named nodes of `body` (keys in any case, the
/// last of keys equal but for case winning); a body that is no such
/// args is refused with what is wrong with it.
///
/// A body as kube-scheduler writes it is read in one pass
/// ([`read_plain`]); any other is split into its fields by serde_json
/// and its maps walked ([`named_nodes`]), which also says what is wrong.
///
/// Nothing in it is pooled, as in `extender_read::read_args`.
pub fn read_preempt_args(body: &[u8]) -> Result<PreemptArgs<'_>, String> {
    unpooled(|| match read_plain(body) {
        Some(args) => Ok(args),
        None => read_in_fields(body),
    })
}

/// [`read_preempt_args`] the general way, for any body: split into
/// fields by serde_json, the maps walked. Public so that the fuzz target
/// can hold the one-pass reading to it.
pub fn read_in_fields(body: &[u8]) -> Result<PreemptArgs<'_>, String> {
    let args = AnyCase::parse(body)?;
    let pod = args
        .get("Pod")?
        .ok_or("ExtenderPreemptionArgs has no Pod")?;
    let named = named_nodes(&args)?;
    Ok(PreemptArgs { pod, named })
}

/// The args of a body whose victims are all in a `NodeNameToMetaVictims`
/// map of plain text ([`plain_map`]), each top-level key once; `None`
/// for any other body, valid or not.
fn read_plain(body: &[u8]) -> Option<PreemptArgs<'_>> {
    let mut scan = Scan::new(body);
    let (mut pod, mut named) = (None, NamedNodes::new());
    let mut seen = [false; 3];
    scan.object(|key, scan| {
        let field = ["pod", "nodenametometavictims", "nodenametovictims"]
            .iter()
            .position(|field| key.eq_ignore_ascii_case(field));
        // Values are taken as text, as the general reading's raw values
        // are: serde's skipping alone lets bytes that are not UTF-8 pass.
        let Some(field) = field else {
            return serde_json::from_slice::<&RawValue>(scan.value()?)
                .ok()
                .map(drop);
        };
        // A repeated key: the general reading keeps the last.
        if std::mem::replace(&mut seen[field], true) {
            return None;
        }
        match field {
            0 => {
                let text = std::str::from_utf8(scan.value()?).ok()?;
                pod = serde_json::from_str::<Option<Pod>>(text).ok()?;
            }
            1 => {
                scan.skip_space();
                (named, scan.at) = plain_map::plain_map(scan.text, scan.at)?;
            }
            // Full pods as victims: the general reading's.
            _ => scan.null()?.then_some(())?,
        }
        Some(())
    })?;
    scan.end()?;
    Some(PreemptArgs { pod: pod?, named })
}

/// The candidate nodes of both maps with their victims' UIDs. A map that
/// is not an object is a bad request; victims in an unexpected shape only
/// go unchecked (their content never changes the answer).
pub fn named_nodes<'a>(args: &AnyCase<'a>) -> Result<NamedNodes<'a>, String> {
    let mut nodes = NamedNodes::new();
    for (field, meta) in [
        ("NodeNameToVictims", false),
        ("NodeNameToMetaVictims", true),
    ] {
        let Some(map) = args.raw(field) else {
            continue;
        };
        let map = match walked_map(map.get(), meta) {
            Some(map) => map,
            None => decoded_map(map, meta).map_err(|e| format!("field {field}: {e}"))?,
        };
        for (node, uids) in map {
            nodes.entry(node).or_default().extend(uids);
        }
    }
    Ok(nodes)
}

/// Node name → the UIDs of its victims (a name given twice keeps its last
/// value).
type NodeUids<'a> = HashMap<Cow<'a, str>, Vec<Cow<'a, str>>>;

/// A request names thousands of victims, and decoding each one again with
/// serde (the map, each victims object, the pod list, each pod, its UID)
/// was a third of a preempt request. The body is already known to be
/// JSON, so [`validated_walk::Walk`] reads the map in one pass. Victims it
/// cannot read (an escaped key or UID) are read with serde; `None` when
/// the map is not an object (serde then says what is wrong) or its keys
/// have escapes (node names never do).
fn walked_map(map: &str, meta: bool) -> Option<NodeUids<'_>> {
    let mut nodes = NodeUids::default();
    let mut walk = validated_walk::Walk::new(map);
    let is_object = walk.object(|walk, node| {
        let start = walk.mark();
        let uids = match walked_uids(walk, meta) {
            Some(uids) => uids,
            None => {
                walk.back_to(start);
                owned(decoded_uids(walk.value()?, meta))
            }
        };
        nodes.insert(Cow::Borrowed(node), uids);
        Some(())
    })?;
    is_object.then_some(nodes)
}

fn decoded_map(map: &RawValue, meta: bool) -> serde_json::Result<NodeUids<'static>> {
    let decoded: HashMap<String, &RawValue> = serde_json::from_str(map.get())?;
    Ok(decoded
        .into_iter()
        .map(|(node, victims)| (Cow::Owned(node), owned(decoded_uids(victims.get(), meta))))
        .collect())
}

fn owned(uids: Vec<String>) -> Vec<Cow<'static, str>> {
    uids.into_iter().map(Cow::Owned).collect()
}

/// `{"Pods": [...], "NumPDBViolations": n}` → the pods' UIDs, walked;
/// `None` for anything the walk leaves to serde.
fn walked_uids<'a>(walk: &mut validated_walk::Walk<'a>, meta: bool) -> Option<Vec<Cow<'a, str>>> {
    let mut uids = Vec::new();
    walk.object(|walk, key| {
        if !key.eq_ignore_ascii_case("Pods") {
            return walk.value().map(drop);
        }
        // The last `Pods` wins; one that is no list names no pod.
        uids.clear();
        walk.array(|walk| {
            let uid = if meta {
                // Most MetaPods come as Go writes them: no walk needed.
                match walk.only_string_member("UID") {
                    Some(uid) => Some(uid),
                    None => last_member(walk, "UID")?,
                }
            } else {
                let mut uid = None;
                walk.object(|walk, key| {
                    if key.eq_ignore_ascii_case("metadata") {
                        uid = last_member(walk, "uid")?;
                        Some(())
                    } else {
                        walk.value().map(drop)
                    }
                })?;
                uid
            };
            match uid {
                Some(uid) if uid.starts_with('"') => match validated_walk::plain_string(uid)? {
                    "" => {}
                    uid => uids.push(Cow::Borrowed(uid)),
                },
                // Not a string: not a UID, as serde reads it.
                _ => {}
            }
            Some(())
        })
        .map(drop)
    })?;
    Some(uids)
}

/// The raw value of the last member named `name` (any case) of the
/// object the walk is at; `Some(None)` when it is not an object or has
/// no such member.
fn last_member<'a>(walk: &mut validated_walk::Walk<'a>, name: &str) -> Option<Option<&'a str>> {
    let mut found = None;
    walk.object(|walk, key| {
        let value = walk.value()?;
        if key.eq_ignore_ascii_case(name) {
            found = Some(value);
        }
        Some(())
    })?;
    Some(found)
}

/// [`walked_uids`] with every part decoded by serde: for the victims the
/// walk leaves to it.
fn decoded_uids(victims: &str, meta: bool) -> Vec<String> {
    let pods = field_of(victims, "Pods")
        .and_then(|pods| serde_json::from_str::<Vec<&RawValue>>(pods.get()).ok());
    pods.into_iter()
        .flatten()
        .filter_map(|pod| uid_of(pod, meta))
        .collect()
}

fn uid_of(pod: &RawValue, meta: bool) -> Option<String> {
    let uid = if meta {
        field_of(pod.get(), "UID")?
    } else {
        field_of(field_of(pod.get(), "metadata")?.get(), "uid")?
    };
    let uid: String = serde_json::from_str(uid.get()).ok()?;
    (!uid.is_empty()).then_some(uid)
}

/// Named nodes from owned parts, for tests here and in `api`.
#[cfg(test)]
pub(crate) mod testing {
    use std::borrow::Cow;

    use super::NamedNodes;

    pub fn nodes(entries: &[(&str, &[&str])]) -> NamedNodes<'static> {
        entries
            .iter()
            .map(|(node, uids)| {
                let uids = uids.iter().map(|u| Cow::Owned(u.to_string())).collect();
                (Cow::Owned(node.to_string()), uids)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(body: &str) -> Result<NamedNodes<'_>, String> {
        named_nodes(&AnyCase::parse(body.as_bytes()).unwrap())
    }

    use super::testing::nodes;

    /// The preemptor is its own, whichever way the body is read: its
    /// parts are not pooled (see `extender_read::read_args`).
    #[test]
    fn preemptors_are_not_pooled() {
        use crate::model::Shared;
        let plain = br#"{"Pod":{"metadata":{"name":"p","labels":{"app":"a"}}},"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"u"}]}}}"#;
        let spaced = br#"{ "pod" : {"metadata":{"name":"p","labels":{"app":"a"}}}, "nodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u"}]}} }"#;
        for body in [&plain[..], &spaced[..]] {
            let read = || read_preempt_args(body).unwrap().pod;
            let (a, b) = (read(), read());
            assert_eq!(a, b);
            assert!(!Shared::ptr_eq(&a.metadata.labels, &b.metadata.labels));
        }
    }

    #[test]
    fn both_maps_name_nodes_and_victim_uids_in_any_case() {
        let got = named(
            r#"{"nodeNameToVictims": {"n1": {"pods": [{"metadata": {"UID": "a"}}, {"metadata": {}}]}},
                "NodeNameToMetaVictims": {"n2": {"Pods": [{"uid": "b"}, {"UID": ""}], "NumPDBViolations": 0},
                                          "n3": null}}"#,
        )
        .unwrap();
        assert_eq!(got, nodes(&[("n1", &["a"]), ("n2", &["b"]), ("n3", &[])]));
    }

    #[test]
    fn odd_victims_go_unchecked_but_a_map_that_is_no_object_is_refused() {
        let got = named(r#"{"NodeNameToMetaVictims": {"n1": {"Pods": 7}, "n2": [1]}}"#).unwrap();
        assert_eq!(got.len(), 2);
        assert!(got.values().all(Vec::is_empty));
        assert!(named(r#"{"NodeNameToVictims": ["n1"]}"#).is_err());
    }

    const POD: &str =
        r#"{"metadata":{"name":"urgent","namespace":"default","uid":"u"},"spec":{"priority":10}}"#;

    #[test]
    fn a_body_as_kube_scheduler_writes_it_is_read_in_one_pass() {
        let body = format!(
            r#"{{"Pod":{POD},"NodeNameToVictims":null,"NodeNameToMetaVictims":{{"n2":{{"Pods":[{{"UID":"b1"}},{{"UID":"b2"}}],"NumPDBViolations":1}},"n1":{{"Pods":[],"NumPDBViolations":0}}}}}}"#
        );
        let args = read_plain(body.as_bytes()).expect("read in one pass");
        assert_eq!(args.named, nodes(&[("n1", &[]), ("n2", &["b1", "b2"])]));
        assert_eq!(args.pod.metadata.name, "urgent");
        assert_eq!(Ok(args), read_in_fields(body.as_bytes()));
    }

    #[test]
    fn bad_bodies_are_refused_as_before() {
        for body in [
            "[]".to_string(),
            format!(r#"{{"Pod":{POD},"NodeNameToMetaVictims":["n1"]}}"#),
            r#"{"Pod":null,"NodeNameToMetaVictims":{}}"#.to_string(),
            r#"{"NodeNameToMetaVictims":{}}"#.to_string(),
            format!(r#"{{"Pod":{POD},"NodeNameToMetaVictims":{{"n1":{{"Pods":[]}}}}"#),
            format!(
                r#"{{"Pod":{POD},"NodeNameToMetaVictims":{{"n1":{{"Pods":[{{"UID":"\x"}}]}}}}}}"#
            ),
        ] {
            let general = read_in_fields(body.as_bytes());
            assert!(general.is_err(), "{body}");
            assert_eq!(read_preempt_args(body.as_bytes()), general, "{body}");
        }
        // A byte that is not UTF-8 (0x82) in a member nothing reads, at the
        // top or in the pod (found by the fuzz target): refused, as the
        // general reading refuses it.
        let odd_pod = POD.replacen('{', r#"{"x":"@","#, 1);
        for body in [
            format!(r#"{{"Pod":{POD},"other":"@","NodeNameToMetaVictims":{{}}}}"#),
            format!(r#"{{"Pod":{odd_pod},"NodeNameToMetaVictims":{{}}}}"#),
        ] {
            let body: Vec<u8> = body
                .bytes()
                .map(|b| if b == b'@' { 0x82 } else { b })
                .collect();
            let general = read_in_fields(&body);
            assert!(general.is_err(), "{}", String::from_utf8_lossy(&body));
            assert_eq!(read_preempt_args(&body), general);
        }
    }

    /// Bodies near kube-scheduler's shape read in one pass exactly as the
    /// general reading reads them, or are left to it; either way the
    /// answer, or the error, is the general one.
    mod read_in_one_pass {
        use proptest::prelude::*;

        use super::*;

        fn string() -> impl Strategy<Value = &'static str> {
            prop::sample::select(vec![
                r#""n1""#,
                r#""n2""#,
                r#""""#,
                r#""é-1""#,
                r#""n\u0031""#,
                r#""a\"b""#,
                "\"tab\there\"",
                "7",
                "null",
            ])
        }

        fn space() -> impl Strategy<Value = &'static str> {
            prop::sample::select(vec!["", "", "", " ", "\n"])
        }

        fn pod() -> impl Strategy<Value = String> {
            let member = (
                prop::sample::select(vec!["UID", "uid", "Uid", "name"]),
                string(),
            )
                .prop_map(|(key, value)| format!(r#""{key}":{value}"#));
            prop::collection::vec(member, 0..3).prop_map(|m| format!("{{{}}}", m.join(",")))
        }

        fn victims() -> impl Strategy<Value = String> {
            let pods = prop_oneof![
                Just("null".to_string()),
                Just("7".to_string()),
                prop::collection::vec(pod(), 0..4).prop_map(|p| format!("[{}]", p.join(","))),
            ];
            let member = prop_oneof![
                (
                    prop::sample::select(vec!["Pods", "pods", "PODS", "Pod"]),
                    pods
                )
                    .prop_map(|(key, pods)| format!(r#""{key}":{pods}"#)),
                prop::sample::select(vec!["0", "3", "-1", "01", "-", "1.5", "2e1", r#""x""#])
                    .prop_map(|n| format!(r#""NumPDBViolations":{n}"#)),
            ];
            prop_oneof![
                1 => Just("null".to_string()),
                8 => (prop::collection::vec(member, 0..3), space()).prop_map(|(m, sp)| {
                    format!("{{{sp}{}}}", m.join(&format!(",{sp}")))
                }),
            ]
        }

        fn map() -> impl Strategy<Value = String> {
            prop_oneof![
                1 => prop::sample::select(vec!["null", "{}", "[]", "7", "{\"n1\"}"])
                    .prop_map(str::to_string),
                8 => (prop::collection::vec((string(), victims()), 0..4), space()).prop_map(
                    |(members, sp)| {
                        let members: Vec<String> =
                            members.into_iter().map(|(k, v)| format!("{k}:{sp}{v}")).collect();
                        format!("{{{}}}", members.join(","))
                    }
                ),
            ]
        }

        fn body() -> impl Strategy<Value = String> {
            let field = prop_oneof![
                prop::sample::select(vec!["Pod", "pod"]).prop_map(|k| format!(r#""{k}":{POD}"#)),
                Just(r#""Pod":null"#.to_string()),
                (
                    prop::sample::select(vec!["NodeNameToMetaVictims", "nodeNameToMetaVictims"]),
                    map()
                )
                    .prop_map(|(k, m)| format!(r#""{k}":{m}"#)),
                prop::sample::select(vec![
                    r#""NodeNameToVictims":null"#,
                    r#""NodeNameToVictims":{"n1":{"Pods":[{"metadata":{"uid":"f"}}]}}"#,
                    r#""other":[1,{"a":"}"}]"#,
                    r#""other":tru"#,
                ])
                .prop_map(str::to_string),
            ];
            (prop::collection::vec(field, 0..5), space())
                .prop_map(|(fields, sp)| format!("{{{sp}{}}}", fields.join(",")))
        }

        proptest! {
            #[test]
            fn one_pass_reads_what_the_general_reading_reads(
                body in body(),
                meta in map(),
            ) {
                let bodies = [body, format!(r#"{{"Pod":{POD},"NodeNameToMetaVictims":{meta}}}"#)];
                for body in bodies {
                    let general = read_in_fields(body.as_bytes());
                    if let Some(args) = read_plain(body.as_bytes()) {
                        prop_assert_eq!(Ok(&args), general.as_ref(), "{}", body);
                    }
                    prop_assert_eq!(read_preempt_args(body.as_bytes()), general, "{}", body);
                }
            }
        }
    }

    /// The walk over the victims' text must read exactly the UIDs serde
    /// reads, for every shape: keys in any case and repeated, escapes,
    /// victims and pods that are not objects, UIDs that are not strings.
    mod walked_as_decoded {
        use proptest::prelude::*;
        use serde_json::{Value, json};

        use super::super::*;

        fn key() -> impl Strategy<Value = String> {
            prop::sample::select(vec![
                "Pods",
                "pods",
                "PODS",
                "UID",
                "uid",
                "Uid",
                "metadata",
                "Metadata",
                "name",
                "NumPDBViolations",
                "Po\"ds",
                "",
            ])
            .prop_map(str::to_string)
        }

        fn leaf() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                Just(json!(1.5e300)),
                prop::sample::select(vec!["u-1", "", "a\"b", "back\\slash", "ünï", "}]"])
                    .prop_map(Value::from),
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            leaf().prop_recursive(4, 40, 5, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                    prop::collection::vec((key(), inner), 0..5)
                        .prop_map(|members| Value::Object(members.into_iter().collect())),
                ]
            })
        }

        /// Serialized with or without spaces, one key possibly spelled with
        /// a `\u` escape and one key possibly repeated.
        fn text() -> impl Strategy<Value = String> {
            (value(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
                |(v, pretty, escape, repeat)| {
                    let mut text = if pretty {
                        serde_json::to_string_pretty(&v).unwrap()
                    } else {
                        serde_json::to_string(&v).unwrap()
                    };
                    if escape {
                        text = text.replacen("\"Pods\"", "\"P\\u006fds\"", 1);
                    }
                    if repeat {
                        text = text.replacen("{\"", "{\"UID\": \"first\", \"", 1);
                    }
                    text
                },
            )
        }

        /// Victims of either kind, told apart by their UIDs, or anything.
        fn victims() -> impl Strategy<Value = String> {
            prop_oneof![
                text(),
                (0..9u8).prop_map(|k| format!(
                    r#"{{"Pods": [{{"UID": "u-{k}"}}, {{"metadata": {{"uid": "m-{k}"}}}}]}}"#
                )),
                // As Go writes MetaVictims, and near misses of that shape.
                (
                    0..9u8,
                    prop::sample::select(vec![
                        r#"{"UID":"u-@"}"#,
                        r#"{"UID":"u\"@"}"#,
                        r#"{"UID":7}"#,
                        r#"{"UID":"@","uid":"x"}"#,
                        r#"{"UID":"@" }"#,
                        r#"{"Uid":"@"}"#,
                        r#" {"UID":"@"}"#,
                        r#"{"UID":""}"#,
                    ])
                )
                    .prop_map(|(k, pod)| format!(
                        r#"{{"Pods":[{0},{0}],"NumPDBViolations":0}}"#,
                        pod.replace('@', &k.to_string())
                    )),
            ]
        }

        /// A map of node names to victims, or something that is no map.
        fn map() -> impl Strategy<Value = String> {
            let name =
                prop::sample::select(vec![r#""n1""#, r#""n2""#, r#""n\u0031""#, r#""n\"3""#]);
            prop_oneof![
                1 => text(),
                4 => prop::collection::vec((name, victims()), 0..4).prop_map(|members| {
                    let members: Vec<String> =
                        members.into_iter().map(|(k, v)| format!("{k}: {v}")).collect();
                    format!("{{{}}}", members.join(", "))
                }),
            ]
        }

        /// What the maps read as when every part is decoded by serde.
        fn decoded<'a>(args: &AnyCase<'a>) -> Result<NamedNodes<'a>, String> {
            let mut nodes = NamedNodes::new();
            for (field, meta) in [
                ("NodeNameToVictims", false),
                ("NodeNameToMetaVictims", true),
            ] {
                let map: Option<HashMap<String, &RawValue>> = args.get_borrowed(field)?;
                for (node, victims) in map.into_iter().flatten() {
                    nodes
                        .entry(Cow::Owned(node))
                        .or_default()
                        .extend(owned(decoded_uids(victims.get(), meta)));
                }
            }
            Ok(nodes)
        }

        proptest! {
            #[test]
            fn walked_maps_are_the_decoded_maps(full in map(), meta in map()) {
                let body = format!(r#"{{"nodeNameToVictims": {full}, "NodeNameToMetaVictims": {meta}}}"#);
                let args = AnyCase::parse(body.as_bytes()).unwrap();
                prop_assert_eq!(named_nodes(&args), decoded(&args), "{}", body);
            }

            #[test]
            fn walked_uids_are_the_decoded_uids(
                victims in text(),
                pods in prop::collection::vec(text(), 0..4),
                meta in any::<bool>(),
            ) {
                let bodies = [
                    victims.clone(),
                    format!("{{\"Pods\": [{}]}}", pods.join(",")),
                    format!("{{\"pods\": [{{\"metadata\": {victims}}}, {victims}]}}"),
                ];
                for body in bodies {
                    let walked = walked_uids(&mut validated_walk::Walk::new(&body), meta);
                    if let Some(walked) = walked {
                        prop_assert_eq!(walked, decoded_uids(&body, meta), "{}", body);
                    } else {
                        prop_assert!(body.contains('\\'), "only escapes are left to serde: {}", body);
                    }
                }
            }
        }
    }
}
