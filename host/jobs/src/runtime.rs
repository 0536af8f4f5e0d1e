//! The job runtime: the threads jobs run on, apart from the ones that
//! answer requests. It has fewer threads than the machine has cores (by
//! default one fewer, at least one), and on Linux they run at a lower
//! priority (nice 10 by default, `job_niceness`), so a parse, a sync or a
//! rollup never takes every core from the requests: the scheduler gives
//! the request threads the core first, and jobs what is left.
//!
//! One per process, made by the first queue that starts a pool (the tests
//! start many services in one process; they share it).

use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

/// The process's job runtime, made on first use with `threads` workers
/// (0: one fewer than the cores, at least one) running `niceness` below
/// the request threads (0 to 19).
pub fn handle(threads: usize, niceness: i32) -> Handle {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let threads = match threads {
                0 => default_threads(),
                n => n,
            };
            Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("cairn-jobs")
                .on_thread_start(move || lower_priority(niceness.clamp(0, 19)))
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("the job runtime cannot start: {e}"))
        })
        .handle()
        .clone()
}

/// One fewer than the cores this process may use, at least one.
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(1)
        .max(1)
}

/// Lowers the calling thread's priority by `niceness` from where it
/// stands (at most to 19); threads it starts (a database connection's
/// worker, a blocking task) inherit it. Relative, not absolute: a service
/// started at nice 19 (a test's or a batch's) keeps its jobs at 19 instead
/// of raising them to 10 above its own requests, which a process allowed
/// to raise its priority (root) would do.
fn lower_priority(niceness: i32) {
    if niceness == 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let (tid, current) = this_thread();
        // SAFETY: `setpriority` takes and returns plain integers; on Linux
        // a thread's nice value is its own, so this changes only the
        // calling thread. A refusal (a sandbox forbidding it) is harmless.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, tid, (current + niceness).min(19));
        }
    }
}

/// The calling thread's id and nice value.
#[cfg(target_os = "linux")]
fn this_thread() -> (libc::id_t, i32) {
    // SAFETY: `gettid` and `getpriority` take and return plain integers.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        (tid, libc::getpriority(libc::PRIO_PROCESS, tid))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::{lower_priority, this_thread};

    /// On a thread of its own: where the thread starts (the process's
    /// niceness, then `start`), and where `lower_priority(by)` leaves it.
    fn lowered(start: i32, by: i32) -> (i32, i32) {
        std::thread::spawn(move || {
            if start != 0 {
                lower_priority(start);
            }
            let (_, before) = this_thread();
            lower_priority(by);
            (before, this_thread().1)
        })
        .join()
        .expect("the thread ran")
    }

    #[test]
    fn job_threads_sit_below_where_the_process_stands() {
        // (thread lowered first by, then by the job runtime's niceness)
        for (start, by) in [(0, 10), (5, 10), (12, 10), (19, 10), (3, 0)] {
            let (before, after) = lowered(start, by);
            assert_eq!(
                after,
                (before + by).min(19),
                "from {before}, lowered by {by}"
            );
            assert!(after >= before, "from {before}, raised to {after}");
        }
    }
}
