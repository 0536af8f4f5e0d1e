//! The runtime jobs run on, apart from the one serving requests.
//!
//! A job computes in long stretches (a CSV upload parsed and mapped, a sync
//! page prepared, a rollup folded); on the serving runtime those stretches
//! take the same threads, and the same share of the cores, as the requests
//! waiting beside them, and every request's latency grows with them. Here
//! jobs run on threads of their own whose scheduling priority is lowered
//! (`nice` 10 on Linux): while requests want the cores, the kernel gives
//! them most of it, and a job still runs in every gap, so nothing starves.
//! What a job hands to the database (its SQLite connection's thread, a
//! PostgreSQL server process) runs at the usual priority.

use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

/// How much lower than the serving threads a job's threads are scheduled:
/// at 10, a busy job thread gets about a tenth of a core a busy serving
/// thread leaves it.
const NICENESS: i32 = 10;

/// The jobs' runtime, started on first use and kept for the process's
/// life; the current runtime when it cannot be started.
pub fn handle() -> Handle {
    static RUNTIME: OnceLock<Option<Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
            Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("cairn-job")
                .enable_all()
                .on_thread_start(lower_priority)
                .build()
                .map_err(|err| tracing::warn!(error = %err, "jobs run beside requests: their runtime did not start"))
                .ok()
        })
        .as_ref()
        .map_or_else(Handle::current, |runtime| runtime.handle().clone())
}

/// Lowers the calling thread's scheduling priority (Linux keeps one per
/// thread); elsewhere jobs run at the usual priority.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system calls on the calling thread's own id; a
        // refusal leaves the priority as it was.
        unsafe {
            let thread = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, thread, NICENESS);
        }
    }
}
