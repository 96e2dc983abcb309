//! How list and map fields decode when Kubernetes writes them as `null` or
//! leaves them out. Shared by every model type, [`super::meta`] and
//! [`super::shared`] alike, so neither needs the other for it.

use serde::{Deserialize, Deserializer};

/// Kubernetes serializes empty maps and lists as `null` at times; treat
/// `null` like an absent field.
pub fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A list, `null` counting as empty, without spare capacity: serde grows a
/// Vec from 4 slots by doubling, and 150,000 pods keep their lists (mostly
/// of one item) for as long as they are in the view.
pub fn compact_list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let mut list = Option::<Vec<T>>::deserialize(d)?.unwrap_or_default();
    list.shrink_to_fit();
    Ok(list)
}
