use proptest::prelude::*;
use serde::de::IgnoredAny;

use super::*;

/// Whether the cursor passes over `text` as one whole value.
fn skips(text: &str) -> bool {
    let mut cursor = Cursor::new(text);
    cursor.skip().is_some() && cursor.end().is_some()
}

fn serde_accepts(text: &str) -> bool {
    serde_json::from_str::<IgnoredAny>(text).is_ok()
}

#[test]
fn the_word_tests_find_the_first_stop_at_every_offset() {
    for at in 0..8 {
        for stop in [b'"', b'\\', 0x00, 0x1f] {
            let mut word = *b"abcdefgh";
            word[at] = stop;
            // A later stop must not hide the first one.
            if at < 7 {
                word[7] = b'"';
            }
            let stops = string_stops(u64::from_le_bytes(word));
            assert_eq!(stops.trailing_zeros() as usize / 8, at, "{word:?}");
        }
    }
    assert_eq!(string_stops(u64::from_le_bytes(*b" ~\x7f\xc3\xa9 az")), 0);
}

#[test]
fn text_needs_no_escape_only_when_serde_writes_it_as_is() {
    for len in 0..20 {
        let plain: String = "aé~\u{7f}/".chars().cycle().take(len).collect();
        let as_is = format!("\"{plain}\"");
        assert!(needs_no_escape(&plain), "{plain:?}");
        assert_eq!(serde_json::to_string(&plain).unwrap(), as_is);
        for odd in ['"', '\\', '\n', '\u{1}', '\u{1f}'] {
            let text = format!("{plain}{odd}{plain}");
            assert!(!needs_no_escape(&text), "{text:?}");
            assert_ne!(serde_json::to_string(&text).unwrap(), format!("\"{text}\""));
        }
    }
}

#[test]
fn strings_of_every_length_end_at_their_quote() {
    for len in 0..40 {
        let inner: String = "é-x".chars().cycle().take(len).collect();
        let text = format!("\"{inner}\" ");
        let mut cursor = Cursor::new(&text);
        assert_eq!(cursor.string(), Some(inner.as_str()), "{text}");
        assert_eq!(cursor.end(), Some(()));
        let open = format!("\"{inner}");
        assert_eq!(Cursor::new(&open).string(), None, "unterminated {open}");
        let escaped = format!("\"{inner}\\n\"");
        assert_eq!(Cursor::new(&escaped).string(), None, "escaped {escaped}");
        let control = format!("\"{inner}\t\"");
        assert_eq!(Cursor::new(&control).string(), None, "control {control}");
    }
}

#[test]
fn skipped_strings_have_their_escapes_checked_not_decoded() {
    for good in [
        r#""\"\\\/\b\f\n\r\t""#,
        r#""\u00e9\uD800x""#,
        r#"{"k\u0041": "\uABCD"}"#,
    ] {
        assert!(skips(good), "{good}");
        assert!(serde_accepts(good), "{good}");
    }
    for bad in [
        r#""\x""#,
        r#""\u12""#,
        r#""\u12G4""#,
        r#""\"#,
        r#"{"\q": 1}"#,
    ] {
        assert!(!skips(bad), "{bad}");
        assert!(!serde_accepts(bad), "{bad}");
    }
    assert_eq!(
        Cursor::new(r#""\n""#).string(),
        None,
        "read strings are left to serde"
    );
}

#[test]
fn indentation_of_any_width_is_whitespace() {
    for width in 0..30 {
        let text = format!(
            "{{\n{}\"a\" :\r\n\t{}[ 1 ,2 ]\n{}}}",
            " ".repeat(width),
            " ".repeat(width),
            " ".repeat(width)
        );
        assert!(skips(&text), "{text:?}");
    }
}

#[test]
fn numbers_follow_serde_json_grammar() {
    for good in [
        "0", "-0", "7", "-12", "1.5", "0.25", "1e3", "2E-2", "1.5e+10", "-0.0e0",
    ] {
        assert!(skips(good), "{good}");
        assert!(serde_accepts(good), "{good}");
    }
    for bad in [
        "01", "-", "1.", ".5", "1e", "1e+", "+1", "--1", "1.e3", "0x1", "1ee2", "-01",
    ] {
        assert!(!skips(bad), "{bad}");
        assert!(!serde_accepts(bad), "{bad}");
    }
}

#[test]
fn i32_reads_only_what_serde_reads_into_an_i32() {
    let read = |text: &str| Cursor::new(text).i32();
    assert_eq!(read("7"), Some(7));
    assert_eq!(read("-2147483648"), Some(i32::MIN));
    assert_eq!(read("2147483647"), Some(i32::MAX));
    for other in [
        "2147483648",
        "-2147483649",
        "1.0",
        "1e2",
        "-0",
        "01",
        "\"1\"",
    ] {
        assert_eq!(read(other), None, "{other}");
    }
}

#[test]
fn deep_nesting_is_left_to_serde() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(skips(&deep(MAX_DEPTH)));
    assert!(!skips(&deep(MAX_DEPTH + 1)));
}

/// JSON-ish text: mostly valid values, with the odd broken piece.
fn texts() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(vec![
        "0",
        "-0",
        "12",
        "-3.5e2",
        "1.",
        "01",
        "true",
        "false",
        "null",
        "nul",
        "tru",
        "\"\"",
        "\"é\"",
        "\"a b\"",
        "\"a\\\"b\"",
        "\"\\u00e9\"",
        "\"\t\"",
        "\"\\x\"",
        "\"\\u0G00\"",
        "\"\\/\\n\"",
        "\"open",
        "}",
        "]",
        ",",
        ":",
        "x",
    ])
    .prop_map(str::to_string);
    leaf.prop_recursive(4, 40, 6, |inner| {
        let space = prop::sample::select(vec!["", " ", "\n  ", "\t", "\r\n"]);
        prop_oneof![
            prop::collection::vec((inner.clone(), space.clone()), 0..5).prop_map(|items| {
                let parts: Vec<String> = items
                    .into_iter()
                    .map(|(v, s)| format!("{s}{v}{s}"))
                    .collect();
                format!("[{}]", parts.join(","))
            }),
            prop::collection::vec(("[a-c\"]{0,2}", inner, space), 0..5).prop_map(|members| {
                let parts: Vec<String> = members
                    .into_iter()
                    .map(|(k, v, s)| format!("{s}\"{k}\"{s}:{s}{v}"))
                    .collect();
                format!("{{{}}}", parts.join(","))
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The cursor passes over exactly the text serde accepts.
    #[test]
    fn skipping_accepts_what_serde_accepts(text in texts()) {
        prop_assert_eq!(skips(&text), serde_accepts(&text), "{:?}", text);
    }
}
