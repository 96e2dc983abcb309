//! The serving binary's allocator options (`serving_allocator!`) are the
//! ones in effect: jemalloc prints them when asked for its statistics.

mod common;

#[test]
fn the_binary_runs_jemalloc_with_its_compiled_in_options() {
    let out = std::process::Command::new(common::BIN)
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stats = String::from_utf8_lossy(&out.stderr);
    let option = |name: &str| {
        stats
            .lines()
            .find_map(|l| l.trim().strip_prefix(&format!("opt.{name}: ")))
            .map(|v| v.split_whitespace().next().unwrap_or("").to_string())
            .unwrap_or_else(|| panic!("opt.{name} not in jemalloc's statistics:\n{stats}"))
    };
    assert_eq!(option("background_thread"), "true");
    assert_eq!(option("dirty_decay_ms"), "1000");
    assert_eq!(option("tcache_gc_incr_bytes"), "1048576");
}
