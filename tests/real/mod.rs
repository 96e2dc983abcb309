//! The real-cluster harness: a real control plane on loopback
//! ([`control_plane`]), kube-arbiter installed on it as an operator would
//! ([`install`]) or with its chart and the real `helm` ([`helm`]), the
//! kubelet's part ([`kubelet`]), and what the stories create and wait for
//! ([`cluster`]). For the differential test of the filter: random clusters
//! ([`random_cluster`]), an extender that reports what kube-scheduler's
//! in-tree filters passed ([`probe_extender`]), and both sides' reasons
//! in the same words ([`reasons`]).

pub mod cluster;
pub mod control_plane;
pub mod helm;
pub mod install;
pub mod kubelet;
pub mod pki;
pub mod probe_extender;
pub mod process;
pub mod random_cluster;
pub mod reasons;
#[path = "../support/rng.rs"]
pub mod rng;

pub fn install_crypto_provider() {
    crate::common::install_provider();
}
