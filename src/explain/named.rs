//! Which namespaces' pods an explanation names: preemption victims and the
//! pods whose (anti-)affinity a node failed on. `/debug/explain` asks that
//! the caller may list pods there before it answers (docs/security.md).

use std::collections::BTreeSet;

use super::Explanation;

/// Namespaces whose pods `e` names, as `namespace/name` in its reasons
/// ("... pod tenant-b/db-0 (app=db) in ...") and victims.
pub fn namespaces_named(e: &Explanation) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let victims = e.preemption.iter().flat_map(|p| &p.candidates);
    for victim in victims.flat_map(|c| &c.victims) {
        if let Some((namespace, _)) = victim.split_once('/') {
            out.insert(namespace.to_string());
        }
    }
    for reason in e.nodes.iter().filter_map(|n| n.reason.as_deref()) {
        out.extend(pods_in_text(reason));
    }
    out
}

/// The namespace of every "pod NAMESPACE/NAME" in `text`. Namespace names
/// are DNS labels: lower-case letters, digits and '-'.
pub fn pods_in_text(text: &str) -> impl Iterator<Item = String> + '_ {
    text.match_indices("pod ").filter_map(move |(at, word)| {
        let rest = &text[at + word.len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len());
        (end > 0 && rest[end..].starts_with('/')).then(|| rest[..end].to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_name_the_namespaces_of_the_pods_they_quote() {
        let text = "node(s) didn't match pod anti-affinity rules: pod tenant-b/ledger-primary-0 (app=secret-db) in kubernetes.io/hostname=n1; pod shop/web-1 (app in (web)) in zone=z";
        let got: Vec<String> = pods_in_text(text).collect();
        assert_eq!(got, ["tenant-b", "shop"]);
    }

    #[test]
    fn words_that_are_not_a_pod_reference_are_skipped() {
        for text in [
            "node(s) didn't match pod topology spread constraints: zone=z1 would have skew 2",
            "Too many pods",
            "pod (anti-)affinity",
        ] {
            assert_eq!(pods_in_text(text).count(), 0, "{text}");
        }
    }
}
