//! The Kubernetes wire formats at our edge, their readers and writers:
//! the scheduler extender's args and results
//! (`k8s.io/kube-scheduler/extender/v1`), the preemption and binding args,
//! and AdmissionReview v1. Keys are matched Go's way (any case, the last
//! of keys equal but for case wins); answers use the Go field names.
//!
//! This layer knows `model` only: the handlers in `api` turn policy
//! verdicts into these shapes. Inside it the arrows run one way: the
//! readers and writers use the shapes, and the JSON helpers
//! (`json_extent`, `json_scan`, `json_string`, `validated_walk`, `any_case`) use nothing of
//! it.

pub mod admission;
pub(crate) mod any_case;
pub mod binding;
pub mod extender;
pub mod extender_read;
mod filter_answer;
mod json_extent;
mod json_scan;
pub(crate) mod json_string;
pub mod preempt_args;
pub(crate) mod prioritize_answer;
mod validated_walk;
