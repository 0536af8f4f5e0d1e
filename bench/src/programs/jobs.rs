//! Enqueue, claim and complete 10,000 no-op jobs with 4 workers; prints jobs/s.
//! Usage: cairn-bench jobs sqlite|postgres

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use cairn_core::ids::TenantId;
use cairn_jobs::{JobContext, JobFailure, JobHandler, Queue, QueueTiming, Registry};
use serde_json::json;

const JOBS: usize = 10_000;
const TENANTS: usize = 100;
const KINDS: usize = 100;
const WORKERS: usize = 4;

struct NoOp;

#[async_trait]
impl JobHandler for NoOp {
    async fn run(&self, _ctx: &JobContext) -> Result<(), JobFailure> {
        Ok(())
    }
}

pub async fn main() -> anyhow::Result<()> {
    let backend = crate::args().nth(1).unwrap_or_else(|| "sqlite".into());
    let (db, url) = cairn_bench::fresh_database(&backend).await?;

    let mut tenants = vec![];
    for i in 0..TENANTS {
        let id = uuid::Uuid::now_v7().to_string();
        sqlx::query("INSERT INTO tenants (id, name, timezone, created_at, updated_at) VALUES ($1, $2, 'UTC', 0, 0)")
            .bind(&id)
            .bind(format!("bench {i}"))
            .execute(&db.pool)
            .await?;
        tenants.push(TenantId(id));
    }
    // Dedupe allows one queued job per (tenant, kind): 100 x 100 pairs hold
    // all 10,000 at once.
    let mut registry = Registry::default();
    let kinds: Vec<String> = (0..KINDS).map(|k| format!("noop_{k}")).collect();
    for kind in &kinds {
        registry.register(kind, NoOp, Duration::from_secs(60));
    }
    let timing = QueueTiming {
        lease: Duration::from_secs(60),
        heartbeat: Duration::from_secs(15),
        reaper_interval: Duration::from_secs(60),
        poll_interval: Duration::from_millis(1000),
        retry_backoff: Duration::from_secs(5),
        retention: Duration::from_secs(86_400),
        history_keep: 20,
        stop_grace: Duration::from_secs(10),
    };
    let queue = Arc::new(Queue::new(db.clone(), registry, timing));

    let started = Instant::now();
    let mut enqueuers = tokio::task::JoinSet::new();
    for part in 0..WORKERS {
        let queue = queue.clone();
        let tenants = tenants.clone();
        let kinds = kinds.clone();
        enqueuers.spawn(async move {
            for n in (part..JOBS).step_by(WORKERS) {
                let tenant = &tenants[n / KINDS];
                let kind = &kinds[n % KINDS];
                let enqueued = queue.enqueue(tenant, kind, &json!({"n": n})).await?;
                anyhow::ensure!(enqueued.created, "job {n} was deduplicated");
            }
            Ok::<(), anyhow::Error>(())
        });
    }
    while let Some(result) = enqueuers.join_next().await {
        result??;
    }
    let enqueue_secs = started.elapsed().as_secs_f64();
    // What autovacuum does within a minute of a bulk insert on PostgreSQL;
    // measuring claims against the stale statistics of an empty table would
    // measure the planner's cold start, not the queue.
    sqlx::query("ANALYZE jobs").execute(&db.pool).await?;

    let shutdown = tokio_util::sync::CancellationToken::new();
    let run_started = Instant::now();
    let pool = queue.spawn_pool(WORKERS, shutdown.clone());
    loop {
        let done: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE status = 'success'")
            .fetch_one(&db.pool)
            .await?;
        if done as usize == JOBS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let run_secs = run_started.elapsed().as_secs_f64();
    shutdown.cancel();
    pool.await?;
    let failed: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE status <> 'success'")
        .fetch_one(&db.pool)
        .await?;

    println!("cairn job queue benchmark: {backend}, {JOBS} no-op jobs, {WORKERS} workers");
    println!(
        "  enqueue            {:>8.0} jobs/s  ({enqueue_secs:.2} s)",
        JOBS as f64 / enqueue_secs
    );
    println!(
        "  claim + complete   {:>8.0} jobs/s  ({run_secs:.2} s)",
        JOBS as f64 / run_secs
    );
    println!(
        "  end to end         {:>8.0} jobs/s  ({:.2} s)",
        JOBS as f64 / (enqueue_secs + run_secs),
        enqueue_secs + run_secs
    );
    println!(
        "  not successful: {failed}; peak memory {:.0} MiB",
        cairn_bench::peak_rss_mib()
    );
    cairn_bench::drop_database(db, &url).await;
    Ok(())
}
