//! PodTopologySpread: hard constraints filter, soft constraints score.
//! See `common` for the constraint set and counting rules they share.

pub mod common;
pub mod filtering;
mod in_flight;
pub mod scoring;

pub use filtering::{SpreadFilter, prepare_filter};
pub use scoring::{SpreadScore, prepare_score};

#[cfg(test)]
pub(crate) mod tests;
