//! Sizing the transactions of a long write (a CSV swap, a prune) by the
//! time each takes. On SQLite, where one writer holds the database at a
//! time, each holds it for about 20 ms: a login or a config save queued
//! behind it then waits that long, not the length of the whole write. On
//! PostgreSQL each takes about 100 ms: a job's write turns yield to
//! requests between them (`Db::paced`), which needs turns shorter than the
//! longest wait.

use std::time::Duration;

use super::Backend;

pub struct WriteBatches {
    rows: usize,
    min: usize,
    max: usize,
    target: Duration,
}

impl WriteBatches {
    /// Batches of `min` to `max` rows, starting at `min` on SQLite and at
    /// `max` on PostgreSQL (a transaction there costs a commit's flush).
    pub fn new(backend: Backend, min: usize, max: usize) -> WriteBatches {
        WriteBatches {
            rows: match backend {
                Backend::Sqlite => min,
                Backend::Postgres => max,
            },
            min,
            max,
            target: Self::target(backend),
        }
    }

    /// How long one transaction of a long write should take.
    pub fn target(backend: Backend) -> Duration {
        match backend {
            Backend::Sqlite => Duration::from_millis(20),
            Backend::Postgres => Duration::from_millis(100),
        }
    }

    /// Rows for the next transaction.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Records that a transaction of `rows` rows took `took`, and sizes the
    /// next one to take about [`Self::target`].
    pub fn record(&mut self, rows: usize, took: Duration) {
        if rows == 0 {
            return;
        }
        let per_row = took.as_secs_f64() / rows as f64;
        let fit = if per_row > 0.0 {
            (self.target.as_secs_f64() / per_row) as usize
        } else {
            self.max
        };
        // Grow gently: one fast batch (a cache-warm page) says little.
        self.rows = fit.min(self.rows * 2).clamp(self.min, self.max);
    }
}

/// Runs `statement`, a DELETE of at most `$4` rows of source `$2` of
/// tenant `$1` not stamped `$3`, in transactions sized by
/// [`WriteBatches`] (from 200 rows up to `max`), each in its own write
/// turn, until a batch deletes fewer than it may. Returns the rows deleted.
pub async fn delete_unstamped_in_batches(
    db: &super::Db,
    statement: &str,
    (tenant, source, stamp): (&str, &str, &str),
    max: usize,
) -> sqlx::Result<u64> {
    let mut deleted = 0;
    let mut sizes = WriteBatches::new(db.backend, 200, max);
    loop {
        let _turn = db.write_turn().await;
        let started = std::time::Instant::now();
        let rows = sizes.rows();
        let batch = sqlx::query(statement)
            .bind(tenant)
            .bind(source)
            .bind(stamp)
            .bind(rows as i64)
            .execute(&db.pool)
            .await?
            .rows_affected();
        sizes.record(batch as usize, started.elapsed());
        deleted += batch;
        if batch < rows as u64 {
            return Ok(deleted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_shrink_to_the_time_budget_and_grow_back() {
        let mut batches = WriteBatches::new(Backend::Sqlite, 100, 5000);
        assert_eq!(batches.rows(), 100);
        batches.record(100, Duration::from_millis(1));
        assert_eq!(batches.rows(), 200);
        batches.record(200, Duration::from_millis(200));
        assert_eq!(batches.rows(), 100);
        // PostgreSQL starts large; a slow batch (a loaded server) shrinks
        // the next to about 100 ms, so paced turns stay short.
        let mut postgres = WriteBatches::new(Backend::Postgres, 100, 5000);
        assert_eq!(postgres.rows(), 5000);
        postgres.record(5000, Duration::from_secs(1));
        assert_eq!(postgres.rows(), 500);
        postgres.record(500, Duration::from_millis(10));
        assert_eq!(postgres.rows(), 1000);
    }
}
