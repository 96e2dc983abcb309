//! The filter answer written by hand. A 5,000-node answer is hundreds of KB
//! of node names and reasons, and serde_json escapes strings byte by byte:
//! that was the largest cost of such a request. Names and reasons almost
//! never need escaping, so each string is first checked in wide chunks and
//! copied whole when clean; anything else goes through serde_json. The
//! bytes are exactly those of the derived `Serialize` (a test checks).
//!
//! The failed nodes' members can be written where they were judged
//! ([`FailedNodes::write_members`]: on each core of a split check), and
//! the answer is then a list of chunks that sends those runs uncopied
//! ([`ExtenderFilterResult::to_json_chunks`]).

use std::collections::HashMap;

use bytes::Bytes;

use super::extender::{ExtenderFilterResult, FailedNodes, NodeListOut};
use super::lexer::json_string::{needs_escape, write_quoted, write_str};

impl ExtenderFilterResult<'_> {
    /// The JSON answer in one buffer ([`Self::to_json_chunks`] joined).
    pub fn to_json(&self, capacity: usize) -> Result<Vec<u8>, serde_json::Error> {
        let mut chunks = self.to_json_chunks(capacity)?.into_iter();
        let first = chunks.next().map(Vec::from).unwrap_or_default();
        Ok(chunks.fold(first, |mut out, chunk| {
            out.extend_from_slice(&chunk);
            out
        }))
    }

    /// The JSON answer as chunks to send one after another: the failed
    /// nodes' written runs as they are, the rest written here into a
    /// buffer of at least `capacity` bytes to start with, and at least its
    /// length when nothing needs escaping (growing a 500 KB answer meant
    /// copying it twice more).
    pub fn to_json_chunks(&self, capacity: usize) -> Result<Vec<Bytes>, serde_json::Error> {
        let mut out = Chunks::new(capacity.max(self.unescaped_len()));
        out.text.extend_from_slice(br#"{"Nodes":"#);
        write_nodes(&mut out.text, self.nodes.as_ref())?;
        out.text.extend_from_slice(br#","NodeNames":"#);
        match &self.node_names {
            None => out.text.extend_from_slice(b"null"),
            Some(names) => {
                out.text.push(b'[');
                for (i, name) in names.iter().enumerate() {
                    if i > 0 {
                        out.text.push(b',');
                    }
                    write_name(&mut out.text, name, self.node_names_plain)?;
                }
                out.text.push(b']');
            }
        }
        out.text.extend_from_slice(br#","FailedNodes":"#);
        write_failed(&mut out, &self.failed_nodes, self.node_names_plain)?;
        out.text
            .extend_from_slice(br#","FailedAndUnresolvableNodes":"#);
        write_failed(
            &mut out,
            &self.failed_and_unresolvable_nodes,
            self.node_names_plain,
        )?;
        out.text.extend_from_slice(br#","Error":"#);
        write_str(&mut out.text, &self.error)?;
        out.text.push(b'}');
        Ok(out.finish())
    }

    /// Both failed maps' members written now ([`FailedNodes::write_members`]).
    pub fn write_failures(&mut self) {
        self.failed_nodes.write_members(self.node_names_plain);
        self.failed_and_unresolvable_nodes
            .write_members(self.node_names_plain);
    }

    /// The length of what [`Self::to_json_chunks`] writes here if no
    /// string needs escaping (an upper bound on the frame, exact for the
    /// strings); written runs are not counted.
    fn unescaped_len(&self) -> usize {
        const FRAME: usize = 160;
        let names = self
            .node_names
            .as_ref()
            .map_or(0, |names| names.iter().map(|n| n.len() + 3).sum::<usize>());
        let items = self.nodes.as_ref().map_or(0, |list| {
            list.items.iter().map(|i| i.text().len() + 1).sum::<usize>()
        });
        let unwritten = |f: &FailedNodes<'_>| match f.written {
            Some(_) => 0,
            None => f.unescaped_len(),
        };
        FRAME
            + names
            + items
            + unwritten(&self.failed_nodes)
            + unwritten(&self.failed_and_unresolvable_nodes)
            + self.error.len()
    }
}

impl FailedNodes<'_> {
    /// Write every member as JSON now, to be sent as written. When that
    /// fails (a string serde_json cannot encode) nothing is written, and
    /// the answer meets the same error when it is encoded. `names_plain`:
    /// as [`write_name`].
    pub fn write_members(&mut self, names_plain: bool) {
        if self.written.is_some() {
            return;
        }
        let mut run = Vec::with_capacity(self.unescaped_len());
        if write_members(&mut run, self, names_plain).is_ok() {
            self.written = Some(if run.is_empty() {
                Vec::new()
            } else {
                vec![Bytes::from(run)]
            });
        }
    }

    /// The members' length if no string needs escaping.
    fn unescaped_len(&self) -> usize {
        self.iter().map(|(n, r)| n.len() + r.len() + 6).sum()
    }
}

/// A JSON text in chunks: those already written, and the one being
/// written.
struct Chunks {
    done: Vec<Bytes>,
    text: Vec<u8>,
}

impl Chunks {
    fn new(capacity: usize) -> Self {
        Self {
            done: Vec::new(),
            text: Vec::with_capacity(capacity),
        }
    }

    /// `run` next, as it is: a chunk of its own when large (copying it
    /// would cost more than sending one more slice), else copied.
    fn append(&mut self, run: &Bytes) {
        const OWN_CHUNK_MIN: usize = 4 << 10;
        if run.len() < OWN_CHUNK_MIN {
            self.text.extend_from_slice(run);
            return;
        }
        if !self.text.is_empty() {
            self.done.push(Bytes::from(std::mem::take(&mut self.text)));
        }
        self.done.push(run.clone());
    }

    fn finish(mut self) -> Vec<Bytes> {
        if !self.text.is_empty() {
            self.done.push(Bytes::from(self.text));
        }
        self.done
    }
}

/// `{"node":"reason",...}`: the written runs when there are, else each
/// member written now.
fn write_failed(
    out: &mut Chunks,
    failed: &FailedNodes<'_>,
    names_plain: bool,
) -> Result<(), serde_json::Error> {
    out.text.push(b'{');
    match &failed.written {
        Some(runs) => {
            for (i, run) in runs.iter().filter(|r| !r.is_empty()).enumerate() {
                if i > 0 {
                    out.text.push(b',');
                }
                out.append(run);
            }
        }
        None => write_members(&mut out.text, failed, names_plain)?,
    }
    out.text.push(b'}');
    Ok(())
}

/// `"node":"reason",...`; each distinct reason text is encoded once. The
/// nodes of a failing rule or domain come in runs with one text, so the
/// last text is compared before the table is asked. `names_plain`: as
/// [`write_name`].
fn write_members(
    out: &mut Vec<u8>,
    failed: &FailedNodes<'_>,
    names_plain: bool,
) -> Result<(), serde_json::Error> {
    type Text = (*const u8, usize);
    let mut encoded: HashMap<Text, (usize, usize), foldhash::fast::RandomState> =
        HashMap::default();
    let mut last: Option<(Text, (usize, usize))> = None;
    for (i, (node, reason)) in failed.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_name(out, node, names_plain)?;
        out.push(b':');
        let text = (reason.as_ptr(), reason.len());
        let known = match last {
            Some((t, at)) if t == text => Some(at),
            _ => encoded.get(&text).copied(),
        };
        let at = match known {
            Some((start, end)) => {
                out.extend_from_within(start..end);
                (start, end)
            }
            None => {
                let start = out.len();
                write_str(out, reason)?;
                encoded.insert(text, (start, out.len()));
                (start, out.len())
            }
        };
        last = Some((text, at));
    }
    Ok(())
}

/// The answered NodeList as its derived `Serialize` writes it, each item's
/// text copied: serde_json would read every text again to make it a
/// `RawValue` (hundreds of KB for a few dozen full Nodes), and each is
/// already one valid JSON value (a Node was decoded from it).
fn write_nodes(out: &mut Vec<u8>, list: Option<&NodeListOut<'_>>) -> Result<(), serde_json::Error> {
    let Some(list) = list else {
        out.extend_from_slice(b"null");
        return Ok(());
    };
    out.extend_from_slice(br#"{"apiVersion":"#);
    write_str(out, list.api_version)?;
    out.extend_from_slice(br#","kind":"#);
    write_str(out, list.kind)?;
    out.extend_from_slice(br#","metadata":"#);
    serde_json::to_writer(&mut *out, &list.metadata)?;
    out.extend_from_slice(br#","items":["#);
    for (i, item) in list.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item.text().as_bytes());
    }
    out.extend_from_slice(b"]}");
    Ok(())
}

/// A node name as a JSON string: between quotes as it is when the request
/// reader found every name plain (`plain`), else as [`write_str`].
fn write_name(out: &mut Vec<u8>, name: &str, plain: bool) -> Result<(), serde_json::Error> {
    if !plain {
        return write_str(out, name);
    }
    debug_assert!(!needs_escape(name.as_bytes()), "{name:?} is not plain");
    write_quoted(out, name);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::model::Reason;

    #[test]
    fn hand_written_answer_is_byte_for_byte_serdes() {
        let mut r = ExtenderFilterResult {
            node_names: Some(vec![
                Cow::Borrowed("plain"),
                Cow::Borrowed("quote\"d"),
                Cow::Owned("tab\there\u{1}".to_string()),
                Cow::Borrowed("ünïcode"),
            ]),
            ..Default::default()
        };
        // One shared text, written once and copied for the second node.
        let shared = Reason::from("zone \"a\" is full\n");
        r.failed_nodes.insert("n1".into(), shared.clone());
        r.failed_nodes.insert("n\\2".into(), shared);
        r.failed_and_unresolvable_nodes
            .insert("n3".into(), "node(s) had untolerated taint");
        r.failed_nodes.insert("n4".into(), "other");
        let ours = r.to_json(0).unwrap();
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            serde_json::to_string(&r).unwrap()
        );

        let errored = ExtenderFilterResult {
            error: "cannot decode ExtenderArgs: \"x\"".into(),
            ..Default::default()
        };
        assert_eq!(
            errored.to_json(0).unwrap(),
            serde_json::to_vec(&errored).unwrap()
        );
    }

    /// A Nodes-mode answer: the items' texts as they came (one kept from an
    /// earlier request, the others the body's own, spaces and escapes
    /// included), in serde's frame.
    #[test]
    fn nodes_answer_is_byte_for_byte_serdes() {
        use crate::model::RecentNodes;
        use crate::wire::extender::RawNode;
        let kept_text = format!(
            r#"{{"metadata":{{"name":"kept","annotations":{{"pad":"{}"}}}}}}"#,
            "x".repeat(300)
        );
        let recent = RecentNodes::default();
        recent.decode(&[&kept_text]).unwrap();
        let kept = recent.starts().kept_at(kept_text.as_bytes()).unwrap();
        let body = [
            r#"{ "metadata" : {"name":"spaced\u0041ünï"} }"#,
            r#"{"metadata":{"name":"b"},"status":{"images":[{"names":["x"]}]}}"#,
        ];
        let mut r = ExtenderFilterResult {
            nodes: Some(NodeListOut::new(vec![
                RawNode::Body(body[0]),
                RawNode::Kept(kept),
                RawNode::Body(body[1]),
            ])),
            ..Default::default()
        };
        r.failed_nodes.insert("c".into(), "other");
        let ours = String::from_utf8(r.to_json(0).unwrap()).unwrap();
        assert_eq!(ours, serde_json::to_string(&r).unwrap());
        assert!(ours.contains(&kept_text) && ours.contains(body[0]));
        let empty = ExtenderFilterResult {
            nodes: Some(NodeListOut::new(Vec::new())),
            ..Default::default()
        };
        assert_eq!(
            empty.to_json(0).unwrap(),
            serde_json::to_vec(&empty).unwrap()
        );
    }

    /// Parts that wrote their members, joined, send those runs (large
    /// ones as chunks of their own) and give serde's bytes; a part with a
    /// member not written leaves the whole map to be written at the end.
    #[test]
    fn written_runs_make_the_answer_serde_writes() {
        let zone = Reason::from("zone \"a\" is full");
        let part = |range: std::ops::Range<usize>| {
            let mut r = ExtenderFilterResult {
                node_names_plain: true,
                ..Default::default()
            };
            for i in range {
                let name = Cow::Owned(format!("node-{i:04}"));
                if i % 3 == 0 {
                    r.failed_and_unresolvable_nodes.insert(name, "tainted");
                } else {
                    r.failed_nodes.insert(name, zone.clone());
                }
            }
            r.write_failures();
            r
        };
        let mut joined = part(0..400);
        joined.append_failures(part(400..410));
        joined.append_failures(part(410..410));
        joined.append_failures(part(410..900));
        joined.node_names = Some(vec![Cow::Borrowed("ok-1")]);
        let chunks = joined.to_json_chunks(0).unwrap();
        assert!(chunks.len() >= 5, "{} chunks", chunks.len());
        assert_eq!(
            joined.to_json(0).unwrap(),
            serde_json::to_vec(&joined).unwrap()
        );
        assert_eq!(chunks.concat(), serde_json::to_vec(&joined).unwrap());

        let mut unwritten = ExtenderFilterResult::default();
        unwritten.failed_nodes.insert("late".into(), "other");
        joined.append_failures(unwritten);
        assert!(joined.failed_nodes.written.is_none());
        assert!(joined.failed_and_unresolvable_nodes.written.is_some());
        assert_eq!(
            joined.to_json(0).unwrap(),
            serde_json::to_vec(&joined).unwrap()
        );
    }

    #[test]
    fn plain_names_are_copied_as_serde_writes_them() {
        let reason = Reason::from("zone \"a\" is full");
        let mut r = ExtenderFilterResult {
            node_names: Some(vec![
                Cow::Borrowed("ip-10-0-0-1.internal"),
                Cow::Borrowed("é-ü"),
            ]),
            node_names_plain: true,
            ..Default::default()
        };
        r.failed_nodes.insert("n1".into(), reason.clone());
        r.failed_nodes.insert("n2".into(), reason);
        r.failed_and_unresolvable_nodes
            .insert("n3".into(), "node(s) had untolerated taint");
        assert_eq!(r.to_json(0).unwrap(), serde_json::to_vec(&r).unwrap());
    }
}
