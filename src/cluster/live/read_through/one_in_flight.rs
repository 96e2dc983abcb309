//! At most one read of an object in flight, and every caller answered by a
//! read that started after it asked: a caller joins the read in flight if
//! that one started after it asked; otherwise it waits for that read to
//! end and joins the next (which the first of the waiters starts). A
//! thousand callers asking about one object cost one read in flight at a
//! time, and none of them gets an answer older than its question.

use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};

type Map<K, V> = foldhash::HashMap<K, V>;

struct Flight<V> {
    id: u64,
    started: Instant,
    answer: Shared<BoxFuture<'static, V>>,
}

/// Reads by key, one in flight per key.
pub struct OneInFlight<K, V> {
    flights: Arc<Mutex<Map<K, Flight<V>>>>,
    next_id: AtomicU64,
}

impl<K, V> Default for OneInFlight<K, V> {
    fn default() -> Self {
        Self {
            flights: Arc::default(),
            next_id: AtomicU64::new(0),
        }
    }
}

impl<K, V> OneInFlight<K, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// The answer of a read of `key` that started at `asked` or later;
    /// `read` starts one when none such is in flight.
    pub async fn read<F, Fut>(&self, key: K, asked: Instant, read: F) -> V
    where
        F: Fn() -> Fut,
        Fut: Future<Output = V> + Send + 'static,
    {
        loop {
            let (answer, fresh) = {
                let mut flights = lock(&self.flights);
                match flights.get(&key) {
                    Some(f) => (f.answer.clone(), f.started >= asked),
                    None => {
                        let answer = self.start(&key, read());
                        flights.insert(key.clone(), answer.clone_flight());
                        (answer.answer, true)
                    }
                }
            };
            let value = answer.await;
            if fresh {
                return value;
            }
        }
    }

    /// A flight of `read` that leaves the map when it lands.
    fn start(&self, key: &K, read: impl Future<Output = V> + Send + 'static) -> Flight<V> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let flights = Arc::clone(&self.flights);
        let key = key.clone();
        let answer = async move {
            let value = read.await;
            let mut flights = lock(&flights);
            if flights.get(&key).is_some_and(|f| f.id == id) {
                flights.remove(&key);
            }
            value
        }
        .boxed()
        .shared();
        Flight {
            id,
            started: Instant::now(),
            answer,
        }
    }

    /// Reads in flight now.
    #[cfg(test)]
    fn in_flight(&self) -> usize {
        lock(&self.flights).len()
    }
}

impl<V: Clone> Flight<V> {
    fn clone_flight(&self) -> Self {
        Self {
            id: self.id,
            started: self.started,
            answer: self.answer.clone(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each change is one insert or remove: a panic elsewhere cannot leave
    // the map half-changed.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use tokio::sync::Notify;

    use super::*;

    /// Counts reads, and which read answered: its start order.
    #[derive(Default)]
    struct Reads {
        started: AtomicUsize,
        at_once: AtomicUsize,
        most_at_once: AtomicUsize,
        land: Notify,
    }

    impl Reads {
        /// A read that lands when `land` is notified, answering its number.
        fn read(self: &Arc<Self>) -> impl Future<Output = usize> + Send + 'static {
            let reads = Arc::clone(self);
            let n = reads.started.fetch_add(1, Ordering::SeqCst);
            let now = reads.at_once.fetch_add(1, Ordering::SeqCst) + 1;
            reads.most_at_once.fetch_max(now, Ordering::SeqCst);
            async move {
                reads.land.notified().await;
                reads.at_once.fetch_sub(1, Ordering::SeqCst);
                n
            }
        }
    }

    async fn settle() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    #[tokio::test]
    async fn callers_who_asked_before_a_read_started_share_it() {
        let flights = Arc::new(OneInFlight::<&str, usize>::default());
        let reads = Arc::new(Reads::default());
        let asked = Instant::now();
        let callers: Vec<_> = (0..5)
            .map(|_| {
                let (flights, reads) = (Arc::clone(&flights), Arc::clone(&reads));
                tokio::spawn(async move { flights.read("pod", asked, || reads.read()).await })
            })
            .collect();
        settle().await;
        reads.land.notify_waiters();
        for c in callers {
            assert_eq!(c.await.unwrap(), 0);
        }
        assert_eq!(reads.started.load(Ordering::SeqCst), 1);
        assert_eq!(flights.in_flight(), 0);
    }

    #[tokio::test]
    async fn a_caller_who_asked_after_a_read_started_gets_the_next_one() {
        let flights = Arc::new(OneInFlight::<&str, usize>::default());
        let reads = Arc::new(Reads::default());
        let first = {
            let (flights, reads) = (Arc::clone(&flights), Arc::clone(&reads));
            tokio::spawn(async move { flights.read("pod", Instant::now(), || reads.read()).await })
        };
        settle().await;
        let later: Vec<_> = (0..5)
            .map(|_| {
                let (flights, reads) = (Arc::clone(&flights), Arc::clone(&reads));
                tokio::spawn(
                    async move { flights.read("pod", Instant::now(), || reads.read()).await },
                )
            })
            .collect();
        settle().await;
        assert_eq!(reads.started.load(Ordering::SeqCst), 1, "they wait");
        reads.land.notify_waiters();
        assert_eq!(first.await.unwrap(), 0);
        settle().await;
        reads.land.notify_waiters();
        for c in later {
            assert_eq!(c.await.unwrap(), 1, "a read started after they asked");
        }
        assert_eq!(reads.started.load(Ordering::SeqCst), 2);
        assert_eq!(reads.most_at_once.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn other_keys_read_at_the_same_time() {
        let flights = Arc::new(OneInFlight::<&str, usize>::default());
        let reads = Arc::new(Reads::default());
        let callers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|key| {
                let (flights, reads) = (Arc::clone(&flights), Arc::clone(&reads));
                tokio::spawn(
                    async move { flights.read(key, Instant::now(), || reads.read()).await },
                )
            })
            .collect();
        settle().await;
        assert_eq!(reads.most_at_once.load(Ordering::SeqCst), 2);
        reads.land.notify_waiters();
        for c in callers {
            c.await.unwrap();
        }
    }
}
