//! Parts of an object that many objects carry identically, stored once.
//!
//! The pods of one ReplicaSet have the same labels, owner, containers,
//! affinity and spread constraints; at 150,000 pods, keeping a copy per pod
//! is most of the view's memory. [`Shared`] holds such a part behind an
//! `Arc`, and decoding looks each decoded value up in a per-thread pool of
//! the values decoded before, so equal parts end up as one allocation.
//!
//! It behaves as a plain value: it derefs to `T`, compares by value, and
//! writing through it copies first when others share it.

use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A pool is purged of the values only it still holds once it has grown to
/// this many entries, and then each time it doubles, so a long-running
/// watch that sees values come and go keeps it bounded.
const FIRST_PURGE: usize = 4096;

pub struct Shared<T>(Arc<T>);

impl<T> Shared<T> {
    pub fn new(value: T) -> Self {
        Self(Arc::new(value))
    }

    /// True when both are the same allocation (not only equal values).
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl<T: Hash + Eq + Send + Sync + 'static> Shared<T> {
    /// The pooled copy of `value` when this thread has decoded an equal one
    /// before, otherwise `value`, now pooled.
    pub fn interned(value: T) -> Self {
        if !POOLING.get() {
            return Self::new(value);
        }
        POOLS.with_borrow_mut(|pools| {
            let pool = pools
                .entry(TypeId::of::<T>())
                .or_insert_with(|| Box::new(Pool::<T>::default()))
                .downcast_mut::<Pool<T>>();
            match pool {
                Some(pool) => Self(pool.intern(value)),
                // Unreachable: the pool under T's TypeId is a Pool<T>.
                None => Self::new(value),
            }
        })
    }
}

thread_local! {
    static POOLS: RefCell<HashMap<TypeId, Box<dyn Any>>> = RefCell::new(HashMap::new());
    static POOLING: Cell<bool> = const { Cell::new(true) };
}

/// `decode()` with pooling off on this thread: for objects decoded once and
/// dropped with their request (the Nodes of an extender call, each with
/// its own labels), where pooling would only hash every value and fill the
/// pool with values nobody shares.
pub fn unpooled<R>(decode: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            POOLING.set(self.0);
        }
    }
    let _restore = Restore(POOLING.replace(false));
    decode()
}

struct Pool<T> {
    values: foldhash::HashMap<Arc<T>, ()>,
    purge_at: usize,
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Self {
            values: foldhash::HashMap::default(),
            purge_at: FIRST_PURGE,
        }
    }
}

impl<T: Hash + Eq> Pool<T> {
    fn intern(&mut self, value: T) -> Arc<T> {
        if let Some((pooled, ())) = self.values.get_key_value(&value) {
            return pooled.clone();
        }
        if self.values.len() >= self.purge_at {
            // Only this thread's pool can hand out new references, so a
            // count of one cannot grow while we look.
            self.values.retain(|v, ()| Arc::strong_count(v) > 1);
            self.purge_at = (self.values.len() * 2).max(FIRST_PURGE);
        }
        let value = Arc::new(value);
        self.values.insert(value.clone(), ());
        value
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Clone> DerefMut for Shared<T> {
    fn deref_mut(&mut self) -> &mut T {
        Arc::make_mut(&mut self.0)
    }
}

impl<'a, T> IntoIterator for &'a Shared<T>
where
    &'a T: IntoIterator,
{
    type Item = <&'a T as IntoIterator>::Item;
    type IntoIter = <&'a T as IntoIterator>::IntoIter;
    fn into_iter(self) -> Self::IntoIter {
        (&*self.0).into_iter()
    }
}

impl<A, T: FromIterator<A>> FromIterator<A> for Shared<T> {
    fn from_iter<I: IntoIterator<Item = A>>(iter: I) -> Self {
        Self::new(iter.into_iter().collect())
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T: Default> Default for Shared<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> From<T> for Shared<T> {
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || *self.0 == *other.0
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: Hash> Hash for Shared<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de, T> Deserialize<'de> for Shared<T>
where
    T: Deserialize<'de> + Hash + Eq + Send + Sync + 'static,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(Self::interned)
    }
}

impl<T: Serialize> Serialize for Shared<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// A list field (`null` counting as empty, no spare capacity), pooled.
pub fn shared_list<'de, D, T>(d: D) -> Result<Shared<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Hash + Eq + Send + Sync + 'static,
{
    super::null_fields::compact_list(d).map(Shared::interned)
}

/// A map or other field where `null` counts as absent, pooled.
pub fn shared_or_default<'de, D, T>(d: D) -> Result<Shared<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default + Hash + Eq + Send + Sync + 'static,
{
    super::null_fields::null_as_default(d).map(Shared::interned)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    type Labels = BTreeMap<String, String>;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn equal_values_decoded_on_one_thread_share_one_allocation() {
        let a: Shared<Labels> = serde_json::from_str(r#"{"app":"web","tier":"x"}"#).unwrap();
        let b: Shared<Labels> = serde_json::from_str(r#"{"tier":"x","app":"web"}"#).unwrap();
        let c: Shared<Labels> = serde_json::from_str(r#"{"app":"db"}"#).unwrap();
        assert!(Shared::ptr_eq(&a, &b));
        assert!(!Shared::ptr_eq(&a, &c));
        assert_eq!(*a, labels(&[("app", "web"), ("tier", "x")]));
    }

    #[test]
    fn unpooled_decoding_shares_nothing_and_pooling_resumes_after() {
        let text = r#"{"unpooled-test":"a"}"#;
        let pooled: Shared<Labels> = serde_json::from_str(text).unwrap();
        let (a, b): (Shared<Labels>, Shared<Labels>) = unpooled(|| {
            (
                serde_json::from_str(text).unwrap(),
                serde_json::from_str(text).unwrap(),
            )
        });
        assert!(!Shared::ptr_eq(&a, &b) && !Shared::ptr_eq(&a, &pooled));
        assert_eq!(a, pooled);
        let again: Shared<Labels> = serde_json::from_str(text).unwrap();
        assert!(Shared::ptr_eq(&again, &pooled));
    }

    #[test]
    fn writing_through_a_shared_value_leaves_the_others_unchanged() {
        let a = Shared::interned(labels(&[("app", "writes")]));
        let mut b = Shared::interned(labels(&[("app", "writes")]));
        assert!(Shared::ptr_eq(&a, &b));
        b.insert("extra".into(), "1".into());
        assert_eq!(a.len(), 1);
        assert_eq!(b.len(), 2);
        assert_ne!(a, b);
    }

    #[test]
    fn the_pool_lets_go_of_values_nobody_holds_any_more() {
        let kept = Shared::interned(labels(&[("purge-test", "kept")]));
        for i in 0..3 * FIRST_PURGE {
            drop(Shared::interned(labels(&[("purge-test", &i.to_string())])));
        }
        let size = POOLS.with_borrow(|pools| {
            pools[&TypeId::of::<Labels>()]
                .downcast_ref::<Pool<Labels>>()
                .map(|p| p.values.len())
        });
        // Bounded by the purge rule, not by the 12,288 values decoded.
        assert!(size.is_some_and(|n| n <= 2 * FIRST_PURGE), "{size:?}");
        let again = Shared::interned(labels(&[("purge-test", "kept")]));
        assert!(Shared::ptr_eq(&kept, &again));
    }

    #[test]
    fn decode_errors_pass_through() {
        let err = serde_json::from_str::<Shared<Labels>>(r#"{"app":1}"#).unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
    }
}
