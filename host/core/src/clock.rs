//! The service's clock: wall-clock time that a test can move forward, so
//! that due dates and expiries are tested without sleeping.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Now, as Unix milliseconds. Copies share one offset: moving one moves
/// every handler's.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    offset_ms: Arc<AtomicI64>,
}

impl Clock {
    /// Now, in the representation of every stored time.
    pub fn now_ms(&self) -> i64 {
        crate::db::now_ms() + self.offset_ms.load(Ordering::Relaxed)
    }

    /// Moves the clock forward by `by`. Only tests do; a running service's
    /// clock is the wall clock.
    pub fn advance(&self, by: Duration) {
        self.offset_ms
            .fetch_add(by.as_millis() as i64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_move_together() {
        let clock = Clock::default();
        let copy = clock.clone();
        let before = copy.now_ms();
        clock.advance(Duration::from_secs(86_400));
        assert!(copy.now_ms() - before >= 86_400_000);
    }
}
