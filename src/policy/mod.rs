//! Pure placement and priority decisions: no I/O, no JSON, no HTTP.
//!
//! Each module decides one concern, upstream-style: a per-pod preparation
//! done once (PreFilter/PreScore), then a cheap per-node check or score.

pub mod pod_affinity;
pub mod priority;
pub mod priority_class;

use std::fmt;

pub use crate::model::Reason;

pub mod domains;
pub mod filter;
pub mod node_affinity;
pub mod pod_relation;
pub mod prioritize;
pub mod reason_cache;
pub mod taint_toleration;
pub mod topology_spread;

/// How a node failed a filter rule; decides which extender map it lands in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Preemption might help (`FailedNodes`).
    Unschedulable,
    /// Evicting pods cannot help (`FailedAndUnresolvableNodes`).
    UnschedulableAndUnresolvable,
}

/// A node's failure of one rule, with a reason a person can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: Code,
    /// Shared: thousands of nodes failing in the same domain carry one text.
    pub reason: Reason,
}

impl Failure {
    pub fn unschedulable(reason: impl Into<Reason>) -> Self {
        Self {
            code: Code::Unschedulable,
            reason: reason.into(),
        }
    }

    pub fn unresolvable(reason: impl Into<Reason>) -> Self {
        Self {
            code: Code::UnschedulableAndUnresolvable,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// Per-node outcome of a filter rule.
pub type Verdict = Result<(), Failure>;

pub mod pdb;
pub mod preemption;
pub mod resources;
pub mod scale_in;
