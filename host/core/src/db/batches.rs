//! Sizing the transactions of a long write (a CSV swap, a prune) so that on
//! SQLite, where one writer holds the database at a time, each holds it for
//! about [`WriteBatches::TARGET`]: a login or a config save queued behind
//! it then waits that long, not the length of the whole write.

use std::time::Duration;

use super::Backend;

pub struct WriteBatches {
    rows: usize,
    min: usize,
    max: usize,
}

impl WriteBatches {
    /// How long one transaction of a long write should hold SQLite's writer.
    pub const TARGET: Duration = Duration::from_millis(20);

    /// Batches of `min` to `max` rows; PostgreSQL, which has no single
    /// writer, always takes `max`.
    pub fn new(backend: Backend, min: usize, max: usize) -> WriteBatches {
        let min = match backend {
            Backend::Sqlite => min,
            Backend::Postgres => max,
        };
        WriteBatches {
            rows: min,
            min,
            max,
        }
    }

    /// Rows for the next transaction.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Records that a transaction of `rows` rows took `took`, and sizes the
    /// next one to take about [`Self::TARGET`].
    pub fn record(&mut self, rows: usize, took: Duration) {
        if rows == 0 {
            return;
        }
        let per_row = took.as_secs_f64() / rows as f64;
        let fit = if per_row > 0.0 {
            (Self::TARGET.as_secs_f64() / per_row) as usize
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
    fn sqlite_batches_shrink_to_the_time_budget_and_grow_back() {
        let mut batches = WriteBatches::new(Backend::Sqlite, 100, 5000);
        assert_eq!(batches.rows(), 100);
        batches.record(100, Duration::from_millis(1));
        assert_eq!(batches.rows(), 200);
        batches.record(200, Duration::from_millis(200));
        assert_eq!(batches.rows(), 100);
        let mut postgres = WriteBatches::new(Backend::Postgres, 100, 5000);
        postgres.record(5000, Duration::from_secs(1));
        assert_eq!(postgres.rows(), 5000);
    }
}
