//! `metav1.LabelSelector` and how it selects labels.
//!
//! A missing selector (`None` at the use site) selects nothing; a present but
//! empty one (`{}`) selects everything. matchLabels and matchExpressions are
//! ANDed. NotIn and DoesNotExist also match objects without the key.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

use super::meta::Labels;
use super::null_fields::{compact_list, null_as_default};

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    #[serde(default, deserialize_with = "null_as_default")]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "compact_list")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: SelectorOperator,
    #[serde(default, deserialize_with = "compact_list")]
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum SelectorOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl LabelSelector {
    /// A selector requiring exactly these labels (Service and
    /// ReplicationController selectors are plain maps).
    pub fn from_map(labels: &Labels) -> Self {
        Self {
            match_labels: labels.clone(),
            match_expressions: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| r.matches(labels))
    }

    /// The checks `metav1.LabelSelectorAsSelector` makes: In/NotIn need
    /// values, Exists/DoesNotExist must have none.
    pub fn validate(&self) -> Result<(), String> {
        for r in &self.match_expressions {
            match r.operator {
                SelectorOperator::In | SelectorOperator::NotIn if r.values.is_empty() => {
                    return Err(format!(
                        "label selector requirement on {:?}: operator {:?} needs at least one value",
                        r.key, r.operator
                    ));
                }
                SelectorOperator::Exists | SelectorOperator::DoesNotExist
                    if !r.values.is_empty() =>
                {
                    return Err(format!(
                        "label selector requirement on {:?}: operator {:?} takes no values",
                        r.key, r.operator
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// AND a requirement `key In [value]` (matchLabelKeys) or
    /// `key NotIn [value]` (mismatchLabelKeys).
    pub fn with_requirement(mut self, key: &str, operator: SelectorOperator, value: &str) -> Self {
        self.match_expressions.push(LabelSelectorRequirement {
            key: key.to_string(),
            operator,
            values: vec![value.to_string()],
        });
        self
    }
}

impl LabelSelectorRequirement {
    pub fn matches(&self, labels: &Labels) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            SelectorOperator::In => value.is_some_and(|v| self.values.contains(v)),
            SelectorOperator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            SelectorOperator::Exists => value.is_some(),
            SelectorOperator::DoesNotExist => value.is_none(),
        }
    }
}

impl fmt::Display for LabelSelector {
    /// The same text `kubectl` prints for a selector (`app=web,tier in (a,b)`).
    /// Written piece by piece: failure reasons print it on the filter path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.match_labels.is_empty() && self.match_expressions.is_empty() {
            return f.write_str("<all>");
        }
        let mut first = true;
        let mut next = |f: &mut fmt::Formatter<'_>| {
            if std::mem::take(&mut first) {
                Ok(())
            } else {
                f.write_str(",")
            }
        };
        for (k, v) in &self.match_labels {
            next(f)?;
            write!(f, "{k}={v}")?;
        }
        for r in &self.match_expressions {
            next(f)?;
            let (prefix, list) = match r.operator {
                SelectorOperator::In => ("", Some(" in (")),
                SelectorOperator::NotIn => ("", Some(" notin (")),
                SelectorOperator::Exists => ("", None),
                SelectorOperator::DoesNotExist => ("!", None),
            };
            f.write_str(prefix)?;
            f.write_str(&r.key)?;
            if let Some(open) = list {
                f.write_str(open)?;
                for (i, v) in r.values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(v)?;
                }
                f.write_str(")")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn selector(json: &str) -> LabelSelector {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn empty_selector_matches_everything() {
        assert!(selector("{}").matches(&labels(&[])));
        assert!(selector("{}").matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn match_labels_and_expressions_are_anded() {
        let s = selector(
            r#"{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["fe"]}]}"#,
        );
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "fe")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "be")])));
        assert!(!s.matches(&labels(&[("tier", "fe")])));
    }

    #[test]
    fn not_in_and_does_not_exist_match_missing_keys() {
        let not_in =
            selector(r#"{"matchExpressions":[{"key":"k","operator":"NotIn","values":["v"]}]}"#);
        let dne = selector(r#"{"matchExpressions":[{"key":"k","operator":"DoesNotExist"}]}"#);
        assert!(not_in.matches(&labels(&[])));
        assert!(!not_in.matches(&labels(&[("k", "v")])));
        assert!(not_in.matches(&labels(&[("k", "w")])));
        assert!(dne.matches(&labels(&[])));
        assert!(!dne.matches(&labels(&[("k", "")])));
    }

    #[test]
    fn exists_matches_empty_value() {
        let s = selector(r#"{"matchExpressions":[{"key":"k","operator":"Exists"}]}"#);
        assert!(s.matches(&labels(&[("k", "")])));
        assert!(!s.matches(&labels(&[])));
    }

    #[test]
    fn unknown_operator_is_a_decode_error() {
        let err = serde_json::from_str::<LabelSelector>(
            r#"{"matchExpressions":[{"key":"k","operator":"Gt","values":["1"]}]}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown variant `Gt`"), "{err}");
    }

    #[test]
    fn validate_rejects_in_without_values_and_exists_with_values() {
        assert!(
            selector(r#"{"matchExpressions":[{"key":"k","operator":"In"}]}"#)
                .validate()
                .is_err()
        );
        assert!(
            selector(r#"{"matchExpressions":[{"key":"k","operator":"Exists","values":["x"]}]}"#)
                .validate()
                .is_err()
        );
        assert!(selector(r#"{"matchLabels":{"a":"b"}}"#).validate().is_ok());
    }

    #[test]
    fn displays_like_kubectl() {
        let s = selector(
            r#"{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"t","operator":"In","values":["a","b"]},{"key":"x","operator":"DoesNotExist"}]}"#,
        );
        assert_eq!(s.to_string(), "app=web,t in (a,b),!x");
    }
}
