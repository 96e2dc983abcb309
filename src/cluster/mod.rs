//! The cluster view: an immutable indexed [`Snapshot`] published through a
//! [`ClusterView`], and the sources that fill it.

pub mod decode;
pub mod file;
pub mod snapshot;
pub mod view;

pub use snapshot::{ClusterObjects, NodeIdx, NodeInfo, ObjectCounts, Owners, PodRef, Snapshot};
pub use view::{ClusterView, ViewStats};
