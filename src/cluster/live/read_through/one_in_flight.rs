//! At most one read of an object in flight, and every caller answered by a
//! read that started after it asked: a caller joins the read in flight if
//! that one started after it asked; otherwise it waits for that read to
//! end and joins the next (which the first of the waiters starts). A
//! thousand callers asking about one object cost one read in flight at a
//! time, and none of them gets an answer older than its question. A read
//! whose callers all gave up (their requests timed out) is dropped with
//! them and leaves nothing behind.

use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared, WeakShared};

type Map<K, V> = foldhash::HashMap<K, V>;

type Answer<V> = Shared<BoxFuture<'static, V>>;

/// A read in flight; its callers hold the answer, the map only a weak
/// handle, so the read ends with its last caller.
struct Flight<V> {
    id: u64,
    started: Instant,
    /// `None` only for a read that completed before it was stored.
    answer: Option<WeakShared<BoxFuture<'static, V>>>,
}

type Flights<K, V> = Arc<Mutex<Map<K, Flight<V>>>>;

/// Reads by key, one in flight per key.
pub struct OneInFlight<K, V> {
    flights: Flights<K, V>,
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
                let joined = (flights.get(&key))
                    .and_then(|f| Some((f.answer.as_ref()?.upgrade()?, f.started >= asked)));
                match joined {
                    Some(joined) => joined,
                    None => {
                        let (flight, answer) = self.start(&key, read());
                        flights.insert(key.clone(), flight);
                        (answer, true)
                    }
                }
            };
            let value = answer.await;
            if fresh {
                return value;
            }
        }
    }

    /// A flight of `read`, which leaves the map when it lands or when its
    /// last caller drops it.
    fn start(
        &self,
        key: &K,
        read: impl Future<Output = V> + Send + 'static,
    ) -> (Flight<V>, Answer<V>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let leave = Leave {
            flights: Arc::clone(&self.flights),
            key: key.clone(),
            id,
        };
        let answer = async move {
            let _leave = leave;
            read.await
        }
        .boxed()
        .shared();
        let flight = Flight {
            id,
            started: Instant::now(),
            answer: answer.downgrade(),
        };
        (flight, answer)
    }

    /// Reads in flight now.
    #[cfg(test)]
    fn in_flight(&self) -> usize {
        lock(&self.flights).len()
    }
}

/// Takes a flight out of the map when dropped: with its read's answer, or
/// with the read itself when its callers gave up.
struct Leave<K: Hash + Eq, V> {
    flights: Flights<K, V>,
    key: K,
    id: u64,
}

impl<K: Hash + Eq, V> Drop for Leave<K, V> {
    fn drop(&mut self) {
        let mut flights = lock(&self.flights);
        if flights.get(&self.key).is_some_and(|f| f.id == self.id) {
            flights.remove(&self.key);
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
    async fn a_read_whose_callers_gave_up_leaves_nothing_behind() {
        let flights = Arc::new(OneInFlight::<&str, usize>::default());
        let reads = Arc::new(Reads::default());
        let gave_up = {
            let (flights, reads) = (Arc::clone(&flights), Arc::clone(&reads));
            tokio::spawn(async move { flights.read("pod", Instant::now(), || reads.read()).await })
        };
        settle().await;
        assert_eq!(flights.in_flight(), 1);
        gave_up.abort();
        let _ = gave_up.await;
        assert_eq!(flights.in_flight(), 0);
        assert_eq!(reads.at_once.load(Ordering::SeqCst), 1, "never landed");
        let next = {
            let (flights, reads) = (Arc::clone(&flights), Arc::clone(&reads));
            tokio::spawn(async move { flights.read("pod", Instant::now(), || reads.read()).await })
        };
        settle().await;
        reads.land.notify_waiters();
        assert_eq!(next.await.unwrap(), 1, "a read of its own");
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
