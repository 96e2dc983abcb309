//! kube-arbiter: a Kubernetes scheduler extender and priority admission
//! webhook served over one TLS port. See DESIGN.md for the map.

pub mod api;
pub mod app;
pub mod certs;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod explain;
pub mod log_every;
pub mod model;
pub mod parallel;
pub mod policy;
pub mod server;
pub mod synth;
