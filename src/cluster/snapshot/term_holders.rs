//! Bound pods that carry pod (anti-)affinity terms, grouped by where their
//! terms can look, so judging an incoming pod visits only the holders whose
//! terms could select it: those of its own namespace whose terms stay there,
//! and those whose terms name namespaces or select them by label.

use std::sync::Arc;

use foldhash::HashSet;

use super::update::ptr;
use super::{Map, PodRef};
use crate::model::Pod;

#[derive(Debug, Clone, Default)]
pub struct TermHolders {
    /// Holders whose every term stays in their own namespace, by namespace.
    in_namespace: Arc<Map<String, Arc<[PodRef]>>>,
    /// Holders with a term that may look in other namespaces.
    anywhere: Arc<[PodRef]>,
}

static NONE: [PodRef; 0] = [];

impl TermHolders {
    /// Index the bound pods of `refs` that pass `holds`.
    pub fn build<'a>(refs: impl IntoIterator<Item = &'a PodRef>, holds: fn(&Pod) -> bool) -> Self {
        let mut in_namespace: Map<String, Vec<PodRef>> = Map::default();
        let mut anywhere = Vec::new();
        for r in refs {
            if r.node.is_none() || !holds(&r.pod) {
                continue;
            }
            if r.pod.pod_affinity_terms_stay_in_namespace() {
                in_namespace
                    .entry(r.pod.metadata.namespace.clone())
                    .or_default()
                    .push(r.clone());
            } else {
                anywhere.push(r.clone());
            }
        }
        Self {
            in_namespace: Arc::new(
                in_namespace
                    .into_iter()
                    .map(|(k, v)| (k, v.into()))
                    .collect(),
            ),
            anywhere: anywhere.into(),
        }
    }

    /// Holders whose terms may select a pod of `namespace`.
    pub fn selecting_in<'a>(&'a self, namespace: &str) -> impl Iterator<Item = &'a PodRef> + 'a {
        let local = self
            .in_namespace
            .get(namespace)
            .map_or(&NONE[..], |v| &v[..]);
        local.iter().chain(self.anywhere.iter())
    }

    /// Every group, sorted, for comparing two indexes in tests.
    #[cfg(test)]
    pub(super) fn describe(&self) -> Vec<String> {
        let keys = |list: &[PodRef]| {
            let mut v: Vec<_> = list
                .iter()
                .map(|r| (r.pod.metadata.key(), r.node))
                .collect();
            v.sort();
            v
        };
        let mut out: Vec<String> = self
            .in_namespace
            .iter()
            .map(|(ns, list)| format!("in {ns}: {:?}", keys(list)))
            .collect();
        out.sort();
        out.push(format!("anywhere: {:?}", keys(&self.anywhere)));
        out
    }

    /// These holders without the `removed` pods and with the `added` ones
    /// that pass `holds`; untouched groups are shared.
    pub fn with_changes(
        &self,
        removed: &[PodRef],
        added: &[PodRef],
        holds: fn(&Pod) -> bool,
    ) -> Self {
        let touched = |r: &&PodRef| r.node.is_some() && holds(&r.pod);
        if !removed.iter().chain(added).any(|r| touched(&r)) {
            return self.clone();
        }
        let gone: HashSet<usize> = removed.iter().map(|r| ptr(&r.pod)).collect();
        let keep = |r: &&PodRef| !gone.contains(&ptr(&r.pod));
        let mut in_namespace = (*self.in_namespace).clone();
        let mut anywhere_changed = false;
        let mut namespaces: Vec<&str> = Vec::new();
        for r in removed.iter().chain(added).filter(touched) {
            if r.pod.pod_affinity_terms_stay_in_namespace() {
                namespaces.push(&r.pod.metadata.namespace);
            } else {
                anywhere_changed = true;
            }
        }
        namespaces.sort_unstable();
        namespaces.dedup();
        for ns in namespaces {
            let list: Vec<PodRef> = in_namespace
                .get(ns)
                .map_or(&NONE[..], |v| &v[..])
                .iter()
                .filter(keep)
                .chain(added.iter().filter(|r| {
                    touched(r)
                        && r.pod.metadata.namespace == ns
                        && r.pod.pod_affinity_terms_stay_in_namespace()
                }))
                .cloned()
                .collect();
            if list.is_empty() {
                in_namespace.remove(ns);
            } else {
                in_namespace.insert(ns.to_string(), list.into());
            }
        }
        let anywhere = if anywhere_changed {
            self.anywhere
                .iter()
                .filter(keep)
                .chain(
                    added
                        .iter()
                        .filter(|r| touched(r) && !r.pod.pod_affinity_terms_stay_in_namespace()),
                )
                .cloned()
                .collect()
        } else {
            self.anywhere.clone()
        };
        Self {
            in_namespace: Arc::new(in_namespace),
            anywhere,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(ns: &str, name: &str, node: Option<u32>, namespaces: &[&str]) -> PodRef {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": ns},
            "spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {}, "topologyKey": "zone", "namespaces": namespaces}]}}}
        }))
        .unwrap();
        PodRef {
            node,
            pod: Arc::new(pod),
        }
    }

    fn names<'a>(it: impl Iterator<Item = &'a PodRef>) -> Vec<String> {
        let mut v: Vec<_> = it.map(|r| r.pod.metadata.key()).collect();
        v.sort();
        v
    }

    #[test]
    fn a_namespace_sees_its_own_holders_and_those_looking_anywhere() {
        let refs = [
            holder("a", "local", Some(0), &[]),
            holder("b", "other", Some(0), &[]),
            holder("b", "wide", Some(1), &["a"]),
            holder("a", "unbound", None, &[]),
        ];
        let h = TermHolders::build(&refs, Pod::has_required_anti_affinity);
        assert_eq!(names(h.selecting_in("a")), ["a/local", "b/wide"]);
        assert_eq!(names(h.selecting_in("b")), ["b/other", "b/wide"]);
        assert_eq!(names(h.selecting_in("c")), ["b/wide"]);

        let moved = holder("a", "local", Some(0), &["c"]);
        let h2 = h.with_changes(
            &refs[..1],
            std::slice::from_ref(&moved),
            Pod::has_required_anti_affinity,
        );
        assert_eq!(names(h2.selecting_in("a")), ["a/local", "b/wide"]);
        assert_eq!(names(h2.selecting_in("c")), ["a/local", "b/wide"]);
        let rebuilt = TermHolders::build(
            [&moved, &refs[1], &refs[2], &refs[3]],
            Pod::has_required_anti_affinity,
        );
        assert_eq!(h2.describe(), rebuilt.describe());
    }
}
