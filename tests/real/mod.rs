//! The real-cluster harness: a real control plane on loopback
//! ([`control_plane`]), kube-arbiter installed on it as an operator would
//! ([`install`]) or with its chart and the real `helm` ([`helm`]), the
//! kubelet's part ([`kubelet`]), and what the stories create and wait for
//! ([`cluster`]).

pub mod cluster;
pub mod control_plane;
pub mod helm;
pub mod install;
pub mod kubelet;
pub mod pki;
pub mod process;

pub fn install_crypto_provider() {
    crate::common::install_provider();
}
