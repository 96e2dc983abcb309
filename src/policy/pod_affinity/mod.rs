//! Inter-pod affinity and anti-affinity, to the letter of kube-scheduler's
//! InterPodAffinity plugin (`pkg/scheduler/framework/plugins/interpodaffinity`).
//!
//! - Filter: [`prepare_filter`] once per pod, then [`AffinityFilter::filter`]
//!   per node; [`AffinityFilter::add_pod`] / [`AffinityFilter::remove_pod`]
//!   let preemption try what-ifs on a cheap clone.
//! - Score: [`prepare_score`] once per pod, [`AffinityScore::score`] per
//!   node (raw), then [`normalize`] over the candidates (0..=100).
//!
//! Terms and namespaces: see [`terms`]. Terminal pods are not in the view;
//! terminating pods count, as upstream.

mod counts;
mod filtering;
mod scoring;
pub mod terms;

#[cfg(test)]
mod filtering_tests;
#[cfg(test)]
mod scoring_tests;

pub use filtering::{
    AffinityFilter, REASON_AFFINITY, REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI_AFFINITY,
    prepare_filter,
};
pub use scoring::{AffinityScore, normalize, prepare_score};
