//! Every attempt to load a CVE source, kept so that an operator can see
//! why the CVE store is empty (`GET /vulnerabilities/sources`) and so that
//! a source that keeps failing (no internet) is tried again after a
//! growing pause instead of every minute, and logged once per change.

use std::time::Duration;

use sqlx::Row;

use cairn_core::db::{now_ms, Db};

/// The pause after the first failure; doubled after each further one.
const FIRST_PAUSE: Duration = Duration::from_secs(60);

/// Where a source's loading stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempts {
    pub last_attempt_at: i64,
    pub last_success_at: Option<i64>,
    /// The last failure as a sentence, while the source is failing.
    pub last_error: Option<String>,
    /// Failures in a row (0 once a load succeeds).
    pub failures: i64,
    pub next_attempt_at: i64,
}

pub async fn of(db: &Db, source: &str) -> sqlx::Result<Option<Attempts>> {
    let row = sqlx::query(
        "SELECT last_attempt_at, last_success_at, last_error, failures, next_attempt_at \
         FROM vuln_source_attempts WHERE source = $1",
    )
    .bind(source)
    .fetch_optional(&db.pool)
    .await?;
    row.map(|r| -> sqlx::Result<Attempts> {
        Ok(Attempts {
            last_attempt_at: r.try_get("last_attempt_at")?,
            last_success_at: r.try_get("last_success_at")?,
            last_error: r.try_get("last_error")?,
            failures: r.try_get("failures")?,
            next_attempt_at: r.try_get("next_attempt_at")?,
        })
    })
    .transpose()
}

/// The pause before the attempt after `failures` failures in a row: one
/// minute, doubled each time, never longer than the source's interval.
pub fn pause_after(failures: i64, interval: Duration) -> Duration {
    let doubled = FIRST_PAUSE.saturating_mul(1 << (failures - 1).clamp(0, 20) as u32);
    doubled.min(interval.max(FIRST_PAUSE))
}

/// Records a successful load; the next one is due after `interval`.
/// Returns the failures in a row that came before it.
pub async fn succeeded(db: &Db, source: &str, interval: Duration) -> sqlx::Result<i64> {
    let before = of(db, source).await?.map(|a| a.failures).unwrap_or(0);
    let now = now_ms();
    let attempts = Attempts {
        last_attempt_at: now,
        last_success_at: Some(now),
        last_error: None,
        failures: 0,
        next_attempt_at: now + interval.as_millis() as i64,
    };
    store(db, source, &attempts).await?;
    Ok(before)
}

/// Records files of the source imported by hand (`cairn vuln import`): a
/// success now; when the next online attempt comes stays as it was (due
/// at once for a source never tried).
pub async fn imported(db: &Db, source: &str) -> sqlx::Result<()> {
    let now = now_ms();
    let next_attempt_at = of(db, source)
        .await?
        .map(|a| a.next_attempt_at)
        .unwrap_or(now);
    let attempts = Attempts {
        last_attempt_at: now,
        last_success_at: Some(now),
        last_error: None,
        failures: 0,
        next_attempt_at,
    };
    store(db, source, &attempts).await
}

/// Records a failed load with its reason; the next attempt waits
/// [`pause_after`] the failures so far. Returns the failures in a row,
/// this one included.
pub async fn failed(
    db: &Db,
    source: &str,
    error: &str,
    interval: Duration,
) -> sqlx::Result<(i64, Duration)> {
    let previous = of(db, source).await?;
    let failures = previous.as_ref().map(|a| a.failures).unwrap_or(0) + 1;
    let pause = pause_after(failures, interval);
    let now = now_ms();
    let attempts = Attempts {
        last_attempt_at: now,
        last_success_at: previous.and_then(|a| a.last_success_at),
        last_error: Some(error.to_string()),
        failures,
        next_attempt_at: now + pause.as_millis() as i64,
    };
    store(db, source, &attempts).await?;
    Ok((failures, pause))
}

/// Writes where `source` stands, whole.
async fn store(db: &Db, source: &str, attempts: &Attempts) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO vuln_source_attempts \
         (source, last_attempt_at, last_success_at, last_error, failures, next_attempt_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (source) DO UPDATE SET \
         last_attempt_at = excluded.last_attempt_at, last_success_at = excluded.last_success_at, \
         last_error = excluded.last_error, failures = excluded.failures, \
         next_attempt_at = excluded.next_attempt_at",
    )
    .bind(source)
    .bind(attempts.last_attempt_at)
    .bind(attempts.last_success_at)
    .bind(attempts.last_error.as_deref())
    .bind(attempts.failures)
    .bind(attempts.next_attempt_at)
    .execute(&db.pool)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_up_to_the_interval() {
        let hour = Duration::from_secs(3600);
        let cases = [
            (1, hour, 60),
            (2, hour, 120),
            (3, hour, 240),
            (6, hour, 1920),
            (7, hour, 3600),
            (40, hour, 3600),
            // An interval shorter than a minute still waits a minute.
            (1, Duration::from_secs(10), 60),
        ];
        for (failures, interval, secs) in cases {
            assert_eq!(
                pause_after(failures, interval),
                Duration::from_secs(secs),
                "{failures} failures"
            );
        }
    }
}
