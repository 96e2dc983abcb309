//! A JSON cursor that accepts no more than serde_json does, for the fast
//! readers of small hot bodies (the pod admission review). It checks the
//! whole grammar of what it passes over — strings free of control bytes,
//! numbers as serde_json reads them, literals, commas, colons and brackets,
//! nothing after the value, a skipped string's escapes — but leaves
//! anything unusual to serde: a key or read string with a backslash,
//! nesting deeper than [`MAX_DEPTH`], a number a field cannot take as is. Every such case, and every error, is `None`,
//! and the caller reads the body with serde instead, which then says what
//! is wrong in its own words.
//!
//! What makes it cheaper than serde's own pass: strings and indentation are
//! passed eight bytes at a time (one word compared against `"`, `\`, the
//! control bytes and the space), and UTF-8 is the caller's `&str`, checked
//! once for the whole body.

/// Deeper nesting is left to serde (whose own limit is 128 levels of
/// decoded structs; skipped values it passes at any depth).
const MAX_DEPTH: usize = 64;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of every byte of `word` equal to `byte`, exact for the
/// lowest such byte (a borrow only runs upward from a match).
#[inline(always)]
fn bytes_equal(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// The high bit of every byte of `word` that may end a plain string run:
/// `"`, `\` or a control byte (below 0x20); exact for the lowest one, and
/// nonzero exactly when there is one (also what the filter answer's escape
/// check asks).
#[inline(always)]
pub(super) fn string_stops(word: u64) -> u64 {
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    bytes_equal(word, b'"') | bytes_equal(word, b'\\') | control
}

/// Whether `text` written between quotes is already its JSON string:
/// no `"`, `\` or control byte (serde_json escapes nothing else).
pub fn needs_no_escape(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut words = bytes.chunks_exact(8);
    let plain_words = words.by_ref().all(|word| {
        word.try_into()
            .is_ok_and(|w| string_stops(u64::from_le_bytes(w)) == 0)
    });
    plain_words
        && words
            .remainder()
            .iter()
            .all(|&b| b != b'"' && b != b'\\' && b >= 0x20)
}

/// A position in JSON text, always before a value or a separator.
pub struct Cursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            at: 0,
            depth: 0,
        }
    }

    /// The next byte that is not whitespace, now current. Inline for the
    /// common case of no whitespace at all.
    #[inline]
    pub fn peek(&mut self) -> Option<u8> {
        match *self.bytes.get(self.at)? {
            b if b > b' ' => Some(b),
            _ => self.peek_past_space(),
        }
    }

    /// [`Self::peek`] when there is whitespace first: runs of spaces (the
    /// indentation of pretty-printed JSON) a word at a time.
    #[inline(never)]
    fn peek_past_space(&mut self) -> Option<u8> {
        let bytes = self.bytes;
        let mut at = self.at;
        loop {
            while let Some(word) = bytes.get(at..).and_then(<[u8]>::first_chunk) {
                let other = u64::from_le_bytes(*word) ^ (ONES * u64::from(b' '));
                // Spaces before the first other byte; a word of them is 8
                // (`trailing_zeros` of 0 is 64).
                let spaces = other.trailing_zeros() as usize / 8;
                at += spaces;
                if spaces < 8 {
                    break;
                }
            }
            match *bytes.get(at)? {
                b' ' | b'\n' | b'\t' | b'\r' => at += 1,
                b => {
                    self.at = at;
                    return Some(b);
                }
            }
        }
    }

    #[inline]
    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// The text is over: nothing but whitespace after the value.
    pub fn end(mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    /// A string without escapes: the text between its quotes.
    #[inline]
    pub fn string(&mut self) -> Option<&'a str> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at + 1;
        let stop = self.string_stop(start)?;
        (self.bytes[stop] == b'"').then_some(())?;
        self.at = stop + 1;
        self.text.get(start..stop)
    }

    /// Where the first `"`, `\` or control byte at or after `i` is.
    #[inline]
    fn string_stop(&self, mut i: usize) -> Option<usize> {
        let bytes = self.bytes;
        while let Some(word) = bytes.get(i..).and_then(<[u8]>::first_chunk) {
            let stops = string_stops(u64::from_le_bytes(*word));
            if stops != 0 {
                return Some(i + stops.trailing_zeros() as usize / 8);
            }
            i += 8;
        }
        Some(
            i + bytes
                .get(i..)?
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?,
        )
    }

    /// Passes over a string whose value is not read: its escapes are
    /// checked as serde_json checks a skipped string's (a known escape
    /// letter, or `u` and four hex digits), not decoded.
    fn skip_string(&mut self) -> Option<()> {
        let mut i = self.at + 1;
        loop {
            i = self.string_stop(i)?;
            match self.bytes[i] {
                b'"' => {
                    self.at = i + 1;
                    return Some(());
                }
                b'\\' => i = self.escape_end(i + 1)?,
                _ => return None,
            }
        }
    }

    /// Just past the escape whose letter is at `i`.
    fn escape_end(&self, i: usize) -> Option<usize> {
        match *self.bytes.get(i)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(i + 1),
            b'u' => {
                let hex = self.bytes.get(i + 1..i + 5)?;
                hex.iter().all(u8::is_ascii_hexdigit).then_some(i + 5)
            }
            _ => None,
        }
    }

    /// When the next value is an object, calls `member` with each key in
    /// document order; `member` must read or pass over the member's value.
    /// A key with escapes is left to serde (it would have to be decoded to
    /// be compared).
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.container(b'{', b'}', |cursor| {
            let key = cursor.string()?;
            cursor.expect(b':')?;
            member(cursor, key)
        })
    }

    /// The walk of an object or array: `each` reads one member or element.
    #[inline]
    fn container(
        &mut self,
        open: u8,
        close: u8,
        mut each: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.expect(open)?;
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())?;
        if self.peek()? == close {
            self.at += 1;
        } else {
            loop {
                each(self)?;
                match self.peek()? {
                    b',' => self.at += 1,
                    b if b == close => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// Passes over the next value of any kind, checking its grammar.
    pub fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => self.container(b'{', b'}', |cursor| {
                (cursor.peek()? == b'"').then_some(())?;
                cursor.skip_string()?;
                cursor.expect(b':')?;
                cursor.skip()
            }),
            b'[' => self.container(b'[', b']', Self::skip),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number().map(drop),
            _ => None,
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.bytes
            .get(self.at..)?
            .starts_with(word.as_bytes())
            .then(|| self.at += word.len())
    }

    /// `null` next (consumed): `Some(true)`; any other value: `Some(false)`,
    /// nothing consumed.
    pub fn null(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            self.literal("null")?;
            return Some(true);
        }
        Some(false)
    }

    pub fn bool(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.literal("true").map(|()| true),
            b'f' => self.literal("false").map(|()| false),
            _ => None,
        }
    }

    /// A number as serde_json's grammar has it: `-?(0|[1-9][0-9]*)`, then
    /// an optional fraction and exponent. Its text.
    fn number(&mut self) -> Option<&'a str> {
        self.peek()?;
        let bytes = self.bytes;
        let start = self.at;
        let digits = |i: usize| {
            i + bytes.get(i..).map_or(0, |rest| {
                rest.iter().take_while(|b| b.is_ascii_digit()).count()
            })
        };
        let mut i = start + usize::from(bytes.get(start) == Some(&b'-'));
        i = match bytes.get(i)? {
            b'0' => i + 1,
            b'1'..=b'9' => digits(i + 1),
            _ => return None,
        };
        if bytes.get(i) == Some(&b'.') {
            let end = digits(i + 1);
            (end > i + 1).then_some(())?;
            i = end;
        }
        if let Some(b'e' | b'E') = bytes.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = bytes.get(i) {
                i += 1;
            }
            let end = digits(i);
            (end > i).then_some(())?;
            i = end;
        }
        // serde_json refuses a digit after a leading zero.
        (!bytes.get(i).is_some_and(u8::is_ascii_digit)).then_some(())?;
        self.at = i;
        self.text.get(start..i)
    }

    /// An integer that fits an `i32`, written as serde_json decodes one
    /// into it (no fraction, exponent or `-0`).
    pub fn i32(&mut self) -> Option<i32> {
        let text = self.number()?;
        if text.contains(['.', 'e', 'E']) || text == "-0" {
            return None;
        }
        text.parse().ok()
    }
}

#[cfg(test)]
#[path = "strict_json_tests.rs"]
mod tests;
