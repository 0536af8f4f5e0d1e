//! Shared parts of the benchmark programs.

use cairn::db::Db;
use sqlx::{Connection, Executor, PgConnection};

/// A fresh database of the named backend (`sqlite` or `postgres`), migrated.
/// PostgreSQL comes from `CAIRN_BENCH_POSTGRES_URL` (default: the local
/// server, user postgres).
pub async fn fresh_database(backend: &str) -> anyhow::Result<(Db, String)> {
    let url = match backend {
        "sqlite" => {
            let dir =
                std::env::temp_dir().join(format!("cairn-bench-{}", uuid::Uuid::new_v4().simple()));
            std::fs::create_dir_all(&dir)?;
            format!("sqlite://{}?mode=rwc", dir.join("bench.db").display())
        }
        "postgres" => {
            let admin = std::env::var("CAIRN_BENCH_POSTGRES_URL")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
            let name = format!("cairn_bench_{}", uuid::Uuid::new_v4().simple());
            let mut conn = PgConnection::connect(&admin).await?;
            conn.execute(format!("CREATE DATABASE {name}").as_str())
                .await?;
            let (base, _) = admin.rsplit_once('/').unwrap_or((&admin, ""));
            format!("{base}/{name}")
        }
        other => anyhow::bail!("unknown backend {other}; use sqlite or postgres"),
    };
    let connections = std::env::var("BENCH_CONNECTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let db = Db::connect(&url, connections).await?;
    db.migrate().await?;
    Ok((db, url))
}

/// Removes a database made by [`fresh_database`].
pub async fn drop_database(db: Db, url: &str) {
    db.close().await;
    if let Some(path) = url.strip_prefix("sqlite://") {
        let file = path.split('?').next().unwrap_or(path);
        if let Some(dir) = std::path::Path::new(file).parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    } else if let Some((base, name)) = url.rsplit_once('/') {
        let admin = std::env::var("CAIRN_BENCH_POSTGRES_URL")
            .unwrap_or_else(|_| format!("{base}/postgres"));
        if let Ok(mut conn) = PgConnection::connect(&admin).await {
            let _ = conn
                .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                .await;
        }
    }
}

/// Peak resident memory of this process so far, in MiB (Linux).
pub fn peak_rss_mib() -> f64 {
    peak_rss_mib_of("self")
}

/// Peak resident memory of process `pid` (or `self`) so far, in MiB (Linux).
pub fn peak_rss_mib_of(pid: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// The `p` quantile (0 to 1) of `samples`, in milliseconds (nearest rank).
pub fn percentile_ms(samples: &mut [std::time::Duration], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort();
    let index = ((samples.len() as f64 * p).ceil() as usize).clamp(1, samples.len()) - 1;
    samples[index].as_secs_f64() * 1000.0
}
