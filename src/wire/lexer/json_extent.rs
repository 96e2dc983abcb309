//! Where a JSON value ends, found without decoding it: the one scan both
//! partial readers share (`extender_read` on request bodies,
//! `validated_walk` on text serde_json already accepted). Strings are passed
//! over by memchr; objects and arrays by counting brackets, not pairing
//! them, so a mismatch is left to whoever decodes the value.

/// Past the whitespace (JSON's four kinds) from `at`.
pub fn skip_space(text: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = text.get(at) {
        at += 1;
    }
    at
}

/// Just past the closing quote of the string whose opening quote is at
/// `at`; a backslash hides the byte after it. `None` when `text[at]` is
/// not a quote or the string does not end.
pub fn string_end(text: &[u8], at: usize) -> Option<usize> {
    (text.get(at) == Some(&b'"')).then_some(())?;
    let mut i = at + 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', text.get(i..)?)?;
        match text[i] {
            b'"' => return Some(i + 1),
            _ => i += 2,
        }
    }
}

/// Where the first `"` at or after `from` is. The strings read this way
/// are short (node names, UIDs: 36–64 bytes), where looking at 8 bytes at
/// once finds the quote in a few steps; memchr's setup for a haystack
/// that runs to the end of the body cost more than that, for each of
/// thousands of strings. Past a few words memchr takes over.
pub fn next_quote(text: &[u8], from: usize) -> Option<usize> {
    const WORDS: usize = 12;
    const QUOTES: u64 = u64::from_ne_bytes([b'"'; 8]);
    const LOW: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let rest = text.get(from..)?;
    let mut words = rest.chunks_exact(8);
    for (k, word) in words.by_ref().take(WORDS).enumerate() {
        let bytes: [u8; 8] = word.try_into().ok()?;
        // A quote is a zero byte of `x`; the lowest flagged byte is the
        // first zero (a borrow can only flag bytes above one).
        let x = u64::from_le_bytes(bytes) ^ QUOTES;
        let zero = x.wrapping_sub(LOW) & !x & HIGH;
        if zero != 0 {
            return Some(from + k * 8 + zero.trailing_zeros() as usize / 8);
        }
    }
    let searched = (rest.len() / 8).min(WORDS) * 8;
    memchr::memchr(b'"', &rest[searched..]).map(|i| from + searched + i)
}

/// Just past the bracket that closes the object or array opening at `at`.
fn nested_end(text: &[u8], mut at: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match *text.get(at)? {
            b'"' => {
                at = string_end(text, at)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
}

/// Just past the value starting at `at` (no whitespace before it): a
/// string, an object or array up to its closing bracket, or a scalar up
/// to the next delimiter. `None` when there is no value there.
pub fn value_end(text: &[u8], at: usize) -> Option<usize> {
    let end = match *text.get(at)? {
        b'"' => string_end(text, at)?,
        b'{' | b'[' => nested_end(text, at)?,
        _ => {
            let rest = &text[at..];
            at + rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(rest.len())
        }
    };
    (end > at).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_end_at_the_first_unescaped_quote_at_any_offset() {
        for len in 0..20 {
            let text = format!("\"{}\"tail", "x".repeat(len));
            assert_eq!(string_end(text.as_bytes(), 0), Some(len + 2), "{text}");
            let open = format!("\"{}", "x".repeat(len));
            assert_eq!(string_end(open.as_bytes(), 0), None, "unterminated");
            for backslash in 1..=len {
                let mut text = text.clone();
                text.replace_range(backslash..backslash + 1, "\\");
                // A backslash just before the quote hides it: no end left.
                let want = (backslash < len).then_some(len + 2);
                assert_eq!(string_end(text.as_bytes(), 0), want, "{text}");
            }
        }
        assert_eq!(string_end(b"x\"", 0), None, "not at a quote");
    }

    mod next_quote_as_memchr {
        use proptest::prelude::*;

        use super::*;

        proptest! {
            #[test]
            fn the_quote_found_is_memchrs(
                len in 0..300usize,
                quotes in prop::collection::vec(0..300usize, 0..3),
                from in 0..310usize,
            ) {
                let mut text = vec![b'x'; len];
                for q in quotes.into_iter().filter(|&q| q < len) {
                    text[q] = b'"';
                }
                let want = text
                    .get(from..)
                    .and_then(|rest| memchr::memchr(b'"', rest))
                    .map(|i| from + i);
                prop_assert_eq!(next_quote(&text, from), want);
            }
        }
    }

    #[test]
    fn values_end_after_their_last_byte() {
        let cases: [(&str, usize); 7] = [
            (r#""a\"b" , 1"#, 6),
            (r#"{"a": "}", "b": [1, {"c": "]"}]}x"#, 32),
            ("[[], {}],", 8),
            ("123,", 3),
            ("true}", 4),
            ("null", 4),
            ("-1.5e3 ", 6),
        ];
        for (text, end) in cases {
            assert_eq!(value_end(text.as_bytes(), 0), Some(end), "{text}");
        }
        assert_eq!(value_end(b",", 0), None, "no value");
        assert_eq!(value_end(b"", 0), None);
        assert_eq!(value_end(b"[1, 2", 0), None, "unclosed");
        assert_eq!(value_end(b"]", 0), None, "a close before any open");
        assert_eq!(skip_space(b" \t\r\n x", 0), 5);
    }
}
