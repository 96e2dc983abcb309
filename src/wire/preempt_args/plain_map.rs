//! A `NodeNameToMetaVictims` map as kube-scheduler writes it, read where
//! it lies in the body: `{"node":{"Pods":[{"UID":"…"},…],
//! "NumPDBViolations":0},…}` with plain strings (no escape, no control
//! character). Every byte of the map is accounted for by this grammar, so
//! a map it reads is valid JSON and reads as serde_json would read it.
//!
//! serde_json passed over the whole map once to find its end (the body's
//! other fields are beside it), and the walk then read it again: a
//! third of a 200-node preempt request. Anything else — an escape, a
//! member other than `Pods` and `NumPDBViolations`, a victim with other
//! members, a number that is not an integer, tabs or newlines — makes the
//! reader answer `None`, and the caller reads the body the general way.

use std::borrow::Cow;
use std::ops::Range;

use super::NamedNodes;
use crate::wire::lexer::json_extent::{next_quote, skip_space};

/// The map whose `{` is at `text[at]` (or `null` there: no nodes) and the
/// place just past it; `None` when it is not such a map.
pub(super) fn plain_map(text: &[u8], at: usize) -> Option<(NamedNodes<'_>, usize)> {
    // A victim takes ~50 bytes, a node ~100 besides its victims.
    let mut read = Read {
        text,
        at,
        uids: Vec::with_capacity((text.len() - at) / 48),
    };
    let mut nodes: Vec<(Range<usize>, Range<usize>)> = Vec::with_capacity(64);
    if !read.literal(b"null") {
        read.byte(b'{')?;
        if !read.byte_if(b'}') {
            loop {
                let name = read.string()?;
                read.byte(b':')?;
                let uids = read.victims()?;
                nodes.push((name, uids));
                if !read.byte_if(b',') {
                    read.byte(b'}')?;
                    break;
                }
            }
        }
    }
    let walked = &text[at..read.at];
    // An escape would have ended a string early at its quote; its
    // backslash is then inside the walk, which is refused whole.
    let below_space = walked.iter().fold(false, |found, &b| found | (b < 0x20));
    if below_space || memchr::memchr(b'\\', walked).is_some() {
        return None;
    }
    // One UTF-8 check for the walk; quotes are ASCII, so every string
    // starts and ends on a character boundary of it.
    let walked = std::str::from_utf8(walked).ok()?;
    let str_at = |span: &Range<usize>| {
        walked
            .get(span.start - at..span.end - at)
            .map(Cow::Borrowed)
    };
    let mut named = Vec::with_capacity(nodes.len());
    for (name, uids) in nodes {
        let mut strings = Vec::with_capacity(uids.len());
        for uid in &read.uids[uids] {
            strings.push(str_at(uid)?);
        }
        named.push((str_at(&name)?, strings));
    }
    // Go writes the names sorted, which the map is built from without a
    // search per name; a name given twice keeps its last victims, as
    // serde's map does.
    Some((NamedNodes::from_iter(named), read.at))
}

/// The walk: where it is, and the spans of the UIDs read so far.
struct Read<'a> {
    text: &'a [u8],
    at: usize,
    uids: Vec<Range<usize>>,
}

impl Read<'_> {
    /// The next byte after any whitespace is `byte`: passed.
    fn byte(&mut self, byte: u8) -> Option<()> {
        self.byte_if(byte).then_some(())
    }

    /// Whether the next byte after any whitespace is `byte` (then passed).
    fn byte_if(&mut self, byte: u8) -> bool {
        self.at = skip_space(self.text, self.at);
        let here = self.text.get(self.at) == Some(&byte);
        self.at += usize::from(here);
        here
    }

    /// Whether `literal` comes next (then passed).
    fn literal(&mut self, literal: &[u8]) -> bool {
        self.at = skip_space(self.text, self.at);
        let here = self.text[self.at..].starts_with(literal);
        if here {
            self.at += literal.len();
        }
        here
    }

    /// A string: the span between its quotes. It runs to the next quote;
    /// the caller refuses a walk with a backslash in it.
    fn string(&mut self) -> Option<Range<usize>> {
        self.byte(b'"')?;
        let open = self.at;
        let close = next_quote(self.text, open)?;
        self.at = close + 1;
        Some(open..close)
    }

    /// One node's `{"Pods":[…],"NumPDBViolations":n}` (or `null`): the
    /// range of its UIDs in `self.uids`. A repeated `Pods` keeps the last.
    fn victims(&mut self) -> Option<Range<usize>> {
        let first = self.uids.len();
        if self.literal(b"null") {
            return Some(first..first);
        }
        self.byte(b'{')?;
        if self.byte_if(b'}') {
            return Some(first..first);
        }
        loop {
            let key = self.string()?;
            self.byte(b':')?;
            let key = &self.text[key];
            if key.eq_ignore_ascii_case(b"Pods") {
                self.uids.truncate(first);
                self.pods()?;
            } else if key.eq_ignore_ascii_case(b"NumPDBViolations") {
                self.integer()?;
            } else {
                return None;
            }
            if !self.byte_if(b',') {
                self.byte(b'}')?;
                return Some(first..self.uids.len());
            }
        }
    }

    /// `[{"UID":"…"},…]` (or `null`); an empty UID names no pod, as the
    /// general reader has it.
    fn pods(&mut self) -> Option<()> {
        if self.literal(b"null") {
            return Some(());
        }
        self.byte(b'[')?;
        if self.byte_if(b']') {
            return Some(());
        }
        loop {
            if let Some(uid) = self.go_uid() {
                self.uids.extend((!uid.is_empty()).then_some(uid));
            } else {
                self.pod()?;
            }
            if !self.byte_if(b',') {
                self.byte(b']')?;
                return Some(());
            }
        }
    }

    /// `{"UID":"…"}` exactly as Go writes a MetaPod: the UID's span, the
    /// walk past the object; `None`, the walk unmoved, for anything else.
    fn go_uid(&mut self) -> Option<Range<usize>> {
        const HEAD: &[u8] = br#"{"UID":""#;
        let open = self.at + HEAD.len();
        self.text.get(self.at..open).filter(|head| *head == HEAD)?;
        let close = next_quote(self.text, open)?;
        (self.text.get(close + 1) == Some(&b'}')).then(|| {
            self.at = close + 2;
            open..close
        })
    }

    /// One pod of any other spelling: an object of `UID` members (any
    /// case, the last one counting).
    fn pod(&mut self) -> Option<()> {
        self.byte(b'{')?;
        if !self.byte_if(b'}') {
            let mut uid;
            loop {
                let key = self.string()?;
                self.byte(b':')?;
                if !self.text[key].eq_ignore_ascii_case(b"UID") {
                    return None;
                }
                uid = self.string()?;
                if !self.byte_if(b',') {
                    self.byte(b'}')?;
                    break;
                }
            }
            if !uid.is_empty() {
                self.uids.push(uid);
            }
        }
        Some(())
    }

    /// An integer as JSON writes it: `-?(0|[1-9][0-9]*)`.
    fn integer(&mut self) -> Option<()> {
        self.at = skip_space(self.text, self.at);
        self.at += usize::from(self.text.get(self.at) == Some(&b'-'));
        let digits = self.text[self.at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let leading_zero = digits > 1 && self.text[self.at] == b'0';
        (digits > 0 && !leading_zero).then(|| self.at += digits)
    }
}
