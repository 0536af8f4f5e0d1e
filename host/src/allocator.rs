//! The memory allocator of every binary linking the host (the service, its
//! benchmarks and tests): mimalloc rather than the system's. The rollup
//! folds a million rows into maps of small strings, and glibc's malloc and
//! free were a fifth of its profile; with mimalloc the whole rollup of
//! 1,000,000 rows took 4.2 s instead of 5.6 s.
//!
//! Mimalloc as the global allocator of every binary linking the host, told
//! at service start to return memory freed in bulk at once (the rollup's
//! peak memory).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay`: its position in the option enum of the
/// mimalloc that libmimalloc-sys 0.1.49 bundles (v3, `mimalloc.h`), which
/// the bindings do not name. Check it when that crate is upgraded; the
/// rollup's memory figure in `bench inventory` shows whether it acts.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Returns memory freed in bulk to the system at once instead of 10 ms
/// later: a rollup frees and allocates in large waves, and with the delay
/// the pages of one wave were still resident when the next one peaked
/// (peak during a rollup of 1,000,000 rows 339 MiB; 290 to 297 MiB
/// without it, and no slower).
pub fn release_freed_memory_at_once() {
    // SAFETY: setting an option is a plain store mimalloc allows at any time.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) };
}
