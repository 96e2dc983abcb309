//! The fast reader against serde's one pass: on every body it reads, the
//! same request; on plain reviews, it reads them.

use proptest::prelude::*;

use super::*;
use crate::api::admission::decode_in_one_pass;

/// Both readers' requests, as text (the types hold borrowed text and have
/// no `PartialEq`; their `Debug` shows every field).
fn both(text: &str) -> (Option<String>, Option<String>) {
    let ours = pod_request(text).map(|r| format!("{r:?}"));
    let serde =
        decode_in_one_pass::<Decoded<PodPriorityFields>>(text.as_bytes()).map(|r| format!("{r:?}"));
    (ours, serde)
}

fn example(name: &str) -> String {
    let path = format!("{}/examples/requests/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn the_example_pod_reviews_are_read_as_serde_reads_them() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/requests");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if !name.starts_with("admit-") {
            continue;
        }
        let text = example(&name);
        let compact =
            serde_json::to_string(&serde_json::from_str::<serde_json::Value>(&text).unwrap())
                .unwrap();
        for text in [text, compact] {
            let (ours, serde) = both(&text);
            assert!(ours.is_some(), "{name}");
            assert_eq!(ours, serde, "{name}");
        }
        seen += 1;
    }
    assert!(seen >= 6, "{seen} example reviews");
}

#[test]
fn what_serde_would_refuse_or_read_otherwise_is_left_to_it() {
    let base = example("admit-create-default-class.json");
    let cases = [
        base.replacen(r#""uid": ""#, r#""uid": "\u0041"#, 1),
        base.replacen(
            r#""name": "web-1","#,
            r#""name": "web-1", "name": "web-2","#,
            1,
        ),
        base.replacen(r#""dryRun": false"#, r#""dryRun": 0"#, 1),
        base.replacen(
            r#""restartPolicy""#,
            r#""priority": 1.0, "restartPolicy""#,
            1,
        ),
        base.replacen(
            r#""restartPolicy""#,
            r#""priority": -0, "restartPolicy""#,
            1,
        ),
        base.replacen(
            r#""restartPolicy""#,
            r#""priority": 2147483648, "restartPolicy""#,
            1,
        ),
        base.replacen(r#""status": {}"#, r#""status": {},"#, 1),
        base.replacen(
            r#""version": "v1","#,
            r#""version": "v1", "group": "x","#,
            1,
        ),
        base.replacen(r#""kind": {"#, r#""kind": ["", "v1", "Pod"], "x": {"#, 1),
        base.replacen("admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1),
        base.replacen(r#""request": {"#, r#""request": null, "r": {"#, 1),
        format!("{base} x"),
        format!("{}{base}{}", "[".repeat(70), "]".repeat(70)),
    ];
    for text in cases {
        let (ours, _) = both(&text);
        assert_eq!(ours, None, "{text}");
    }
}

#[test]
fn null_and_absent_fields_read_as_serde_reads_them() {
    let base = example("admit-create-default-class.json");
    let cases = [
        base.replacen(r#""metadata": {"#, r#""metadata": null, "m": {"#, 1),
        base.replacen(r#""spec": {"#, r#""spec": null, "s": {"#, 1),
        base.replacen(r#""object": {"#, r#""object": null, "o": {"#, 1),
        base.replacen(r#""oldObject": null,"#, "", 1),
        base.replacen(r#""dryRun": false,"#, r#""dryRun": true,"#, 1),
        base.replacen(
            r#""restartPolicy""#,
            r#""priority": null, "priorityClassName": null, "preemptionPolicy": "Never", "restartPolicy""#,
            1,
        ),
        base.replacen(r#""restartPolicy""#, r#""priority": -7, "restartPolicy""#, 1),
    ];
    for text in cases {
        let (ours, serde) = both(&text);
        assert!(ours.is_some(), "{text}");
        assert_eq!(ours, serde, "{text}");
    }
}

/// Member values for every field the reader looks at: right types, wrong
/// types, `null`, escapes, numbers of every shape.
fn values() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "\"\"",
        "\"pods\"",
        "\"CREATE\"",
        "\"UPDATE\"",
        "\"high-priority\"",
        "\"é\"",
        "\"a\\\"b\"",
        "null",
        "true",
        "false",
        "0",
        "-0",
        "7",
        "-7",
        "1.5",
        "1e2",
        "2147483648",
        "{}",
        "[]",
        "{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"}",
        "{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"}",
        "[\"\",\"v1\",\"pods\"]",
        "{\"name\":\"web-1\",\"labels\":{\"app\":\"web\"}}",
        "{\"containers\":[{\"name\":\"c\",\"ports\":[{\"containerPort\":80}]}],\"priority\":3}",
        "{\"priorityClassName\":\"high-priority\",\"preemptionPolicy\":null}",
    ])
    .prop_map(str::to_string)
}

fn keys() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "uid",
        "kind",
        "resource",
        "subResource",
        "name",
        "namespace",
        "operation",
        "object",
        "oldObject",
        "dryRun",
        "metadata",
        "spec",
        "priority",
        "priorityClassName",
        "preemptionPolicy",
        "generateName",
        "group",
        "version",
        "userInfo",
        "x",
    ])
}

/// An object of up to `n` members drawn from `keys` and `values`.
fn object(members: Vec<(&str, String)>, space: &str) -> String {
    let parts: Vec<String> = members
        .into_iter()
        .map(|(k, v)| format!("{space}\"{k}\":{space}{v}"))
        .collect();
    format!("{{{}{space}}}", parts.join(","))
}

prop_compose! {
    /// A review whose request and pod are built from random members: mostly
    /// plausible, often odd.
    fn reviews()(
        request in prop::collection::vec((keys(), values()), 0..8),
        pod in prop::collection::vec((keys(), values()), 0..5),
        spec in prop::collection::vec((keys(), values()), 0..4),
        space in prop::sample::select(vec!["", " ", "\n    "]),
        version in prop::sample::select(vec!["admission.k8s.io/v1", "admission.k8s.io/v1beta1"]),
    ) -> String {
        let spec = object(spec, space);
        let pod = object(vec![("metadata", "{\"name\":\"p\"}".to_string()), ("spec", spec)]
            .into_iter().chain(pod).collect(), space);
        let mut members = vec![
            ("uid", "\"u-1\"".to_string()),
            ("kind", "{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"}".to_string()),
            ("resource", "{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"}".to_string()),
            ("operation", "\"CREATE\"".to_string()),
            ("object", pod),
        ];
        members.extend(request);
        let request = object(members, space);
        object(vec![
            ("apiVersion", format!("\"{version}\"")),
            ("kind", "\"AdmissionReview\"".to_string()),
            ("request", request),
        ], space)
    }
}

/// Small edits of a review's text: bytes cut, put in, replaced.
fn mutated() -> impl Strategy<Value = String> {
    let edit = (
        any::<prop::sample::Index>(),
        0..3usize,
        prop::sample::select(vec![
            "", "\"", "\\", "{", "}", "[", "]", ",", ":", " ", "\n", "0", "-", ".", "e", "n", "t",
            "\u{1}", "x", "é", "null", "1e5",
        ]),
    );
    (reviews(), prop::collection::vec(edit, 1..4)).prop_map(|(mut text, edits)| {
        for (at, cut, put) in edits {
            let mut i = at.index(text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            let mut end = (i + cut).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            text.replace_range(i..end, put);
        }
        text
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn a_generated_review_is_read_as_serde_reads_it(text in reviews()) {
        let (ours, serde) = both(&text);
        if let Some(ours) = &ours {
            prop_assert_eq!(Some(ours), serde.as_ref(), "{}", text);
        } else if !text.contains('\\') && !text.contains("[]") && !text.contains("[\"\",") {
            // Plain text the reader gave up on must be text serde refuses
            // (serde also reads a struct from an array, which is left to it).
            prop_assert_eq!(serde, None, "{}", text);
        }
    }

    #[test]
    fn a_mutated_review_is_read_as_serde_reads_it_or_left_to_serde(text in mutated()) {
        let (ours, serde) = both(&text);
        if ours.is_some() {
            prop_assert_eq!(ours, serde, "{}", text);
        }
    }
}
