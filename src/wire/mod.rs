//! The Kubernetes wire formats at our edge, their readers and writers:
//! the scheduler extender's args and results
//! (`k8s.io/kube-scheduler/extender/v1`), the preemption and binding args,
//! and AdmissionReview v1. Keys are matched Go's way (any case, the last
//! of keys equal but for case wins); answers use the Go field names.
//!
//! This layer knows `model` only: the handlers in `api` turn policy
//! verdicts into these shapes. Inside it the arrows run one way: the
//! readers and writers use the shapes, and the JSON lexer (`lexer`) uses
//! nothing of it.

pub mod admission;
pub mod binding;
pub mod extender;
pub mod extender_read;
mod filter_answer;
pub(crate) mod lexer;
pub mod preempt_args;
pub(crate) mod prioritize_answer;
