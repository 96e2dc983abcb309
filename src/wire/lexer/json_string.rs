//! JSON strings in the hand-written answers (filter, prioritize,
//! admission): one check for whether a string needs escaping, one writer.
//! Node names, reasons, uids and class names almost never do, so a string
//! is checked eight bytes at a time and copied whole when clean; anything
//! else goes through serde_json, so the bytes are always serde's.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of every byte of `word` equal to `byte` (exact for the
/// lowest such byte; nonzero exactly when there is one).
#[inline(always)]
fn bytes_equal(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// Nonzero exactly when `word` holds a byte JSON escapes: `"`, `\` or a
/// control byte (below 0x20). serde_json escapes nothing else.
#[inline(always)]
fn escaped_bytes(word: u64) -> u64 {
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    bytes_equal(word, b'"') | bytes_equal(word, b'\\') | control
}

/// Whether JSON needs any byte of `bytes` escaped. Eight bytes at a time
/// without early exit, the last few padded with spaces.
pub(in crate::wire) fn needs_escape(bytes: &[u8]) -> bool {
    let (words, tail) = bytes.as_chunks::<8>();
    let mut last = [b' '; 8];
    last[..tail.len()].copy_from_slice(tail);
    words
        .iter()
        .fold(escaped_bytes(u64::from_le_bytes(last)), |bad, w| {
            bad | escaped_bytes(u64::from_le_bytes(*w))
        })
        != 0
}

/// `s` as a JSON string: between quotes as it is when nothing in it needs
/// escaping, else as serde_json writes it.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) -> Result<(), serde_json::Error> {
    if needs_escape(s.as_bytes()) {
        return serde_json::to_writer(out, s);
    }
    write_quoted(out, s);
    Ok(())
}

/// `s` between quotes, as it is (the caller knows it needs no escaping).
pub(in crate::wire) fn write_quoted(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_check_finds_every_byte_that_needs_it() {
        for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40] {
            let clean = "a".repeat(len);
            assert!(!needs_escape(clean.as_bytes()));
            for at in 0..len {
                for bad in [b'"', b'\\', b'\n', 0x00, 0x1f] {
                    let mut s = clean.clone().into_bytes();
                    s[at] = bad;
                    assert!(needs_escape(&s), "{bad:#x} at {at} of {len}");
                }
            }
        }
        assert!(!needs_escape("é ü 🙂 ~ \u{7f}".as_bytes()));
    }

    proptest::proptest! {
        /// The word-at-a-time check says what a byte-by-byte check says.
        #[test]
        fn escape_check_agrees_with_a_byte_by_byte_check(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
        ) {
            let naive = bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
            proptest::prop_assert_eq!(needs_escape(&bytes), naive);
        }

        /// What is written is serde_json's string, escaped or not.
        #[test]
        fn written_strings_are_serdes(s in "[a-z0-9.\"\\\\\u{1}\n\t é🙂-]{0,24}") {
            let mut out = Vec::new();
            write_str(&mut out, &s).unwrap();
            proptest::prop_assert_eq!(out, serde_json::to_vec(&s).unwrap());
        }
    }
}
