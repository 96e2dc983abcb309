//! The cluster view: an immutable indexed [`Snapshot`] published through a
//! [`ClusterView`], and the sources that fill it.

pub mod assume;
pub mod bind_guard;
pub mod binder;
pub mod decode;
pub mod file;
pub mod in_flight;
pub mod live;
pub mod snapshot;
pub mod sync_stats;
pub mod view;

pub use assume::AssumeError;
pub use binder::{BindRequest, Binder};
pub use in_flight::{CandidateNodes, InFlight, InFlightPod, Settled};
pub use snapshot::{
    ByNode, Candidates, ClusterObjects, DomainId, ExtendedResourceClasses, HolderGroup, KeyDomains,
    ListedPod, NameIndex, NodeIdx, NodeInfo, NodeList, NodePods, NodeSet, NodeSets, ObjectCounts,
    Owners, PdbIndex, PodChange, PodPdbs, PodRef, PodSummary, SharedObjects, Snapshot,
    TopologyIndex, pod_importance,
};
pub use sync_stats::{Kind, SyncStats};
pub use view::{ClusterView, ViewStats};
