//! Lean domain types decoded straight from Kubernetes JSON.
//!
//! Only the fields the policies read are kept; unknown fields are ignored
//! (newer API versions add fields), wrong types are decode errors. Nothing
//! here does I/O.

pub mod meta;
pub mod node;
pub mod null_fields;
pub mod objects;
pub mod pod;
pub mod quantity;
pub mod reason;
pub mod recent_nodes;
pub mod requests;
pub mod selector;
pub mod shared;

pub use meta::{Labels, ObjectMeta, OwnerReference};
pub use node::{Node, Taint, Toleration};
pub use objects::{
    DeviceClass, MapSelectorOwner, Namespace, PodDisruptionBudget, PriorityClass, SelectorOwner,
};
pub use pod::Pod;
pub use reason::Reason;
pub use recent_nodes::{Kept, RecentNodes};
pub use selector::LabelSelector;
pub use shared::Shared;
