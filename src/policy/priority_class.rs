//! PriorityClass validation: the API's own field rules
//! (`pkg/apis/scheduling/validation`) and the Priority plugin's
//! only-one-default rule, with upstream's messages.
//!
//! Field errors come first and all of them are reported together (422
//! Invalid, as the API server's registry validation answers); the default
//! rule is checked only when they pass (403 Forbidden, as the admission
//! plugin answers), against the view or against the classes the API
//! server listed ([`Classes`]).

use crate::cluster::Snapshot;
use crate::model::PriorityClass;

use super::priority::{
    Denial, HIGHEST_USER_DEFINABLE_PRIORITY, PreemptionPolicy, SYSTEM_CLASS_PREFIX, default_among,
    system_class,
};

/// Longest DNS-1123 subdomain, and so the longest class name.
const MAX_NAME_LEN: usize = 253;

const SUBDOMAIN_RULE: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
    alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character \
    (e.g. 'example.com', regex used for validation is \
    '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// The classes that exist, for the only-one-default rule.
#[derive(Debug, Clone, Copy)]
pub enum Classes<'a> {
    View(&'a Snapshot),
    /// As the API server listed them (name order).
    Listed(&'a [PriorityClass]),
}

impl<'a> From<&'a Snapshot> for Classes<'a> {
    fn from(snapshot: &'a Snapshot) -> Self {
        Self::View(snapshot)
    }
}

impl Classes<'_> {
    fn default_class(&self) -> Option<&PriorityClass> {
        match self {
            Self::View(snapshot) => default_among(snapshot.priority_classes()),
            Self::Listed(classes) => default_among(classes.iter()),
        }
    }
}

/// Whether the only-one-default rule applies to `class`: only a
/// globalDefault class is judged against the others.
pub fn needs_other_classes(class: &PriorityClass) -> bool {
    class.global_default
}

/// A PriorityClass CREATE.
pub fn validate_create<'a>(
    classes: impl Into<Classes<'a>>,
    class: &PriorityClass,
) -> Result<(), Denial> {
    invalid_if_any(field_errors(class))?;
    only_one_default(classes.into(), class, false)
}

/// A PriorityClass UPDATE from `old` to `class`.
pub fn validate_update<'a>(
    classes: impl Into<Classes<'a>>,
    class: &PriorityClass,
    old: &PriorityClass,
) -> Result<(), Denial> {
    let mut errors = field_errors(class);
    errors.extend(update_errors(class, old));
    invalid_if_any(errors)?;
    only_one_default(classes.into(), class, true)
}

/// Upstream aggregates field errors: one as is, several in brackets.
fn invalid_if_any(errors: Vec<String>) -> Result<(), Denial> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(Denial::invalid(errors.concat())),
        _ => Err(Denial::invalid(format!("[{}]", errors.join(", ")))),
    }
}

/// Every rule a single class must meet, each as `field: problem`.
fn field_errors(class: &PriorityClass) -> Vec<String> {
    let name = class.metadata.name.as_str();
    let mut errors: Vec<String> = subdomain_errors(name)
        .into_iter()
        .map(|e| match e {
            NameError::Missing => {
                "metadata.name: Required value: name or generateName is required".to_string()
            }
            NameError::Invalid(why) => format!("metadata.name: Invalid value: {name:?}: {why}"),
        })
        .collect();
    if name.starts_with(SYSTEM_CLASS_PREFIX) {
        if let Err(why) = known_system_class(class) {
            errors.push(format!(
                "metadata.name: Forbidden: priority class names with '{SYSTEM_CLASS_PREFIX}' \
                 prefix are reserved for system use only. error: {why}"
            ));
        }
    } else if class.value > HIGHEST_USER_DEFINABLE_PRIORITY {
        errors.push(format!(
            "value: Forbidden: maximum allowed value of a user defined priority is \
             {HIGHEST_USER_DEFINABLE_PRIORITY}"
        ));
    }
    match class.preemption_policy.as_deref() {
        None => {}
        Some("") => errors.push("preemptionPolicy: Required value".to_string()),
        Some(p) if PreemptionPolicy::parse(p).is_none() => errors.push(format!(
            "preemptionPolicy: Unsupported value: {p:?}: supported values: \
             \"PreemptLowerPriority\", \"Never\""
        )),
        Some(_) => {}
    }
    errors
}

/// `value` and `preemptionPolicy` never change; description and
/// globalDefault may.
fn update_errors(class: &PriorityClass, old: &PriorityClass) -> Vec<String> {
    let mut errors = Vec::new();
    if class.value != old.value {
        errors.push("value: Forbidden: may not be changed in an update.".to_string());
    }
    // Both sides as the API server stores them: absent means the default.
    let policy = |c: &PriorityClass| {
        c.preemption_policy
            .clone()
            .unwrap_or_else(|| PreemptionPolicy::PreemptLowerPriority.as_str().to_string())
    };
    let (new_policy, old_policy) = (policy(class), policy(old));
    if new_policy != old_policy {
        errors.push(format!(
            "preemptionPolicy: Invalid value: {new_policy:?}: field is immutable"
        ));
    }
    errors
}

/// A `system-` name must be one of the built-ins with its exact value and
/// not globalDefault.
fn known_system_class(class: &PriorityClass) -> Result<(), String> {
    let name = &class.metadata.name;
    let Some(builtin) = system_class(name) else {
        return Err(format!("{name} is not a known system priority class"));
    };
    if class.value != builtin.value {
        return Err(format!(
            "value of {name} PriorityClass must be {}",
            builtin.value
        ));
    }
    if class.global_default {
        return Err(format!(
            "globalDefault of {name} PriorityClass must be false"
        ));
    }
    Ok(())
}

enum NameError {
    Missing,
    Invalid(&'static str),
}

/// DNS-1123 subdomain: at most 253 characters of dot-separated labels, each
/// lower-case alphanumerics and '-', starting and ending alphanumeric.
fn subdomain_errors(name: &str) -> Vec<NameError> {
    if name.is_empty() {
        return vec![NameError::Missing];
    }
    let mut errors = Vec::new();
    if name.len() > MAX_NAME_LEN {
        errors.push(NameError::Invalid("must be no more than 253 characters"));
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        match (bytes.first(), bytes.last()) {
            (Some(&first), Some(&last)) => {
                alnum(first) && alnum(last) && bytes.iter().all(|&b| alnum(b) || b == b'-')
            }
            _ => false,
        }
    };
    if !name.split('.').all(label_ok) {
        errors.push(NameError::Invalid(SUBDOMAIN_RULE));
    }
    errors
}

/// Only one class may be globalDefault. Creating a second default, or
/// making another class the default on update, is refused; updating the
/// current default itself is fine.
fn only_one_default(
    classes: Classes<'_>,
    class: &PriorityClass,
    update: bool,
) -> Result<(), Denial> {
    if !needs_other_classes(class) {
        return Ok(());
    }
    match classes.default_class() {
        Some(existing) if !update || existing.metadata.name != class.metadata.name => {
            Err(Denial::forbidden(format!(
                "PriorityClass {} is already marked as default. Only one default can exist",
                existing.metadata.name
            )))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterObjects;
    use crate::policy::priority::DenialCode;

    fn class(name: &str, value: i32, global_default: bool, policy: Option<&str>) -> PriorityClass {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "value": value,
            "globalDefault": global_default,
            "preemptionPolicy": policy,
        }))
        .unwrap()
    }

    fn view(classes: Vec<PriorityClass>) -> Snapshot {
        Snapshot::build(ClusterObjects {
            priority_classes: classes,
            ..Default::default()
        })
    }

    fn invalid(reason: &str) -> Result<(), Denial> {
        Err(Denial::invalid(reason))
    }

    const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    /// Upstream TestValidatePriorityClass situations, on CREATE.
    #[test]
    fn create_checks_the_field_rules() {
        let long = "a".repeat(254);
        let cases: Vec<(&str, PriorityClass, Result<(), Denial>)> = vec![
            ("no description", class("tier1", 100, false, None), Ok(())),
            (
                "negative values are allowed",
                class("tier1", i32::MIN, false, None),
                Ok(()),
            ),
            (
                "dotted names are subdomains",
                class("tier.one", 1, false, None),
                Ok(()),
            ),
            (
                "exactly the highest user value",
                class("tier1", 1_000_000_000, false, None),
                Ok(()),
            ),
            (
                "system node critical with its value",
                class("system-node-critical", 2_000_001_000, false, None),
                Ok(()),
            ),
            (
                "system cluster critical with its value",
                class(
                    "system-cluster-critical",
                    2_000_000_000,
                    false,
                    Some("PreemptLowerPriority"),
                ),
                Ok(()),
            ),
            (
                "Never is a valid policy",
                class("batch", 5, false, Some("Never")),
                Ok(()),
            ),
            (
                "invalid name",
                class("tier&1", 100, false, None),
                invalid(&format!(
                    "metadata.name: Invalid value: \"tier&1\": {SUBDOMAIN}"
                )),
            ),
            (
                "upper case is not a subdomain",
                class("Tier1", 100, false, None),
                invalid(&format!(
                    "metadata.name: Invalid value: \"Tier1\": {SUBDOMAIN}"
                )),
            ),
            (
                "empty label is not a subdomain",
                class("tier..1", 100, false, None),
                invalid(&format!(
                    "metadata.name: Invalid value: \"tier..1\": {SUBDOMAIN}"
                )),
            ),
            (
                "too long name",
                class(&long, 1, false, None),
                invalid(&format!(
                    "metadata.name: Invalid value: {long:?}: must be no more than 253 characters"
                )),
            ),
            (
                "missing name",
                class("", 1, false, None),
                invalid("metadata.name: Required value: name or generateName is required"),
            ),
            (
                "system class with a wrong value",
                class("system-node-critical", 0, false, None),
                invalid(
                    "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-node-critical PriorityClass must be 2000001000",
                ),
            ),
            (
                "unknown system- name, even with a system value",
                class("system-something", 2_000_001_000, false, None),
                invalid(
                    "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-something is not a known system priority class",
                ),
            ),
            (
                "system class may not be the default",
                class("system-cluster-critical", 2_000_000_000, true, None),
                invalid(
                    "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: globalDefault of system-cluster-critical PriorityClass must be false",
                ),
            ),
            (
                "user value above the highest",
                class("tier1", 1_000_000_001, false, None),
                invalid(
                    "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
                ),
            ),
            (
                "unknown preemption policy",
                class("tier1", 1, false, Some("Sometimes")),
                invalid(
                    "preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"PreemptLowerPriority\", \"Never\"",
                ),
            ),
            (
                "empty preemption policy",
                class("tier1", 1, false, Some("")),
                invalid("preemptionPolicy: Required value"),
            ),
            (
                "several errors are reported together",
                class("tier&1", 1_000_000_001, false, Some("Sometimes")),
                invalid(&format!(
                    "[metadata.name: Invalid value: \"tier&1\": {SUBDOMAIN}, value: Forbidden: maximum allowed value of a user defined priority is 1000000000, preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"PreemptLowerPriority\", \"Never\"]"
                )),
            ),
        ];
        let empty = view(vec![]);
        for (name, c, want) in cases {
            assert_eq!(validate_create(&empty, &c), want, "{name}");
        }
    }

    /// Upstream TestValidatePriorityClassUpdate situations.
    #[test]
    fn update_keeps_value_and_policy_immutable() {
        let old = class("tier1", 100, false, Some("PreemptLowerPriority"));
        let mut described = old.clone();
        described.description = "A different description.".into();
        let cases: Vec<(&str, PriorityClass, Result<(), Denial>)> = vec![
            ("no change", old.clone(), Ok(())),
            ("change description", described, Ok(())),
            (
                "change globalDefault",
                class("tier1", 100, true, Some("PreemptLowerPriority")),
                Ok(()),
            ),
            (
                "absent policy is the default policy",
                class("tier1", 100, false, None),
                Ok(()),
            ),
            (
                "remove value",
                class("tier1", 0, false, Some("PreemptLowerPriority")),
                invalid("value: Forbidden: may not be changed in an update."),
            ),
            (
                "change value",
                class("tier1", 101, false, Some("PreemptLowerPriority")),
                invalid("value: Forbidden: may not be changed in an update."),
            ),
            (
                "change preemptionPolicy",
                class("tier1", 100, false, Some("Never")),
                invalid("preemptionPolicy: Invalid value: \"Never\": field is immutable"),
            ),
            (
                "change both",
                class("tier1", 101, false, Some("Never")),
                invalid(
                    "[value: Forbidden: may not be changed in an update., preemptionPolicy: Invalid value: \"Never\": field is immutable]",
                ),
            ),
        ];
        let v = view(vec![old.clone()]);
        for (name, c, want) in cases {
            assert_eq!(validate_update(&v, &c, &old), want, "{name}");
        }
    }

    /// Upstream TestPriorityClassAdmission situations.
    #[test]
    fn only_one_class_may_be_the_default() {
        let default1 = class("default1", 1000, true, None);
        let default2 = class("default2", 2000, true, None);
        let already = Err(Denial::forbidden(
            "PriorityClass default1 is already marked as default. Only one default can exist",
        ));
        assert_eq!(
            validate_create(&view(vec![]), &default1),
            Ok(()),
            "first default"
        );
        assert_eq!(
            validate_create(&view(vec![default1.clone()]), &default2),
            already,
            "second default"
        );
        assert_eq!(
            validate_create(
                &view(vec![default1.clone()]),
                &class("plain", 1, false, None)
            ),
            Ok(()),
            "a non-default class beside a default"
        );
        let old2 = class("default2", 2000, false, None);
        assert_eq!(
            validate_update(
                &view(vec![default1.clone(), old2.clone()]),
                &default2,
                &old2
            ),
            already,
            "making another class the default"
        );
        assert_eq!(
            validate_update(&view(vec![default1.clone()]), &default1, &default1),
            Ok(()),
            "updating the default itself"
        );
        assert_eq!(
            validate_update(
                &view(vec![]),
                &default1,
                &class("default1", 1000, false, None)
            ),
            Ok(()),
            "making a class the default when there is none"
        );
    }

    /// The API server's list decides, not a lagging view: a default
    /// created a moment ago counts, one deleted a moment ago does not.
    #[test]
    fn listed_classes_decide_the_default_rule() {
        let default1 = class("default1", 1000, true, None);
        let default2 = class("default2", 2000, true, None);
        let listed = [default1.clone()];
        let err = validate_create(Classes::Listed(&listed), &default2).unwrap_err();
        assert!(err.reason.contains("default1 is already marked"), "{err}");
        assert_eq!(validate_create(Classes::Listed(&[]), &default2), Ok(()));
        let old2 = class("default2", 2000, false, None);
        assert!(validate_update(Classes::Listed(&listed), &default2, &old2).is_err());
        assert!(needs_other_classes(&default2));
        assert!(!needs_other_classes(&old2));
    }

    #[test]
    fn field_errors_come_before_the_default_rule() {
        let v = view(vec![class("default1", 1000, true, None)]);
        let err = validate_create(&v, &class("tier1", 2_000_000_000, true, None)).unwrap_err();
        assert_eq!(err.code, DenialCode::Invalid);
    }
}
