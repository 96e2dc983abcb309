//! The prioritize answer written by hand. serde_json escapes every host
//! name byte by byte, which was 7–8 % of a 500-name prioritize's samples
//! in the served binary; names are checked a word at a time and copied
//! whole, as in the filter answer, and scores written with `itoa` (what
//! serde_json uses) rather than through `fmt`, which was another 5 %. The
//! bytes are exactly the derived encoding's (a property test checks).

use super::extender::HostPriority;
use super::lexer::json_string::write_str;

/// `[{"Host":"..","Score":n},..]`.
pub fn host_priorities_json(list: &[HostPriority]) -> Result<Vec<u8>, serde_json::Error> {
    const FRAME: usize = r#"{"Host":"","Score":-9223372036854775808},"#.len();
    let mut out = Vec::with_capacity(2 + list.iter().map(|h| h.host.len() + FRAME).sum::<usize>());
    let mut score = itoa::Buffer::new();
    out.push(b'[');
    for (i, entry) in list.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"Host":"#);
        write_str(&mut out, &entry.host)?;
        out.extend_from_slice(br#","Score":"#);
        out.extend_from_slice(score.format(entry.score).as_bytes());
        out.push(b'}');
    }
    out.push(b']');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn the_answer_is_byte_for_byte_serdes(
            entries in prop::collection::vec(("[a-z0-9.\"\\\\\u{1}\n é🙂-]{0,20}", any::<i64>()), 0..8),
        ) {
            let list: Vec<HostPriority> = entries
                .into_iter()
                .map(|(host, score)| HostPriority { host: host.into(), score })
                .collect();
            prop_assert_eq!(host_priorities_json(&list).unwrap(), serde_json::to_vec(&list).unwrap());
        }
    }
}
