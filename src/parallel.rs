//! Splitting a large slice over the machine's cores: decoding a full
//! cluster file or a 5,000-node NodeList is CPU work that parallelises
//! cleanly, and both must keep document order and report the first error.

/// `work(offset, part)` on contiguous parts of `items`, one per core, the
/// results in order; one part (this thread) when `items` has fewer than
/// `min` entries or there is one core. The first failing part's error (in
/// order) is returned; a panic in a worker is resumed here.
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
    if items.len() < min {
        return work(0, items).map(|r| vec![r]);
    }
    let threads = cores();
    if threads < 2 {
        return work(0, items).map(|r| vec![r]);
    }
    let size = items.len().div_ceil(threads);
    let work = &work;
    std::thread::scope(|scope| {
        // The calling thread does the first part: one thread fewer to start.
        let (first, rest) = items.split_at(size.min(items.len()));
        let workers: Vec<_> = rest
            .chunks(size)
            .enumerate()
            .map(|(k, part)| scope.spawn(move || work((k + 1) * size, part)))
            .collect();
        let first = work(0, first);
        let rest = workers.into_iter().map(|w| {
            w.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        std::iter::once(first).chain(rest).collect()
    })
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
}
