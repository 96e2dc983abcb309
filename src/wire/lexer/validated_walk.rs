//! Walking JSON text that serde_json has already accepted (a `RawValue`
//! of a parsed body) to read a few members without decoding the rest
//! again. The walk follows strings and brackets only and judges no
//! syntax, so it is for validated text only; whatever it does not expect
//! (an escaped key, text that ends early) makes it answer `None`, and the
//! caller reads that value with serde instead.

use super::json_extent;

/// A position in validated JSON text, always before a value or a
/// separator.
pub struct Walk<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Walk<'a> {
    pub fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }

    /// Where the walk is, to come back to with [`Self::back_to`].
    pub fn mark(&self) -> usize {
        self.at
    }

    pub fn back_to(&mut self, mark: usize) {
        self.at = mark;
    }

    /// When the next value is an object, calls `member` with each key (the
    /// text between its quotes) in document order; `member` must walk
    /// past the member's value. `Some(false)` (the value passed over) when
    /// it is not an object; `None` when a key has escapes (it would have
    /// to be decoded to be compared) or the walk is lost.
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<bool> {
        self.container(b'{', b'}', |walk| {
            let key = walk.string()?;
            if key.contains('\\') {
                return None;
            }
            walk.expect(b':')?;
            member(walk, key)
        })
    }

    /// [`Self::object`] for arrays: `element` walks past each element.
    pub fn array(&mut self, element: impl FnMut(&mut Self) -> Option<()>) -> Option<bool> {
        self.container(b'[', b']', element)
    }

    /// The walk of an object or array: `each` walks past one member after
    /// the separators; `Some(false)` (the value passed over) when the next
    /// value does not start with `open`.
    fn container(
        &mut self,
        open: u8,
        close: u8,
        mut each: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<bool> {
        if self.peek()? != open {
            self.value()?;
            return Some(false);
        }
        self.at += 1;
        loop {
            match self.peek()? {
                c if c == close => {
                    self.at += 1;
                    return Some(true);
                }
                b',' => self.at += 1,
                _ => {}
            }
            each(self)?;
        }
    }

    /// When the next value is the object `{"<key>":"<string>"}` written
    /// without spaces, as Go's encoder writes a struct of one string field:
    /// the string's raw text (quotes included), the walk past the object.
    /// `None`, the walk at that value, for anything else.
    pub fn only_string_member(&mut self, key: &str) -> Option<&'a str> {
        self.peek()?;
        let bytes = self.bytes();
        let key_at = self.at + 2;
        let key_end = key_at + key.len();
        let value_at = key_end + 2;
        let head = bytes.get(self.at..key_at)? == b"{\""
            && bytes.get(key_at..key_end)? == key.as_bytes()
            && bytes.get(key_end..value_at)? == b"\":";
        if !head || bytes.get(value_at) != Some(&b'"') {
            return None;
        }
        let end = json_extent::string_end(bytes, value_at)?;
        (bytes.get(end) == Some(&b'}')).then_some(())?;
        self.at = end + 1;
        self.text.get(value_at..end)
    }

    /// Passes over the next value of any kind: its raw text.
    pub fn value(&mut self) -> Option<&'a str> {
        let start = self.at_value()?;
        self.at = json_extent::value_end(self.bytes(), start)?;
        self.text.get(start..self.at)
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte that is not whitespace, now current.
    fn peek(&mut self) -> Option<u8> {
        self.at = json_extent::skip_space(self.bytes(), self.at);
        self.bytes().get(self.at).copied()
    }

    fn at_value(&mut self) -> Option<usize> {
        self.peek()?;
        Some(self.at)
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string at the current byte: the text between its quotes.
    fn string(&mut self) -> Option<&'a str> {
        let start = self.at_value()?;
        self.at = json_extent::string_end(self.bytes(), start)?;
        self.text.get(start + 1..self.at - 1)
    }
}

/// The content of the JSON string `value` when it has no escapes (so the
/// text between the quotes is the string); `None` for anything else.
pub fn plain_string(value: &str) -> Option<&str> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    memchr::memchr2(b'\\', b'"', inner.as_bytes())
        .is_none()
        .then_some(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every member as (key, raw value), or what `object` answered.
    fn members(text: &str) -> (Option<bool>, Vec<(&str, &str)>) {
        let mut seen = Vec::new();
        let mut walk = Walk::new(text);
        let answer = walk.object(|walk, key| {
            seen.push((key, walk.value()?));
            Some(())
        });
        (answer, seen)
    }

    #[test]
    fn members_are_given_in_order_with_their_raw_values() {
        let text = r#" { "a": 1, "b" : {"c": "}"}, "a": "long string past eight bytes", "d": [ "x", {"e": "]"} ] } "#;
        let (answer, seen) = members(text);
        assert_eq!(answer, Some(true));
        assert_eq!(
            seen,
            [
                ("a", "1"),
                ("b", r#"{"c": "}"}"#),
                ("a", r#""long string past eight bytes""#),
                ("d", r#"[ "x", {"e": "]"} ]"#),
            ]
        );
        assert_eq!(members("{}"), (Some(true), vec![]));
    }

    #[test]
    fn a_value_that_is_not_an_object_is_passed_over() {
        for not_an_object in ["7", "null", "[1, {}]", r#""{""#, "true"] {
            let text = format!("[{not_an_object}, 2]");
            let mut walk = Walk::new(&text);
            let mut after = None;
            walk.array(|walk| {
                match after {
                    None => {
                        assert_eq!(walk.object(|_, _| panic!("{not_an_object}")), Some(false));
                        after = Some(String::new());
                    }
                    Some(_) => after = Some(walk.value()?.to_string()),
                }
                Some(())
            })
            .unwrap();
            assert_eq!(after.as_deref(), Some("2"), "{not_an_object}");
        }
    }

    #[test]
    fn escaped_keys_and_lost_walks_are_left_to_serde() {
        assert_eq!(members(r#"{"P\u006fds": 1}"#).0, None);
        assert_eq!(members(r#"{"a": "b\"}"#).0, None);
        assert_eq!(members(r#"{"a": [1"#).0, None);
        assert_eq!(members(r#"{"a""#).0, None);
        assert_eq!(members(r#"{"a": }"#).0, None);
        assert_eq!(members(r#"{"a": 1"#).0, None);
        assert_eq!(Walk::new("[1, [2").array(|w| w.value().map(drop)), None);
        assert_eq!(Walk::new("").value(), None);
    }

    #[test]
    fn escaped_quotes_inside_values_do_not_end_them() {
        let (_, seen) = members(r#"{"a": "x\"}y", "b": ["\\", "\""], "c": 3}"#);
        assert_eq!(
            seen,
            [("a", r#""x\"}y""#), ("b", r#"["\\", "\""]"#), ("c", "3")]
        );
    }

    #[test]
    fn a_walk_can_go_back_and_pass_over_a_value() {
        let mut walk = Walk::new(r#"[{"a": [1, 2]}, 3]"#);
        let mut raw = Vec::new();
        walk.array(|walk| {
            let mark = walk.mark();
            walk.object(|walk, _| walk.array(|w| w.value().map(drop)).map(drop))?;
            walk.back_to(mark);
            raw.push(walk.value()?);
            Some(())
        })
        .unwrap();
        assert_eq!(raw, [r#"{"a": [1, 2]}"#, "3"]);
    }

    #[test]
    fn plain_strings_are_read_without_decoding() {
        assert_eq!(plain_string(r#""abc-1""#), Some("abc-1"));
        assert_eq!(plain_string(r#""""#), Some(""));
        assert_eq!(plain_string(r#""a\"b""#), None);
        assert_eq!(plain_string("7"), None);
        assert_eq!(plain_string("null"), None);
    }
}
