//! TaintToleration: which taints a pod's tolerations tolerate
//! (k8s.io/api core/v1 `toleration.go`), the first taint that keeps it off
//! a node, and how the filter words that (pkg/scheduler/framework/plugins/
//! tainttoleration). The filter, spread's `nodeTaintsPolicy`, preemption,
//! explain and fit all ask here.

use crate::config::Upstream;
use crate::model::Reason;
use crate::model::node::{Taint, Toleration};

/// TaintToleration's reason since 1.34.2 and 1.35 (`TaintToleration.Filter`
/// in pkg/scheduler/framework/plugins/tainttoleration): the taint is no
/// longer named, so pod statuses do not show taint keys and values.
pub const UNTOLERATED_TAINT_REASON: &str = "node(s) had untolerated taint(s)";

/// TaintToleration's reason for `taint` as the followed release words it:
/// 1.33 named the first untolerated taint, `{key: value}`.
pub fn untolerated_taint_reason(upstream: Upstream, taint: &Taint) -> Reason {
    if upstream.at_least(34) {
        Reason::Fixed(UNTOLERATED_TAINT_REASON)
    } else {
        format!(
            "node(s) had untolerated taint {{{}: {}}}",
            taint.key, taint.value
        )
        .into()
    }
}

/// Toleration matching, as `v1.Toleration.ToleratesTaint`.
pub trait Tolerates {
    /// Whether this toleration tolerates `taint` in the followed release.
    fn tolerates(&self, taint: &Taint) -> bool;
    /// The same with the TaintTolerationComparisonOperators gate given.
    fn tolerates_with(&self, taint: &Taint, comparison_operators: impl FnOnce() -> bool) -> bool;
}

impl Tolerates for Toleration {
    /// `v1.Toleration.ToleratesTaint` as the followed release has it
    /// (k8s.io/api core/v1 `toleration.go`): the comparison operators `Gt`
    /// and `Lt` count only with TaintTolerationComparisonOperators on
    /// (`scheduling.featureGates`, read only for such a toleration).
    fn tolerates(&self, taint: &Taint) -> bool {
        self.tolerates_with(taint, Upstream::comparison_operators_followed)
    }

    /// [`Self::tolerates`] with the gate given: effect and key
    /// empty-or-equal, then `Exists` tolerates any value, `Equal` (or
    /// empty) needs the same value, and with the gate on `Gt` (`Lt`) needs
    /// a taint value greater (less) than the toleration's, both decimal
    /// integers. Any other operator, or `Gt`/`Lt` with the gate off,
    /// tolerates nothing.
    fn tolerates_with(&self, taint: &Taint, comparison_operators: impl FnOnce() -> bool) -> bool {
        if !self.effect.is_empty() && self.effect != taint.effect {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator.as_str() {
            "Exists" => true,
            "" | "Equal" => self.value == taint.value,
            op @ ("Gt" | "Lt") => {
                comparison_operators() && compare_numeric_values(&self.value, &taint.value, op)
            }
            _ => false,
        }
    }
}

/// Upstream `compareNumericValues`: both values must be decimal integers
/// as `content.IsDecimalInteger` has them ("0", or an optional `-` and a
/// first digit 1-9: no `+`, leading zeros, spaces or fractions) that fit
/// an i64; `Gt` tolerates a taint value above the toleration's, `Lt` one
/// below.
fn compare_numeric_values(toleration: &str, taint: &str, op: &str) -> bool {
    let (Some(toleration), Some(taint)) = (decimal_integer(toleration), decimal_integer(taint))
    else {
        return false;
    };
    match op {
        "Gt" => taint > toleration,
        "Lt" => taint < toleration,
        _ => false,
    }
}

fn decimal_integer(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = match digits.as_bytes() {
        [b'0'] => digits.len() == text.len(),
        [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    if canonical { text.parse().ok() } else { None }
}

/// The first NoSchedule/NoExecute taint none of `tolerations` tolerates.
pub fn untolerated_taint<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| t.blocks_scheduling())
        .find(|t| !tolerations.iter().any(|tol| tol.tolerates(t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect: effect.into(),
        }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
        Toleration {
            key: key.into(),
            operator: op.into(),
            value: value.into(),
            effect: effect.into(),
            toleration_seconds: None,
        }
    }

    #[test]
    fn empty_key_exists_tolerates_every_taint() {
        assert!(tol("", "Exists", "", "").tolerates(&taint("a", "b", "NoSchedule")));
    }

    #[test]
    fn equal_needs_same_value_and_empty_operator_means_equal() {
        let t = taint("k", "v", "NoSchedule");
        assert!(tol("k", "Equal", "v", "NoSchedule").tolerates(&t));
        assert!(tol("k", "", "v", "").tolerates(&t));
        assert!(!tol("k", "Equal", "w", "NoSchedule").tolerates(&t));
    }

    #[test]
    fn effect_must_match_when_set() {
        assert!(!tol("k", "Exists", "", "NoExecute").tolerates(&taint("k", "", "NoSchedule")));
    }

    #[test]
    fn comparison_operators_tolerate_nothing_with_the_gate_off() {
        let t = taint("k", "2", "NoSchedule");
        assert!(!tol("k", "Gt", "1", "").tolerates_with(&t, || false));
        assert!(!tol("k", "Lt", "3", "").tolerates_with(&t, || false));
        assert!(tol("k", "Gt", "1", "").tolerates_with(&t, || true));
        // The process default mirrors upstream's alpha default: off.
        assert!(!tol("k", "Gt", "1", "").tolerates(&t));
    }

    #[test]
    fn other_operators_tolerate_nothing() {
        assert!(!tol("k", "In", "2", "").tolerates_with(&taint("k", "2", "NoSchedule"), || true));
    }

    /// Upstream `TestTolerationToleratesTaint` (k8s.io/api v0.37.2 core/v1
    /// `toleration_test.go`), the Gt/Lt rows, with the gate on.
    #[test]
    fn comparison_operators_table() {
        let cases = [
            (
                "Gt, taint value less than toleration value",
                "Gt",
                "950",
                "800",
                false,
            ),
            (
                "Gt, taint value greater than toleration value",
                "Gt",
                "750",
                "950",
                true,
            ),
            (
                "Lt, taint value greater than toleration value",
                "Lt",
                "800",
                "950",
                false,
            ),
            (
                "Lt, taint value less than toleration value",
                "Lt",
                "950",
                "800",
                true,
            ),
            ("Gt, equal numeric values", "Gt", "950", "950", false),
            ("Gt, non-numeric taint value", "Gt", "950", "high", false),
            (
                "Gt, negative values, taint below the threshold",
                "Gt",
                "-100",
                "-200",
                false,
            ),
            (
                "Gt, large int64 threshold, taint below it",
                "Gt",
                "9223372036854775806",
                "100",
                false,
            ),
        ];
        for (name, op, tol_value, taint_value, want) in cases {
            let got = tol("node.kubernetes.io/sla", op, tol_value, "NoSchedule").tolerates_with(
                &taint("node.kubernetes.io/sla", taint_value, "NoSchedule"),
                || true,
            );
            assert_eq!(got, want, "{name}");
        }
    }

    /// Upstream `TestCompareNumericValues` (same file): every row.
    #[test]
    fn compare_numeric_values_table() {
        let cases = [
            ("Gt, taint greater", "100", "200", "Gt", true),
            ("Gt, taint less", "200", "100", "Gt", false),
            ("Gt, equal", "100", "100", "Gt", false),
            (
                "Gt, negative numbers, taint greater",
                "-100",
                "-50",
                "Gt",
                true,
            ),
            (
                "Gt, negative numbers, taint less",
                "-50",
                "-100",
                "Gt",
                false,
            ),
            ("Gt, zero and positive", "0", "1", "Gt", true),
            (
                "Gt, large int64 values",
                "9223372036854775806",
                "9223372036854775807",
                "Gt",
                true,
            ),
            ("Lt, taint less", "200", "100", "Lt", true),
            ("Lt, taint greater", "100", "200", "Lt", false),
            ("Lt, equal", "100", "100", "Lt", false),
            (
                "Lt, negative numbers, taint less",
                "-50",
                "-100",
                "Lt",
                true,
            ),
            (
                "Lt, negative numbers, taint greater",
                "-100",
                "-50",
                "Lt",
                false,
            ),
            ("Lt, zero and negative", "0", "-1", "Lt", true),
            (
                "invalid toleration value: non-numeric",
                "abc",
                "100",
                "Gt",
                false,
            ),
            ("invalid toleration value: empty", "", "100", "Gt", false),
            (
                "invalid toleration value: leading zero",
                "0100",
                "200",
                "Gt",
                false,
            ),
            (
                "invalid toleration value: plus sign",
                "+100",
                "200",
                "Gt",
                false,
            ),
            (
                "invalid toleration value: fraction",
                "100.5",
                "200",
                "Gt",
                false,
            ),
            (
                "invalid toleration value: just a minus sign",
                "-",
                "100",
                "Gt",
                false,
            ),
            (
                "invalid taint value: non-numeric",
                "100",
                "xyz",
                "Gt",
                false,
            ),
            ("invalid taint value: empty", "100", "", "Gt", false),
            (
                "invalid taint value: leading zero",
                "100",
                "0200",
                "Gt",
                false,
            ),
            ("invalid taint value: plus sign", "100", "+200", "Lt", false),
            ("invalid taint value: spaces", "100", " 200 ", "Lt", false),
            (
                "Equal is no comparison operator",
                "100",
                "100",
                "Equal",
                false,
            ),
            (
                "Exists is no comparison operator",
                "100",
                "100",
                "Exists",
                false,
            ),
            ("Gt, both zero", "0", "0", "Gt", false),
            ("Lt, both zero", "0", "0", "Lt", false),
            (
                "Gt, max int64 as taint",
                "0",
                "9223372036854775807",
                "Gt",
                true,
            ),
            (
                "Lt, min int64 as taint",
                "0",
                "-9223372036854775808",
                "Lt",
                true,
            ),
            // Not in upstream's table; IsDecimalInteger refuses these too.
            ("negative zero", "-0", "1", "Gt", false),
            ("beyond int64", "0", "9223372036854775808", "Gt", false),
        ];
        for (name, toleration, taint, op, want) in cases {
            assert_eq!(
                compare_numeric_values(toleration, taint, op),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn prefer_no_schedule_never_blocks() {
        let taints = [
            taint("k", "", "PreferNoSchedule"),
            taint("x", "", "NoExecute"),
        ];
        assert_eq!(untolerated_taint(&taints, &[]).unwrap().key, "x");
        assert!(untolerated_taint(&taints[..1], &[]).is_none());
    }
}
