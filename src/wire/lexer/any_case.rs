//! Go's encoding/json matches object keys to struct fields without regard
//! to case, and some extender clients send `pod` instead of `Pod`. This
//! splits a JSON object into lower-cased keys and their raw values, so a
//! handler decodes only the fields it reads (the last of keys equal but
//! for case wins, as in Go).

use std::collections::HashMap;
use std::fmt;

use serde::de::{DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

pub struct AnyCase<'a>(HashMap<String, &'a RawValue>);

impl<'a> AnyCase<'a> {
    pub fn parse(body: &'a [u8]) -> Result<Self, String> {
        let mut de = serde_json::Deserializer::from_slice(body);
        let fields = de
            .deserialize_map(Fields)
            .and_then(|f| de.end().map(|()| f))
            .map_err(|e| format!("request body is not a JSON object: {e}"))?;
        Ok(Self(fields))
    }

    /// The field named `name` (any case); `None` when absent or `null`.
    pub fn get<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, String> {
        self.get_borrowed(name)
    }

    /// The raw text of the field named `name` (any case); `None` when
    /// absent or `null`.
    pub fn raw(&self, name: &str) -> Option<&'a RawValue> {
        self.0
            .get(&name.to_ascii_lowercase())
            .copied()
            .filter(|raw| raw.get() != "null")
    }

    /// [`AnyCase::get`] for types that borrow from the body (raw values,
    /// so nested objects can be split the same way).
    pub fn get_borrowed<T: Deserialize<'a>>(&self, name: &str) -> Result<Option<T>, String> {
        match self.0.get(&name.to_ascii_lowercase()) {
            None => Ok(None),
            Some(raw) if raw.get() == "null" => Ok(None),
            Some(raw) => serde_json::from_str(raw.get())
                .map(Some)
                .map_err(|e| format!("field {name}: {e}")),
        }
    }
}

/// The raw value of one field (any case, the last of keys equal but for
/// case, as [`AnyCase`]) of the JSON object `object`; `None` when `object`
/// is not an object or lacks the field. Cheaper than [`AnyCase::parse`]
/// for thousands of small objects (a preempt request's victims): no map,
/// no lower-cased copy of every key.
pub fn field_of<'a>(object: &'a str, name: &str) -> Option<&'a RawValue> {
    let mut de = serde_json::Deserializer::from_str(object);
    de.deserialize_map(FieldOf(name)).ok().flatten()
}

struct FieldOf<'n>(&'n str);

impl<'de> Visitor<'de> for FieldOf<'_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key.eq_ignore_ascii_case(self.0) {
                found = Some(map.next_value::<&'de RawValue>()?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Keys in document order, lower-cased, later ones replacing earlier ones.
struct Fields;

impl<'de> Visitor<'de> for Fields {
    type Value = HashMap<String, &'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = HashMap::new();
        while let Some((key, value)) =
            map.next_entry::<std::borrow::Cow<'de, str>, &'de RawValue>()?
        {
            out.insert(key.to_ascii_lowercase(), value);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_in_any_case_and_null_is_absent() {
        let body = br#"{"POD": {"a": 1}, "nodeNameToVictims": null}"#;
        let f = AnyCase::parse(body).unwrap();
        let pod: Option<serde_json::Value> = f.get("Pod").unwrap();
        assert_eq!(pod.unwrap()["a"], 1);
        assert!(
            f.get::<serde_json::Value>("NodeNameToVictims")
                .unwrap()
                .is_none()
        );
        assert!(f.get::<serde_json::Value>("Missing").unwrap().is_none());
    }

    #[test]
    fn the_last_of_keys_equal_but_for_case_wins() {
        let f = AnyCase::parse(br#"{"Pod": 1, "pod": 2}"#).unwrap();
        assert_eq!(f.get::<i32>("Pod").unwrap(), Some(2));
    }

    #[test]
    fn one_field_is_found_in_any_case_the_last_one_winning() {
        let raw = |s: Option<&RawValue>| s.map(|r| r.get().to_string());
        assert_eq!(
            raw(field_of(r#"{"uid": "a", "x": [1, {"UID": 2}]}"#, "UID")),
            Some(r#""a""#.into())
        );
        assert_eq!(
            raw(field_of(r#"{"UID": "a", "Uid": "b"}"#, "uid")),
            Some(r#""b""#.into())
        );
        assert_eq!(raw(field_of(r#"{"other": 1}"#, "uid")), None);
        for not_an_object in ["7", "null", "[1]", "\"s\"", "{", ""] {
            assert_eq!(raw(field_of(not_an_object, "uid")), None, "{not_an_object}");
        }
    }

    #[test]
    fn non_objects_and_trailing_garbage_are_refused() {
        assert!(AnyCase::parse(b"[1]").is_err());
        assert!(AnyCase::parse(b"{} x").is_err());
        assert!(AnyCase::parse(b"").is_err());
    }
}
