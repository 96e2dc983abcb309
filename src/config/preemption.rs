//! `preemption:` — how the extender's `preempt` verb answers.

use serde::Deserialize;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct PreemptionSettings {
    pub answer: PreemptionAnswer,
}

/// `all`: every node where preemption helps; kube-scheduler chooses among
/// them. `best`: only the node upstream's choice rules pick, so our victim
/// logic decides the node too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PreemptionAnswer {
    #[default]
    All,
    Best,
}
