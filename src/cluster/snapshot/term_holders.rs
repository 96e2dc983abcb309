//! Bound pods that carry pod (anti)affinity terms, grouped by where their
//! terms can look, so judging an incoming pod visits only the holders whose
//! terms could select it: those of its own namespace whose terms stay there,
//! and those whose terms name namespaces or select them by label.
//!
//! Within those, holders that judge alike (same namespace, labels and pod
//! (anti)affinity: the pods of one ReplicaSet) form one [`HolderGroup`],
//! whose terms are read once per incoming pod rather than once per pod: a
//! served request finds every holder's terms out of cache.

use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::HashSet;
use foldhash::fast::FixedState;

use super::update::ptr;
use super::{Map, PodRef};
use crate::model::Pod;

/// Bound holders that judge alike: whatever the terms of one say of an
/// incoming pod, they say of every other. Never empty.
#[derive(Debug, Clone)]
pub struct HolderGroup {
    /// [`judge_key`] of every pod here.
    key: u64,
    pods: Arc<[PodRef]>,
}

impl HolderGroup {
    /// The group's pods; the first stands for all when terms are read.
    pub fn pods(&self) -> &[PodRef] {
        &self.pods
    }

    /// [`Self::pods`] as the shared list, for naming its pods by place
    /// ([`super::ListedPod`]).
    pub fn pod_list(&self) -> &Arc<[PodRef]> {
        &self.pods
    }
}

#[derive(Debug, Clone, Default)]
pub struct TermHolders {
    /// Holders whose every term stays in their own namespace, by namespace.
    in_namespace: Arc<Map<String, Arc<[HolderGroup]>>>,
    /// Holders with a term that may look in other namespaces.
    anywhere: Arc<[HolderGroup]>,
}

static NONE: [HolderGroup; 0] = [];

/// What a holder's terms depend on besides the incoming pod: its namespace
/// (a term without namespaces looks in it), its labels (matchLabelKeys and
/// mismatchLabelKeys take values from them) and its pod (anti)affinity.
fn judge_alike(a: &Pod, b: &Pod) -> bool {
    a.metadata.namespace == b.metadata.namespace
        && a.pod_affinity() == b.pod_affinity()
        && a.pod_anti_affinity() == b.pod_anti_affinity()
        && a.metadata.labels == b.metadata.labels
}

/// A hash of what [`judge_alike`] compares.
fn judge_key(pod: &Pod) -> u64 {
    let state = FixedState::with_seed(0x686f_6c64_6572_7321);
    state.hash_one((
        &pod.metadata.namespace,
        &*pod.metadata.labels,
        pod.pod_affinity(),
        pod.pod_anti_affinity(),
    ))
}

/// `pods` (in order) added to `groups`: each to the first group it judges
/// alike with, else to a new group at the end. Groups given no pod are
/// shared; each group is collected once.
fn grouped(groups: &[HolderGroup], pods: impl IntoIterator<Item = PodRef>) -> Vec<HolderGroup> {
    // Per group: its key, its pods so far (shared), and the pods added.
    let mut out: Vec<(u64, &[PodRef], Vec<PodRef>)> = groups
        .iter()
        .map(|g| (g.key, &g.pods[..], Vec::new()))
        .collect();
    let mut by_key: Map<u64, Vec<usize>> = Map::default();
    for (i, &(key, _, _)) in out.iter().enumerate() {
        by_key.entry(key).or_default().push(i);
    }
    for r in pods {
        let key = judge_key(&r.pod);
        let same = by_key.entry(key).or_default();
        let found = same.iter().find(|&&i| {
            let (_, had, more) = &out[i];
            let first = had.first().or(more.first());
            first.is_some_and(|f| judge_alike(&f.pod, &r.pod))
        });
        match found {
            Some(&i) => out[i].2.push(r),
            None => {
                same.push(out.len());
                out.push((key, &[], vec![r]));
            }
        }
    }
    out.into_iter()
        .zip(groups.iter().map(Some).chain(std::iter::repeat(None)))
        .map(|((key, had, more), old)| match old {
            Some(g) if more.is_empty() => g.clone(),
            _ => HolderGroup {
                key,
                pods: had.iter().cloned().chain(more).collect(),
            },
        })
        .collect()
}

/// `groups` without the pods `gone` holds (by pointer); a group that loses
/// none is shared, one that loses all is dropped.
fn without(groups: &[HolderGroup], gone: &HashSet<usize>) -> Vec<HolderGroup> {
    groups
        .iter()
        .filter_map(|g| {
            if !g.pods.iter().any(|r| gone.contains(&ptr(&r.pod))) {
                return Some(g.clone());
            }
            let kept: Vec<PodRef> = g
                .pods
                .iter()
                .filter(|r| !gone.contains(&ptr(&r.pod)))
                .cloned()
                .collect();
            (!kept.is_empty()).then(|| HolderGroup {
                key: g.key,
                pods: kept.into(),
            })
        })
        .collect()
}

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
                    .map(|(k, v)| (k, grouped(&[], v).into()))
                    .collect(),
            ),
            anywhere: grouped(&[], anywhere).into(),
        }
    }

    /// Groups of holders whose terms may select a pod of `namespace`.
    pub fn selecting_in<'a>(
        &'a self,
        namespace: &str,
    ) -> impl Iterator<Item = &'a HolderGroup> + 'a {
        let local = self
            .in_namespace
            .get(namespace)
            .map_or(&NONE[..], |v| &v[..]);
        local.iter().chain(self.anywhere.iter())
    }

    /// Every group, sorted, for comparing two indexes in tests.
    #[cfg(test)]
    pub(super) fn describe(&self) -> Vec<String> {
        let keys = |groups: &[HolderGroup]| {
            let mut v: Vec<Vec<_>> = groups
                .iter()
                .map(|g| {
                    let mut pods: Vec<_> = g
                        .pods
                        .iter()
                        .map(|r| (r.pod.metadata.key(), r.node))
                        .collect();
                    pods.sort();
                    pods
                })
                .collect();
            v.sort();
            v
        };
        let mut out: Vec<String> = self
            .in_namespace
            .iter()
            .map(|(ns, groups)| format!("in {ns}: {:?}", keys(groups)))
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
            let kept = without(in_namespace.get(ns).map_or(&NONE[..], |v| &v[..]), &gone);
            let new = added.iter().filter(|r| {
                touched(r)
                    && r.pod.metadata.namespace == ns
                    && r.pod.pod_affinity_terms_stay_in_namespace()
            });
            let groups = grouped(&kept, new.cloned());
            if groups.is_empty() {
                in_namespace.remove(ns);
            } else {
                in_namespace.insert(ns.to_string(), groups.into());
            }
        }
        let anywhere = if anywhere_changed {
            let kept = without(&self.anywhere, &gone);
            let new = added
                .iter()
                .filter(|r| touched(r) && !r.pod.pod_affinity_terms_stay_in_namespace());
            grouped(&kept, new.cloned()).into()
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

    fn names<'a>(it: impl Iterator<Item = &'a HolderGroup>) -> Vec<String> {
        let mut v: Vec<_> = it
            .flat_map(|g| g.pods())
            .map(|r| r.pod.metadata.key())
            .collect();
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

    /// A holder of namespace `ns` labelled `app`, with an anti-affinity
    /// term on `key`.
    fn labelled(ns: &str, name: &str, app: &str, key: &str) -> PodRef {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
            "spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}}
        }))
        .unwrap();
        PodRef {
            node: Some(0),
            pod: Arc::new(pod),
        }
    }

    /// The groups seen from `ns`, each as its pods' names in order.
    fn groups(h: &TermHolders, ns: &str) -> Vec<Vec<String>> {
        let names = |g: &HolderGroup| {
            g.pods()
                .iter()
                .map(|r| r.pod.metadata.name.clone())
                .collect()
        };
        h.selecting_in(ns).map(names).collect()
    }

    #[test]
    fn holders_that_judge_alike_share_a_group() {
        let refs = [
            labelled("a", "web-1", "web", "host"),
            labelled("a", "db-1", "db", "host"),
            labelled("a", "web-2", "web", "host"),
            labelled("a", "web-zone", "web", "zone"),
            labelled("b", "web-b", "web", "host"),
        ];
        let h = TermHolders::build(&refs, Pod::has_required_anti_affinity);
        assert_eq!(
            groups(&h, "a"),
            [vec!["web-1", "web-2"], vec!["db-1"], vec!["web-zone"]]
        );
        assert_eq!(groups(&h, "b"), [vec!["web-b"]]);

        // A pod alike joins its group; a group whose last pod goes is gone.
        let web3 = labelled("a", "web-3", "web", "host");
        let h2 = h.with_changes(
            &refs[1..2],
            std::slice::from_ref(&web3),
            Pod::has_required_anti_affinity,
        );
        assert_eq!(
            groups(&h2, "a"),
            [vec!["web-1", "web-2", "web-3"], vec!["web-zone"]]
        );
        let rebuilt = TermHolders::build(
            [&refs[0], &refs[2], &refs[3], &refs[4], &web3],
            Pod::has_required_anti_affinity,
        );
        assert_eq!(h2.describe(), rebuilt.describe());
        // Namespaces not touched keep their groups, shared.
        let b = |h: &TermHolders| Arc::as_ptr(&h.in_namespace.get("b").unwrap()[0].pods);
        assert!(std::ptr::eq(b(&h), b(&h2)));
    }
}
