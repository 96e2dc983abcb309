//! Which namespaces' pods a fit answer names: the victims and the pods a
//! node's (anti-)affinity failed on. `/debug/fit` asks that the caller may
//! list pods cluster-wide before it answers one that names another
//! namespace's pods (docs/security.md).

use std::collections::BTreeSet;

use super::FitAnswer;
use crate::explain::pods_in_text;

pub fn namespaces_named(a: &FitAnswer) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for v in &a.victims {
        if let Some((namespace, _)) = v.pod.split_once('/') {
            out.insert(namespace.to_string());
        }
    }
    let reasons = a.first_unschedulable.iter().flat_map(|u| &u.nodes);
    for r in reasons {
        out.extend(pods_in_text(&r.reason));
    }
    out
}
