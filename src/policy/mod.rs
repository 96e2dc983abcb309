//! Pure placement and priority decisions: no I/O, no JSON, no HTTP.
//!
//! Each module decides one concern, upstream-style: a per-pod preparation
//! done once (PreFilter/PreScore), then a cheap per-node check or score.

pub mod pod_affinity;
pub mod priority;
pub mod priority_class;

use std::fmt;
use std::sync::Arc;

pub mod domains;
pub mod filter;
pub mod node_affinity;
pub mod pod_relation;
pub mod prioritize;
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

/// A failure's text: a fixed text is borrowed, not copied. Thousands of
/// nodes of a 5,000-node filter fail with the same fixed text (NodeAffinity,
/// an unknown node); allocating it per node, and freeing it after the
/// answer, was a visible share of such a request, and counting references
/// to one shared copy from both cores would make them fight over it.
#[derive(Debug, Clone)]
pub enum Reason {
    Fixed(&'static str),
    Shared(Arc<str>),
}

impl std::ops::Deref for Reason {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Self::Fixed(s) => s,
            Self::Shared(s) => s,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl PartialEq for Reason {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Reason {}

impl From<&'static str> for Reason {
    fn from(s: &'static str) -> Self {
        Self::Fixed(s)
    }
}

impl From<Arc<str>> for Reason {
    fn from(s: Arc<str>) -> Self {
        Self::Shared(s)
    }
}

impl From<String> for Reason {
    fn from(s: String) -> Self {
        Self::Shared(s.into())
    }
}

/// Per-node outcome of a filter rule.
pub type Verdict = Result<(), Failure>;

pub mod pdb;
pub mod preemption;
pub mod resources;
pub mod scale_in;
