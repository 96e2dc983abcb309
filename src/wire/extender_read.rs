//! Reading an ExtenderArgs body ([`read_args`]): small ones in one serde
//! pass (`wire::extender`'s Deserialize), large ones in parts: a
//! Nodes-mode NodeList, or thousands of NodeNames. This module uses the
//! shapes of `wire::extender`; they do not know it.
//!
//! With `nodeCacheCapable: false` kube-scheduler sends every candidate as
//! a full v1 Node: tens of MB, nearly all of it fields the policies skip.
//! Read by serde_json as one document, the list was scanned twice (once to
//! find each item's text, once to decode the item), the first scan on one
//! core. Here a light scan finds the members of the object and the text
//! of each item (it follows strings and brackets and checks the
//! punctuation between members, nothing else), and serde_json reads each
//! part on its own, where its syntax is checked in full: the items on all
//! cores. A body this reading refuses, for any reason, is read again as one
//! document by serde_json, whose error the client gets: a bad body is told
//! exactly what it was told before. NodeNames of plain text are read
//! here directly, not by serde_json (`plain_names`).

use std::sync::Arc;

use serde::de::IgnoredAny;

use super::extender::{ExtenderArgs, Names, NodeList, NodeName};
use super::lexer::json_scan::Scan;

mod items;
mod plain_names;
use crate::model::shared::unpooled;
use crate::model::{Pod, RecentNodes};
use crate::parallel::Splitter;

/// Bodies at least this large (a Nodes-mode NodeList, a few hundred or
/// more NodeNames) are read in parts, which reads plain names directly;
/// smaller ones in one serde pass, where the scan would save nothing.
const SPLIT_READ_MIN: usize = 8 << 10;

/// The args of `body`; Nodes-mode items sent recently are taken from
/// `recent` (large bodies, the only ones that carry many nodes), and a
/// long NodeNames array is walked in two halves when one of `splitter`'s
/// helpers polls for work. A body refused is refused with serde_json's
/// error.
///
/// Nothing in it is pooled (`model::shared::unpooled`): the pod dies with
/// the request, and pooling its parts hashed and compared each of them
/// with the worker's pool, then freed the copy just decoded.
pub fn read_args<'a>(
    body: &'a [u8],
    recent: &RecentNodes,
    splitter: &Splitter,
) -> Result<ExtenderArgs<'a>, serde_json::Error> {
    unpooled(|| {
        if body.len() < SPLIT_READ_MIN {
            return serde_json::from_slice(body);
        }
        match read_in_parts(body, recent, splitter) {
            Some(args) => Ok(args),
            None => serde_json::from_slice(body),
        }
    })
}

/// The args, or `None` when the body is not a well-formed ExtenderArgs
/// (the caller reads it again with serde_json to say why).
fn read_in_parts<'a>(
    body: &'a [u8],
    recent: &RecentNodes,
    splitter: &Splitter,
) -> Option<ExtenderArgs<'a>> {
    let mut scan = Scan::new(body);
    let mut args = ExtenderArgs::default();
    scan.object(|key, scan| {
        if key.eq_ignore_ascii_case("pod") {
            let pod: Option<Pod> = serde_json::from_slice(scan.value()?).ok()?;
            args.pod = pod.map(Arc::new);
        } else if key.eq_ignore_ascii_case("nodes") {
            args.nodes = node_list(scan, recent)?;
        } else if key.eq_ignore_ascii_case("nodenames") {
            (args.node_names, args.node_names_plain) = node_names(scan, splitter)?;
        } else {
            serde_json::from_slice::<IgnoredAny>(scan.value()?).ok()?;
        }
        Some(())
    })?;
    scan.end()?;
    Some(args)
}

/// `NodeNames` where `scan` is, and whether every name is plain text.
/// Names are plain text (no escapes) in practice, and such an array is
/// read here directly: serde_json checked and copied each of 5,000 names
/// on its own, a tenth of a 5,000-name filter. Any other array (or `null`)
/// is serde_json's to read.
fn node_names<'a>(
    scan: &mut Scan<'a>,
    splitter: &Splitter,
) -> Option<(Option<Vec<NodeName<'a>>>, bool)> {
    scan.skip_space();
    if let Some((names, end)) = plain_names::plain_names(scan.text, scan.at, splitter) {
        scan.at = end;
        return Some((Some(names), true));
    }
    let names = serde_json::from_slice::<Option<Names<'_>>>(scan.value()?).ok()?;
    Some((names.map(|n| n.0), false))
}

/// A v1 NodeList (or `null`) where `scan` is: `items` decoded, other
/// members checked. Walked in place, so the list is scanned once.
fn node_list<'a>(scan: &mut Scan<'a>, recent: &RecentNodes) -> Option<Option<NodeList<'a>>> {
    if scan.null()? {
        return Some(None);
    }
    let mut list = NodeList::default();
    scan.object(|key, scan| {
        if key.eq_ignore_ascii_case("items") {
            list.items = items::items(scan, recent)?;
        } else {
            serde_json::from_slice::<IgnoredAny>(scan.value()?).ok()?;
        }
        Some(())
    })?;
    Some(Some(list))
}

/// A list walked in two halves at once, from `first` and from `second`
/// (a place where an element likely starts): `walk(start, stop)` walks
/// from `start` to the list's end, or to `stop` when an element starts
/// there (then its `bool` is true), giving the elements and where it
/// ended. The halves stand only if the walk from `first` reaches `second`
/// as the start of an element, where a walk of the whole list would be
/// too; otherwise that walk went on to the end alone and is the whole
/// list, and the second is dropped.
fn walk_in_halves<T: Send>(
    first: usize,
    second: usize,
    walk: impl Fn(usize, Option<usize>) -> Option<(Vec<T>, usize, bool)> + Sync,
) -> Option<(Vec<T>, usize)> {
    let starts = [first, second];
    let halves = crate::parallel::map_parts(&starts, 2, |_, part| {
        let walks = part.iter().map(|&start| {
            let stop = (start == first).then_some(second);
            walk(start, stop)
        });
        Ok::<_, std::convert::Infallible>(walks.collect::<Vec<_>>())
    });
    let halves = match halves {
        Ok(halves) => halves,
        Err(never) => match never {},
    };
    let mut halves = halves.into_iter().flatten();
    let (mut elements, end, reached) = halves.next()??;
    if !reached {
        return Some((elements, end));
    }
    let (more, end, _) = halves.next()??;
    elements.extend(more);
    Some((elements, end))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::model::{Node, Shared};
    use crate::synth::{SynthParams, generate_json};

    /// What both readings must agree on.
    fn parts(args: &ExtenderArgs<'_>) -> impl PartialEq + std::fmt::Debug {
        let nodes = args.nodes.as_ref().map(|list| {
            list.items
                .iter()
                .map(|(node, raw)| (node.clone(), raw.text().to_string()))
                .collect::<Vec<_>>()
        });
        (args.pod.clone(), args.node_names.clone(), nodes)
    }

    /// A body read in parts is read as serde_json reads it whole, the
    /// first time and again when its items are kept; a body serde_json
    /// refuses is refused.
    fn agree(body: &[u8]) -> Result<bool, TestCaseError> {
        let recent = RecentNodes::default();
        let cold = agree_with(body, &recent)?;
        prop_assert_eq!(
            agree_with(body, &recent)?,
            cold,
            "read again with its items kept"
        );
        Ok(cold)
    }

    fn agree_with(body: &[u8], recent: &RecentNodes) -> Result<bool, TestCaseError> {
        let whole = serde_json::from_slice::<ExtenderArgs<'_>>(body);
        let read = read_in_parts(body, recent, &Splitter::default());
        let parsed = read.is_some();
        match (read, &whole) {
            (Some(split), Ok(whole)) => {
                prop_assert_eq!(parts(&split), parts(whole));
                // Names said to be plain are their own JSON strings.
                if split.node_names_plain {
                    for name in split.node_names.iter().flatten() {
                        prop_assert_eq!(
                            serde_json::to_string(name).unwrap(),
                            format!("\"{name}\"")
                        );
                    }
                }
            }
            (Some(split), Err(e)) => {
                prop_assert!(false, "read {:?}, serde_json refuses: {e}", parts(&split))
            }
            (None, _) => {}
        }
        Ok(parsed)
    }

    fn realistic_nodes(count: usize) -> Vec<Value> {
        let params = SynthParams {
            pods: 0,
            ..SynthParams::new(count, 0)
        };
        let list: Value = serde_json::from_str(&generate_json(&params)).unwrap();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["kind"] == "Node")
            .cloned()
            .collect()
    }

    /// A request's pod is its own: read twice, small body or large, its
    /// parts are two copies, not one pooled value (which a pooled decoding
    /// gives, as the last assertion checks).
    #[test]
    fn request_pods_are_not_pooled() {
        let pod = json!({"metadata": {"name": "p", "labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        let names: Vec<String> = (0..1000).map(|i| format!("node-{i}")).collect();
        let small = serde_json::to_vec(&json!({"Pod": pod, "NodeNames": ["n"]})).unwrap();
        let large = serde_json::to_vec(&json!({"Pod": pod, "NodeNames": names})).unwrap();
        assert!(small.len() < SPLIT_READ_MIN && large.len() >= SPLIT_READ_MIN);
        let recent = RecentNodes::default();
        for body in [&small, &large] {
            let read = || {
                read_args(body, &recent, &Splitter::default())
                    .unwrap()
                    .pod
                    .unwrap()
            };
            let (a, b) = (read(), read());
            assert_eq!(a, b);
            assert!(!Shared::ptr_eq(&a.metadata.labels, &b.metadata.labels));
            assert!(!Shared::ptr_eq(&a.spec.containers, &b.spec.containers));
        }
        let pooled = || serde_json::from_value::<Pod>(pod.clone()).unwrap();
        assert!(Shared::ptr_eq(
            &pooled().metadata.labels,
            &pooled().metadata.labels
        ));
    }

    #[test]
    fn a_realistic_node_list_is_read_in_parts_as_serde_json_reads_it() {
        let nodes = realistic_nodes(40);
        assert_eq!(nodes.len(), 40);
        let body = serde_json::to_vec(&json!({
            "Pod": {"metadata": {"name": "p", "namespace": "ns"}},
            "Nodes": {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": nodes},
        }))
        .unwrap();
        assert!(
            agree(&body).unwrap(),
            "the realistic body took the slow path"
        );
        let args = read_in_parts(&body, &RecentNodes::default(), &Splitter::default()).unwrap();
        let items = &args.nodes.as_ref().unwrap().items;
        for ((node, raw), want) in items.iter().zip(&nodes) {
            assert_eq!(node.name(), want["metadata"]["name"]);
            let text: Value = serde_json::from_str(raw.text()).unwrap();
            assert_eq!(&text, want, "the raw text is the item itself");
        }
    }

    #[test]
    fn items_sent_before_are_recognised_where_they_start_and_only_as_sent() {
        let mut nodes = realistic_nodes(12);
        let body = |nodes: &[Value], between: &str| {
            let items: Vec<String> = nodes.iter().map(Value::to_string).collect();
            let items = items.join(&format!(",{between}"));
            format!(r#"{{"Pod":{{}},"Nodes":{{"items":[{between}{items}{between}]}}}}"#)
                .into_bytes()
        };
        let recent = RecentNodes::default();
        let read = |body: &[u8]| {
            let args = read_in_parts(body, &recent, &Splitter::default()).expect("the body reads");
            args.nodes
                .unwrap()
                .items
                .into_iter()
                .map(|(node, _)| node)
                .collect::<Vec<_>>()
        };
        let first = read(&body(&nodes, ""));
        // Spaced out, the items are the same texts: each is the kept node.
        let again = read(&body(&nodes, "\n  "));
        for (a, b) in first.iter().zip(&again) {
            assert!(Arc::ptr_eq(a, b), "{} decoded again", a.name());
        }
        // A change after the key prefix: that item is decoded, not taken.
        nodes[3]["status"]["allocatable"]["cpu"] = json!("999");
        let changed = read(&body(&nodes, " "));
        assert_eq!(
            *changed[3],
            serde_json::from_value::<Node>(nodes[3].clone()).unwrap()
        );
        assert!(!Arc::ptr_eq(&changed[3], &first[3]));
        assert!(Arc::ptr_eq(&changed[4], &first[4]));
        // A kept text followed by more of the item is not that item.
        let kept = nodes[5].to_string();
        let longer = format!(r#"{{"Pod":{{}},"Nodes":{{"items":[{kept}1]}}}}"#);
        assert!(read_in_parts(longer.as_bytes(), &recent, &Splitter::default()).is_none());
        let open = &kept[..kept.len() - 1];
        let longer = format!(r#"{{"Pod":{{}},"Nodes":{{"items":[{open},"x":1}}]}}}}"#);
        let got =
            read_in_parts(longer.as_bytes(), &recent, &Splitter::default()).expect("a valid body");
        let got = &got.nodes.unwrap().items[0];
        assert_eq!(
            got.1.text().len(),
            kept.len() + 6,
            "the whole item, not the kept text"
        );
    }

    #[test]
    fn what_serde_json_refuses_is_refused() {
        for body in [
            &b"null"[..],
            b"[]",
            b"{} x",
            b"{\"Pod\":{}} {}",
            b"{\"Pod\":{}}\x0c",
            b"{\"Pod\":{},}",
            b"{\"Nodes\":{\"items\":[{\"metadata\":{\"name\":5}}]}}",
            b"{\"Nodes\":{\"items\":[{},]}}",
            b"{\"Nodes\":{\"items\":{}}}",
            b"{\"Nodes\":[]}",
            b"{\"Pod\":{\"spec\":{\"priority\":\"high\"}}}",
            b"{\"extra\":[1,}",
            b"{\"\\x\":1}",
            b"{\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"\xff\"}}]}}",
            b"{\"NodeNames\":[\"a\x01b\"]}",
            b"{\"NodeNames\":[\"a\",\"\xffb\"]}",
            b"{\"NodeNames\":[\"a\",]}",
            b"{\"NodeNames\":[\"a\" \"b\"]}",
            b"{\"NodeNames\":[\"a\",5]}",
            b"{\"NodeNames\":[\"abcdefghijklmnop",
        ] {
            assert!(
                read_in_parts(body, &RecentNodes::default(), &Splitter::default()).is_none(),
                "{}",
                String::from_utf8_lossy(body)
            );
            assert!(serde_json::from_slice::<ExtenderArgs<'_>>(body).is_err());
        }
    }

    #[test]
    fn plain_names_are_read_from_the_body_and_others_by_serde_json() {
        let body = r#"{"NodeNames": [ "ip-10-0-0-1.eu-west-1.compute.internal" ,"n\u00e9","","zéz"],"Pod":{}}"#
            .as_bytes();
        let at = body.iter().position(|&b| b == b'[').unwrap();
        assert_eq!(
            plain_names::plain_names(body, at, &Splitter::default()),
            None,
            "an escaped name"
        );
        let plain = r#"[ "ip-10-0-0-1.eu-west-1.compute.internal" ,"","zéz" ]"#.as_bytes();
        let (names, end) = plain_names::plain_names(plain, 0, &Splitter::default()).unwrap();
        assert_eq!(names, ["ip-10-0-0-1.eu-west-1.compute.internal", "", "zéz"]);
        assert_eq!(end, plain.len());
        let args = read_in_parts(body, &RecentNodes::default(), &Splitter::default()).unwrap();
        assert!(!args.node_names_plain);
        assert_eq!(
            args.node_names.unwrap(),
            ["ip-10-0-0-1.eu-west-1.compute.internal", "né", "", "zéz"]
        );
    }

    /// A node; with `pad`, longer than the key prefix of kept texts, so
    /// that a second read recognises it where it starts.
    fn node(name: &str, pad: usize) -> Value {
        let note = format!("{name}{}", "x".repeat(pad));
        json!({"metadata": {"annotations": {"note": note}, "name": name,
                            "labels": {"zone": "a", "q": "x\"y\\z"}},
               "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
               "status": {"allocatable": {"cpu": "4"}, "images": [{"names": ["i"]}]}})
    }

    /// JSON text for `value`, spaced or not.
    fn text(value: &Value, pretty: bool) -> String {
        if pretty {
            serde_json::to_string_pretty(value).unwrap()
        } else {
            value.to_string()
        }
    }

    prop_compose! {
        fn bodies()(
            pod_key in prop::sample::select(vec!["Pod", "pod", "POD", "P\\u006fd"]),
            pod in prop::sample::select(vec![json!({"metadata": {"name": "p"}}), Value::Null,
                json!({"spec": {"priority": "high"}}), json!(3)]),
            nodes_key in prop::sample::select(vec!["Nodes", "nodes"]),
            items_key in prop::sample::select(vec!["items", "Items"]),
            names in prop::collection::vec("[a-z0-9\"\\\\\u{1}\n é]{0,4}", 0..4),
            names_shape in 0u8..3,
            broken in prop::option::of(0usize..4),
            extra in prop::option::of(prop::sample::select(vec![json!({"a": [1, {"b": null}]}),
                json!("s\u{1}"), json!(-1.5e3)])),
            pretty in any::<bool>(),
            pad in prop::sample::select(vec![0usize, 300]),
            cut in prop::option::of(0usize..400),
            tail in prop::sample::select(vec!["", " ", "\n", " }", "x"]),
        ) -> Vec<u8> {
            let mut items: Vec<Value> = names.iter().map(|n| node(n, pad)).collect();
            if let Some(i) = broken.filter(|&i| i < items.len()) {
                items[i]["metadata"]["name"] = json!(7);
            }
            let mut body = serde_json::Map::new();
            body.insert(nodes_key.to_string(), json!({"kind": "NodeList", items_key: items}));
            let node_names = match names_shape {
                0 => json!(names),
                1 => Value::Null,
                _ => {
                    let mut list = json!(names);
                    list.as_array_mut().unwrap().push(json!(5));
                    list
                }
            };
            body.insert("NodeNames".into(), node_names);
            if let Some(extra) = extra {
                body.insert("Extra".into(), extra);
            }
            let mut out = text(&Value::Object(body), pretty);
            // The key with an escape is written by hand: serde_json would
            // escape the backslash.
            let pod = format!("\"{pod_key}\":{},", text(&pod, pretty));
            out.insert_str(1, &pod);
            let mut out = out.into_bytes();
            if let Some(at) = cut {
                out.truncate(at.min(out.len()));
            }
            out.extend(tail.as_bytes());
            out
        }
    }

    proptest! {
        #[test]
        fn every_body_is_read_as_serde_json_reads_it(body in bodies()) {
            agree(&body)?;
        }
    }

    #[test]
    fn large_lists_keep_their_order_and_name_the_first_bad_item() {
        let items = |bad: &[usize]| {
            (0..2 * super::super::extender::PARALLEL_DECODE_MIN)
                .map(|i| {
                    if bad.contains(&i) {
                        r#"{"metadata":{"name":5}}"#.to_string()
                    } else {
                        format!(r#"{{"metadata":{{"name":"n{i}"}}}}"#)
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        let body = format!(r#"{{"Nodes":{{"items":[{}]}}}}"#, items(&[]));
        let list = read_args(
            body.as_bytes(),
            &RecentNodes::default(),
            &Splitter::default(),
        )
        .unwrap()
        .nodes
        .unwrap();
        assert_eq!(
            list.items.len(),
            2 * super::super::extender::PARALLEL_DECODE_MIN
        );
        for (i, (node, raw)) in list.items.iter().enumerate() {
            assert_eq!(node.name(), format!("n{i}"));
            assert!(raw.text().contains(&format!("\"n{i}\"")));
        }
        let last = 2 * super::super::extender::PARALLEL_DECODE_MIN - 1;
        let body = format!(r#"{{"Nodes":{{"items":[{}]}}}}"#, items(&[700, last]));
        let err = read_args(
            body.as_bytes(),
            &RecentNodes::default(),
            &Splitter::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("Nodes.items[700]"), "{err}");
    }
}
