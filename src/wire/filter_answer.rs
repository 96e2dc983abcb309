//! The filter answer written by hand. A 5,000-node answer is hundreds of KB
//! of node names and reasons, and serde_json escapes strings byte by byte:
//! that was the largest cost of such a request. Names and reasons almost
//! never need escaping, so each string is first checked in wide chunks and
//! copied whole when clean; anything else goes through serde_json. The
//! bytes are exactly those of the derived `Serialize` (a test checks).

use std::collections::HashMap;

use super::extender::{ExtenderFilterResult, FailedNodes};
use super::json_string::{needs_escape, write_quoted, write_str};

impl ExtenderFilterResult<'_> {
    /// The JSON answer, in a buffer of at least `capacity` bytes to start
    /// with, and at least the answer's length when nothing needs escaping:
    /// growing a 500 KB answer meant copying it twice more.
    pub fn to_json(&self, capacity: usize) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = Vec::with_capacity(capacity.max(self.unescaped_len()));
        out.extend_from_slice(br#"{"Nodes":"#);
        serde_json::to_writer(&mut out, &self.nodes)?;
        out.extend_from_slice(br#","NodeNames":"#);
        match &self.node_names {
            None => out.extend_from_slice(b"null"),
            Some(names) => {
                out.push(b'[');
                for (i, name) in names.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_name(&mut out, name, self.node_names_plain)?;
                }
                out.push(b']');
            }
        }
        out.extend_from_slice(br#","FailedNodes":"#);
        write_failed(&mut out, &self.failed_nodes, self.node_names_plain)?;
        out.extend_from_slice(br#","FailedAndUnresolvableNodes":"#);
        write_failed(
            &mut out,
            &self.failed_and_unresolvable_nodes,
            self.node_names_plain,
        )?;
        out.extend_from_slice(br#","Error":"#);
        write_str(&mut out, &self.error)?;
        out.push(b'}');
        Ok(out)
    }

    /// The answer's length if no string needs escaping (an upper bound on
    /// the frame, exact for the strings).
    fn unescaped_len(&self) -> usize {
        const FRAME: usize = 160;
        let names = self
            .node_names
            .as_ref()
            .map_or(0, |names| names.iter().map(|n| n.len() + 3).sum::<usize>());
        let items = self.nodes.as_ref().map_or(0, |list| {
            list.items.iter().map(|i| i.text().len() + 1).sum::<usize>()
        });
        let failed =
            |f: &FailedNodes<'_>| -> usize { f.iter().map(|(n, r)| n.len() + r.len() + 6).sum() };
        FRAME
            + names
            + items
            + failed(&self.failed_nodes)
            + failed(&self.failed_and_unresolvable_nodes)
            + self.error.len()
    }
}

/// `{"node":"reason",...}`; each distinct reason text is encoded once. The
/// nodes of a failing rule or domain come in runs with one text, so the
/// last text is compared before the table is asked. `names_plain`: as
/// [`write_name`].
fn write_failed(
    out: &mut Vec<u8>,
    failed: &FailedNodes<'_>,
    names_plain: bool,
) -> Result<(), serde_json::Error> {
    type Text = (*const u8, usize);
    let mut encoded: HashMap<Text, (usize, usize), foldhash::fast::RandomState> =
        HashMap::default();
    let mut last: Option<(Text, (usize, usize))> = None;
    out.push(b'{');
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
    out.push(b'}');
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
