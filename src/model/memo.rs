//! A value derived once from an object that is shared read-only (pods in a
//! snapshot live behind `Arc` and never change), kept with the object so
//! every later request reuses it, as kube-scheduler's PodInfo keeps a pod's
//! computed requests.

use std::fmt;
use std::sync::OnceLock;

/// Empty until first asked. A clone starts empty again, because the copy
/// may be edited; it never takes part in equality or debug output.
pub struct Memo<T>(OnceLock<T>);

impl<T> Memo<T> {
    pub fn get_or_init(&self, compute: impl FnOnce() -> T) -> &T {
        self.0.get_or_init(compute)
    }
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Self(OnceLock::new())
    }
}

impl<T> Clone for Memo<T> {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl<T> PartialEq for Memo<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> fmt::Debug for Memo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Memo")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computes_once_and_a_clone_starts_empty() {
        let memo = Memo::default();
        assert_eq!(*memo.get_or_init(|| 1), 1);
        assert_eq!(*memo.get_or_init(|| 2), 1, "kept");
        let copy = memo.clone();
        assert_eq!(*copy.get_or_init(|| 3), 3, "the copy computes again");
    }
}
