//! A NodeNames array of plain strings (no escape, no control character:
//! what kube-scheduler sends), read where it lies in the body. Its text is
//! each name's value, so a name is the text between two quotes.
//!
//! At 5,000 names, walking them one after another was most of reading a
//! filter body, on one core. A large array is walked in two halves at once
//! when a helper is polling for work (`Splitter::helper_polling`: the
//! filter handler woke it from the body's declared length; a sleeping one
//! would start later than the whole walk takes on one core). The second
//! half starts at a name that follows a comma past the middle of the
//! text, the first from the array's start. The halves stand only if the
//! first walk reaches that place as the start of a name, where a walk of
//! the whole array would be too; otherwise the first walk goes on to the
//! array's end alone and the second is dropped (as `items` does with a
//! NodeList).

use crate::parallel::Splitter;

use super::super::extender::NodeName;
use super::super::lexer::json_extent::{next_quote, skip_space};

/// Arrays with this much text after their start or more are walked in two
/// halves when a helper polls: about 2,000 names, where the check splits.
const SPLIT_MIN: usize = 48 << 10;

/// The names of the array of plain strings whose `[` is at `text[at]`,
/// and the place just past its `]`. `None` when there is no such array
/// there: another value, an escape or a control character in a name,
/// text that is not UTF-8, or bad punctuation. Walked in halves when one
/// of `splitter`'s helpers polls.
pub(super) fn plain_names<'a>(
    text: &'a [u8],
    at: usize,
    splitter: &Splitter,
) -> Option<(Vec<NodeName<'a>>, usize)> {
    (text.get(at) == Some(&b'[')).then_some(())?;
    let from = at + 1;
    let rest = text.len() - from;
    let second = (rest >= SPLIT_MIN && splitter.helper_polling())
        .then(|| second_start(text, from + rest / 2))
        .flatten();
    read(text, from, second)
}

/// A name's opening quote right after a comma, at or after `middle`.
fn second_start(text: &[u8], middle: usize) -> Option<usize> {
    Some(middle + memchr::memmem::find(&text[middle..], b",\"")? + 1)
}

/// The array's names from `from` (just past its `[`), walked in two halves
/// (`walk_in_halves`) when `second` is given.
fn read(text: &[u8], from: usize, second: Option<usize>) -> Option<(Vec<NodeName<'_>>, usize)> {
    let Some(second) = second else {
        let (names, end, _) = walk(text, from, None)?;
        return Some((names, end));
    };
    super::walk_in_halves(from, second, |start, stop| walk(text, start, stop))
}

/// The names from `from` (just past the `[`, or a name's opening quote)
/// on, and where the walk ended: just past the array's `]`, or at `stop`
/// when a name starts there (the `bool`). `None` when the text from `from`
/// is not plain strings with commas between them.
fn walk(text: &[u8], from: usize, stop: Option<usize>) -> Option<(Vec<NodeName<'_>>, usize, bool)> {
    /// Enough for the names kube-scheduler sends at 5,000 nodes without
    /// growing, not so much that another body reserves megabytes.
    const EXPECTED_MAX: usize = 8_192;
    let mut spans = Vec::with_capacity(((text.len() - from) / 32).min(EXPECTED_MAX));
    let mut at = skip_space(text, from);
    let reached = if text.get(at) == Some(&b']') {
        at += 1;
        false
    } else {
        loop {
            // Each name runs to the next quote. An escaped quote would end
            // it early, but its backslash is then inside what was walked,
            // and refused below.
            (text.get(at) == Some(&b'"')).then_some(())?;
            let open = at + 1;
            let close = next_quote(text, open)?;
            spans.push((open, close));
            at = skip_space(text, close + 1);
            match text.get(at)? {
                b',' => {
                    at = skip_space(text, at + 1);
                    if Some(at) == stop && text.get(at) == Some(&b'"') {
                        break true;
                    }
                }
                b']' => {
                    at += 1;
                    break false;
                }
                _ => return None,
            }
        }
    };
    let walked = &text[from..at];
    if memchr::memchr(b'\\', walked).is_some() {
        return None;
    }
    // Control characters are looked for over the whole walk at once
    // (vector compares), and in each name only when there is one (or
    // whitespace between the names).
    let below_space = |bytes: &[u8]| bytes.iter().fold(false, |found, &b| found | (b < 0x20));
    if below_space(walked)
        && spans
            .iter()
            .any(|&(open, close)| below_space(&text[open..close]))
    {
        return None;
    }
    // One UTF-8 check for the walk; a quote is ASCII, so every name starts
    // and ends on a character boundary of it.
    let walked = std::str::from_utf8(walked).ok()?;
    let mut names = Vec::with_capacity(spans.len());
    for (open, close) in spans {
        names.push(NodeName::Borrowed(walked.get(open - from..close - from)?));
    }
    Some((names, at, reached))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The array at the start of `text` read in one walk, and in two from
    /// every place after its `[`: each gives the one walk's answer.
    fn read_everywhere(text: &[u8]) -> Option<(Vec<NodeName<'_>>, usize)> {
        (text.first() == Some(&b'[')).then_some(())?;
        let whole = read(text, 1, None);
        for second in 1..=text.len() {
            assert_eq!(
                read(text, 1, Some(second)),
                whole,
                "second half from {second} of {}",
                String::from_utf8_lossy(text)
            );
        }
        whole
    }

    #[test]
    fn arrays_are_read_whole_and_in_halves_alike() {
        let names: Vec<String> = (0..9).map(|i| format!("n],\"{i}")).collect();
        let plain: Vec<String> = (0..9).map(|i| format!("n],{i}")).collect();
        let text = serde_json::to_string(&plain).unwrap() + "}";
        let (read, end) = read_everywhere(text.as_bytes()).unwrap();
        assert_eq!(read, plain);
        assert_eq!(end, text.len() - 1);
        let escaped = serde_json::to_string(&names).unwrap();
        assert_eq!(read_everywhere(escaped.as_bytes()), None);
        for text in ["[]", "[ ]", "[\"\"]", "[ \"a\" , \"\" ]"] {
            assert!(read_everywhere(text.as_bytes()).is_some(), "{text}");
        }
        for text in [
            "[\"a\",]",
            "[,\"a\"]",
            "[\"a\" \"b\"]",
            "[5]",
            "[\"a\"",
            "[\"a\",\"b\"",
        ] {
            assert!(read_everywhere(text.as_bytes()).is_none(), "{text}");
        }
    }

    #[test]
    fn a_large_array_splits_at_a_name_past_its_middle() {
        let names: Vec<String> = (0..4_000)
            .map(|i| format!("node-{i:05}.internal"))
            .collect();
        let text = serde_json::to_vec(&names).unwrap();
        let second = second_start(&text, text.len() / 2).unwrap();
        assert_eq!(&text[second - 1..=second], b",\"");
        let (first, _, reached) = walk(&text, 1, Some(second)).unwrap();
        assert!(reached && first.len() >= 1_990 && first.len() <= 2_010);
        let (read, end) = read(&text, 1, Some(second)).unwrap();
        assert_eq!(read, names);
        assert_eq!(end, text.len());
    }

    proptest! {
        /// Whole or in halves from any place, an array of plain names is
        /// read as serde_json reads it, and any other is refused.
        #[test]
        fn halves_read_as_serde_json_reads(
            names in prop::collection::vec("[a-z0-9.é\"\\\\\u{1}\t\\], ]{0,6}", 0..8),
            pretty in any::<bool>(),
        ) {
            let text = if pretty {
                serde_json::to_string_pretty(&names).unwrap()
            } else {
                serde_json::to_string(&names).unwrap()
            };
            let plain = !names
                .iter()
                .any(|n| n.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20));
            match read_everywhere(text.as_bytes()) {
                Some((read, end)) => {
                    prop_assert!(plain, "{text}");
                    prop_assert_eq!(read, names);
                    prop_assert_eq!(end, text.len());
                }
                None => prop_assert!(!plain, "{text}"),
            }
        }
    }
}
