//! A cursor over a request body that finds where JSON values begin and
//! end and checks the punctuation between them, leaving what is inside a
//! value to whoever decodes it: the partial readers of large bodies
//! (`extender_read`, `preempt_args`) share it.

use std::borrow::Cow;

use super::json_extent;

/// A cursor over JSON text that knows where values begin and end and
/// checks the punctuation between them; what is inside a value is left to
/// serde_json.
pub(in crate::wire) struct Scan<'a> {
    pub(in crate::wire) text: &'a [u8],
    pub(in crate::wire) at: usize,
}

impl<'a> Scan<'a> {
    pub(in crate::wire) fn new(text: &'a [u8]) -> Self {
        Self { text, at: 0 }
    }

    pub(in crate::wire) fn skip_space(&mut self) {
        self.at = json_extent::skip_space(self.text, self.at);
    }

    /// The next byte after any whitespace, consumed.
    pub(in crate::wire) fn next_byte(&mut self) -> Option<u8> {
        self.skip_space();
        let byte = *self.text.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    /// `{ "key": value, ... }`: `member` gets each key (unescaped) with
    /// the cursor on its value, and must move past that value.
    pub(in crate::wire) fn object(
        &mut self,
        mut member: impl FnMut(&str, &mut Self) -> Option<()>,
    ) -> Option<()> {
        (self.next_byte()? == b'{').then_some(())?;
        self.skip_space();
        if self.text.get(self.at) == Some(&b'}') {
            self.at += 1;
            return Some(());
        }
        loop {
            self.skip_space();
            let start = self.at;
            self.at = json_extent::string_end(self.text, start)?;
            let key: Cow<'_, str> = serde_json::from_slice(&self.text[start..self.at]).ok()?;
            (self.next_byte()? == b':').then_some(())?;
            member(&key, self)?;
            match self.next_byte()? {
                b',' => {}
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// Whether the value here is `null` (then passed); `None` for a value
    /// that starts as a literal but is not one.
    pub(in crate::wire) fn null(&mut self) -> Option<bool> {
        self.skip_space();
        if !matches!(self.text.get(self.at), Some(b'n')) {
            return Some(false);
        }
        (self.value()? == b"null").then_some(true)
    }

    /// Only whitespace is left.
    pub(in crate::wire) fn end(&mut self) -> Option<()> {
        self.skip_space();
        (self.at == self.text.len()).then_some(())
    }

    /// The next `len` bytes, passed.
    pub(in crate::wire) fn take(&mut self, len: usize) -> &'a [u8] {
        let start = self.at;
        self.at += len;
        &self.text[start..self.at]
    }

    /// The text of the value that starts here (see
    /// [`json_extent::value_end`]).
    pub(in crate::wire) fn value(&mut self) -> Option<&'a [u8]> {
        self.skip_space();
        let start = self.at;
        self.at = json_extent::value_end(self.text, start)?;
        Some(&self.text[start..self.at])
    }
}
