//! The serving process's allocator, declared by each binary that serves
//! (`kube-arbiter` itself and the load script's floor, which must allocate
//! as the server does to be its floor). A library cannot choose it for
//! them without choosing it for the tests and fuzz targets too.

/// Make jemalloc the binary's global allocator, with its options.
///
/// jemalloc, not the system allocator: under load, with a cluster view
/// built on some threads and freed on others, glibc malloc's per-thread
/// arenas kept the freed memory and RSS grew without bound; jemalloc stays
/// flat (docs/memory.md has the measurements).
///
/// Its options are read when it starts (its `malloc_conf` symbol, under
/// the `_rjem_` prefix tikv-jemalloc-sys gives it). A background thread
/// returns freed pages on the decay timer even in arenas nobody allocates
/// from any more, such as those of a reload's decode threads, which exit.
/// Freed pages go back after 1 s instead of 10 s: a reload frees a whole
/// snapshot, and fewer of its pages stay resident. A thread's cache is
/// trimmed once per 1 MiB it allocates instead of per 64 KiB: an extender
/// request allocates a few hundred KB (its body, its answer), and trimming
/// several times a request was a visible share of its instructions
/// (docs/extender-performance.md); what a cache may hold is bounded as
/// before, it is only trimmed less often.
#[macro_export]
macro_rules! serving_allocator {
    () => {
        #[cfg(not(target_env = "msvc"))]
        #[global_allocator]
        static ALLOCATOR: $crate::serving_allocator::Jemalloc = $crate::serving_allocator::Jemalloc;

        #[cfg(not(target_env = "msvc"))]
        #[unsafe(export_name = "_rjem_malloc_conf")]
        static JEMALLOC_OPTIONS: &[u8; 72] =
            b"background_thread:true,dirty_decay_ms:1000,tcache_gc_incr_bytes:1048576\0";
    };
}

#[cfg(not(target_env = "msvc"))]
#[doc(hidden)]
pub use tikv_jemallocator::Jemalloc;
