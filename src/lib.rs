//! kube-arbiter: a Kubernetes scheduler extender and priority admission
//! webhook served over one TLS port. See docs/design.md for the map.

pub mod api;
pub mod app;
pub mod certs;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod deletion_cost;
pub mod explain;
pub mod file_watch;
pub mod fit;
pub mod log_every;
pub mod model;
pub mod parallel;
pub mod policy;
pub mod server;
pub mod serving_allocator;
/// Synthetic clusters for benches, examples and load scripts; dev-only
/// (cargo feature `synth`, see docs/design.md §3.3).
#[cfg(feature = "synth")]
pub mod synth;
/// Builders for the objects tests need (unit tests, and integration tests
/// through the cargo feature `testing`; see docs/design.md §3.3).
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod wire;
