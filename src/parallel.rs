//! Splitting a large slice over the machine's cores: decoding a full
//! cluster file or a 5,000-node NodeList, checking 5,000 candidate nodes or
//! finding victims on hundreds is CPU work that parallelises cleanly, and
//! each must keep document order and report the first error.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// `work(offset, part)` on contiguous parts of `items`, one per core, the
/// results in order; one part (this thread) when `items` has fewer than
/// `min` entries or there is one core. The first failing part's error (in
/// order) is returned; a panic in a worker is resumed here.
///
/// The calling thread does the first part and the others go to a pool
/// started once ([`helpers`]): a thread started and ended per call (clone,
/// a stack mapped and unmapped, the allocator's thread cache built and
/// flushed) cost a 5,000-name filter more than a tenth of its time.
pub fn map_parts<T, R, E>(
    items: &[T],
    min: usize,
    work: impl Fn(usize, &[T]) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E>
where
    T: Sync,
    R: Send,
    E: Send,
{
    let pool = match helpers() {
        Some(pool) if items.len() >= min => pool,
        _ => return work(0, items).map(|r| vec![r]),
    };
    let size = items.len().div_ceil(pool.current_num_threads() + 1);
    let (first, rest) = items.split_at(size.min(items.len()));
    let mut others: Vec<Option<Result<R, E>>> = rest.chunks(size).map(|_| None).collect();
    let work = &work;
    let spawned = others.len();
    let finished = &AtomicUsize::new(0);
    let first = pool.in_place_scope(|scope| {
        for ((k, part), slot) in rest.chunks(size).enumerate().zip(others.iter_mut()) {
            scope.spawn(move |_| {
                *slot = Some(work((k + 1) * size, part));
                finished.fetch_add(1, Ordering::Release);
            });
        }
        let first = work(0, first);
        spin_briefly_until(|| finished.load(Ordering::Acquire) == spawned);
        first
    });
    // `in_place_scope` returns once every spawned part has run (or resumes
    // its panic), so each slot is filled.
    std::iter::once(first)
        .chain(others.into_iter().flatten())
        .collect()
}

/// One server's wake-ahead of the threads that take the parts after the
/// first ([`Splitter::prewarm`]), and whether a thread it woke is polling
/// for parts now ([`Splitter::helper_polling`]). The threads themselves
/// are the process's ([`map_parts`]). Clones share one wake state.
#[derive(Clone, Default)]
pub struct Splitter {
    wake: Arc<WakeState>,
}

struct WakeState {
    /// Where `last_wake_ns` counts from.
    epoch: Instant,
    /// When [`Splitter::prewarm`] last woke a helper, in ns since
    /// `epoch` (0: never).
    last_wake_ns: AtomicU64,
    /// Helpers polling in [`Splitter::prewarm`] now.
    polling: AtomicUsize,
}

impl Default for WakeState {
    fn default() -> Self {
        Self {
            epoch: Instant::now(),
            last_wake_ns: AtomicU64::new(0),
            polling: AtomicUsize::new(0),
        }
    }
}

impl Splitter {
    /// Wake the threads that take the parts after the first, for `parts`
    /// splits (one request's: reading its body, then checking its nodes)
    /// expected within a few hundred microseconds. A sleeping thread took
    /// 100–150 µs to start running here (a 2-vCPU VM), and a woken thread
    /// that finds nothing to do sleeps again at once and must be woken a
    /// second time. So the woken thread stays awake, polling for the
    /// splits' parts: until it has run `parts` of them, or
    /// [`HOT_WAIT_MAX`] has passed since it started or ran its last one. A
    /// call within [`HOT_WAIT_MAX`] of the last one does nothing (that
    /// helper is still on its way, or polling, or has taken its splits:
    /// then this one's split wakes a helper the usual way). A caller wakes
    /// the helpers as early as it knows a split is likely: a filter or
    /// preempt request from its declared length, before its body is read
    /// (`api::split_body`).
    pub fn prewarm(&self, parts: usize) {
        let Some(pool) = helpers() else { return };
        let wake = &self.wake;
        let now = wake.epoch.elapsed().as_nanos() as u64;
        let last = wake.last_wake_ns.load(Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) < HOT_WAIT_MAX.as_nanos() as u64 {
            return;
        }
        wake.last_wake_ns.store(now.max(1), Ordering::Relaxed);
        let wake = Arc::clone(wake);
        pool.spawn(move || {
            wake.polling.fetch_add(1, Ordering::Release);
            let mut since = Instant::now();
            let mut taken = 0;
            while taken < parts && since.elapsed() < HOT_WAIT_MAX {
                if rayon_core::yield_now() == Some(rayon_core::Yield::Executed) {
                    taken += 1;
                    since = Instant::now();
                } else {
                    // Anything else runnable on this core goes first.
                    std::thread::yield_now();
                }
            }
            wake.polling.fetch_sub(1, Ordering::Release);
        });
    }

    /// Whether a helper woken by [`Self::prewarm`] is polling for a part
    /// now: a split it takes starts at once, where a sleeping helper would
    /// start only after 100–150 µs, longer than some splits save.
    pub fn helper_polling(&self) -> bool {
        self.wake.polling.load(Ordering::Acquire) > 0
    }
}

/// How long a woken helper polls for a split's part: longer
/// than what usually remains, once it runs, of receiving, decoding and
/// preparing a 5,000-name filter (~150 µs served), short enough that a
/// request whose split comes later only costs the helper's sleep and a
/// second wake-up, as without polling.
const HOT_WAIT_MAX: Duration = Duration::from_micros(250);

/// After its own part, the caller waits for the others' by polling a
/// little (they end within microseconds of each other when the helpers
/// started in time) rather than sleeping on the pool's latch and being
/// woken again. It yields between polls, so that a helper sharing its
/// core still runs. Past the bound (a helper descheduled, or panicked) it
/// sleeps on the latch as before.
fn spin_briefly_until(done: impl Fn() -> bool) {
    const SPIN_MAX: Duration = Duration::from_micros(50);
    let start = Instant::now();
    while !done() && start.elapsed() < SPIN_MAX {
        std::thread::yield_now();
    }
}

/// The threads that take the parts after the first: one fewer than the
/// cores, started on first use. None on one core, or if they cannot be
/// started (then the caller does all the work itself).
fn helpers() -> Option<&'static rayon_core::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon_core::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let threads = cores().checked_sub(1).filter(|&n| n > 0)?;
        rayon_core::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("split-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// The cores this process may use, read once: `available_parallelism`
/// reads the cgroup quota files on every call (a few syscalls, tens of
/// microseconds), too much for every filter request.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_slice_in_order_with_their_offsets() {
        let items: Vec<usize> = (0..1000).collect();
        let parts = map_parts(&items, 10, |offset, part| {
            assert_eq!(part[0], offset);
            Ok::<_, ()>(part.to_vec())
        })
        .unwrap();
        assert_eq!(parts.concat(), items);
        let small = map_parts(&items[..5], 10, |_, p| Ok::<_, ()>(p.len())).unwrap();
        assert_eq!(small, [5], "below the minimum one part does it all");
    }

    /// A woken helper that polls takes the splits that come, and one
    /// whose splits never come goes back to the pool: a later split is
    /// still taken (a poller that never ended would hang it), and no
    /// poller is left.
    #[test]
    fn woken_helpers_take_splits_or_return_to_the_pool() {
        let items: Vec<usize> = (0..1000).collect();
        let split = || map_parts(&items, 10, |_, part| Ok::<_, ()>(part.to_vec())).unwrap();
        let splitter = Splitter::default();
        splitter.prewarm(2);
        splitter.prewarm(2);
        assert_eq!(split().concat(), items);
        assert_eq!(split().concat(), items);
        splitter.prewarm(1);
        std::thread::sleep(HOT_WAIT_MAX * 4);
        assert_eq!(split().concat(), items);
        // Each poller ends within HOT_WAIT_MAX of its last part (other
        // tests' splits may be among them).
        let deadline = Instant::now() + Duration::from_secs(10);
        while splitter.helper_polling() {
            assert!(Instant::now() < deadline, "a poller never ended");
            std::thread::sleep(HOT_WAIT_MAX);
        }
    }

    #[test]
    fn the_first_error_in_order_wins() {
        let items: Vec<usize> = (0..1000).collect();
        let err = map_parts(&items, 10, |_, part| {
            match part.iter().find(|&&i| i == 700 || i == 999) {
                Some(&i) => Err(i),
                None => Ok(()),
            }
        })
        .unwrap_err();
        assert_eq!(err, 700);
    }

    #[test]
    fn a_panic_in_another_part_reaches_the_caller() {
        let items: Vec<usize> = (0..1000).collect();
        let caught = std::panic::catch_unwind(|| {
            map_parts(&items, 10, |offset, _| {
                assert!(offset == 0, "part at {offset} fails");
                Ok::<_, ()>(())
            })
        });
        if cores() > 1 {
            assert!(caught.is_err());
        } else {
            assert!(caught.is_ok(), "one core: one part, at offset 0");
        }
    }

    #[test]
    fn later_parts_run_on_the_kept_threads() {
        let items: Vec<usize> = (0..1000).collect();
        for _ in 0..3 {
            let names = map_parts(&items, 10, |_, _| {
                Ok::<_, ()>(std::thread::current().name().map(str::to_owned))
            })
            .unwrap();
            assert_eq!(names.len(), cores().min(items.len()));
            for name in &names[1..] {
                assert!(
                    name.as_deref().is_some_and(|n| n.starts_with("split-")),
                    "{name:?}"
                );
            }
        }
    }
}
