//! Splitting a large slice over the machine's cores: decoding a full
//! cluster file or a 5,000-node NodeList is CPU work that parallelises
//! cleanly, and both must keep document order and report the first error.

use std::sync::atomic::{AtomicUsize, Ordering};
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

/// Wake the threads that take the parts after the first, for a split due
/// in a few tens of microseconds: a sleeping thread takes about 20 µs to
/// wake, time the caller otherwise spends alone on the split's work (a
/// 5,000-name filter's check is ~100 µs a thread). A woken thread looks
/// for work a little while before it sleeps again.
pub fn wake_helpers() {
    if let Some(pool) = helpers() {
        pool.spawn(|| {});
    }
}

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
