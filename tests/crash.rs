//! A real server process is killed with SIGKILL in the middle of a
//! checkpointed job; a second process resumes it after the lease expires.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairn::auth::TenantId;
use cairn::db::Db;
use cairn_tests::{backend_tests, batches, Backend, PostgresDatabase};
use serde_json::json;

backend_tests!(killed_process_job_resumes_from_its_checkpoint);

fn spawn_server(database_url: &str, data_dir: &std::path::Path, log: &str) -> Child {
    let log = std::fs::File::create(data_dir.join(log)).expect("log file");
    Command::new(env!("CARGO_BIN_EXE_cairn-test-server"))
        .env("CAIRN_DATABASE_URL", database_url)
        .env("CAIRN_DATA_DIR", data_dir)
        .env("CAIRN_LISTEN", "127.0.0.1:0")
        .env("CAIRN_JOB_WORKERS", "2")
        .env("CAIRN_JOB_LEASE_SECS", "3")
        .env("CAIRN_JOB_HEARTBEAT_SECS", "1")
        .env("CAIRN_JOB_REAPER_INTERVAL_SECS", "1")
        .env("CAIRN_JOB_POLL_INTERVAL_MS", "100")
        .env("CAIRN_JOB_RETRY_BACKOFF_MS", "0")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start cairn-test-server")
}

async fn wait_until(what: &str, timeout: Duration, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn checkpoint_next(db: &Db, job_id: &str) -> i64 {
    let checkpoint: Option<Option<String>> =
        sqlx::query_scalar("SELECT checkpoint FROM jobs WHERE id = $1")
            .bind(job_id)
            .fetch_optional(&db.pool)
            .await
            .unwrap_or(None);
    checkpoint
        .flatten()
        .and_then(|c| serde_json::from_str::<serde_json::Value>(&c).ok())
        .and_then(|c| c["next"].as_i64())
        .unwrap_or(0)
}

async fn killed_process_job_resumes_from_its_checkpoint(backend: Backend) {
    let data_dir =
        std::env::temp_dir().join(format!("cairn-crash-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&data_dir).unwrap();
    let postgres = match backend {
        Backend::Postgres => match PostgresDatabase::create().await {
            Some(db) => Some(db),
            None => return,
        },
        Backend::Sqlite => None,
    };
    let url = match &postgres {
        Some(db) => db.url.clone(),
        None => format!("sqlite://{}?mode=rwc", data_dir.join("cairn.db").display()),
    };

    let mut first = spawn_server(&url, &data_dir, "first.log");
    let db = Db::connect(&url, 2).await.expect("connect");
    wait_until(
        "the first server to migrate",
        Duration::from_secs(30),
        async || {
            sqlx::query("SELECT COUNT(*) FROM jobs")
                .execute(&db.pool)
                .await
                .is_ok()
        },
    )
    .await;
    let tenant = TenantId(uuid::Uuid::now_v7().to_string());
    sqlx::query("INSERT INTO tenants (id, name, timezone, created_at, updated_at) VALUES ($1, 't', 'UTC', 0, 0)")
        .bind(tenant.as_str())
        .execute(&db.pool)
        .await
        .unwrap();
    let total = 30;
    let job_id = cairn::jobs::enqueue(
        &db,
        &tenant,
        batches::KIND,
        &json!({"batches": total, "delay_ms": 100}),
    )
    .await
    .unwrap()
    .job_id;

    wait_until(
        "a few batches in the first process",
        Duration::from_secs(30),
        async || checkpoint_next(&db, &job_id).await >= 5,
    )
    .await;
    first.kill().expect("SIGKILL the first server");
    first.wait().unwrap();
    let applied_before: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM test_batches_applied WHERE job_id = $1")
            .bind(&job_id)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert!(applied_before < total, "killed mid-job");
    let status: String = sqlx::query_scalar("SELECT status FROM jobs WHERE id = $1")
        .bind(&job_id)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(status, "running", "the dead process still holds the lease");

    let mut second = spawn_server(&url, &data_dir, "second.log");
    wait_until(
        "the second process to finish the job",
        Duration::from_secs(60),
        async || {
            let status: String = sqlx::query_scalar("SELECT status FROM jobs WHERE id = $1")
                .bind(&job_id)
                .fetch_one(&db.pool)
                .await
                .unwrap();
            status == "success"
        },
    )
    .await;
    second.kill().ok();
    second.wait().ok();

    let applied: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT batch, attempt FROM test_batches_applied WHERE job_id = $1 ORDER BY batch",
    )
    .bind(&job_id)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    let batches: Vec<i64> = applied.iter().map(|(b, _)| *b).collect();
    assert_eq!(
        batches,
        (0..total).collect::<Vec<_>>(),
        "every batch exactly once"
    );
    // The first attempt applied exactly the batches before its last
    // checkpoint; the second started from there, not from zero.
    assert_eq!(
        applied.iter().filter(|(_, attempt)| *attempt == 1).count() as i64,
        applied_before
    );
    assert!(applied
        .iter()
        .skip(applied_before as usize)
        .all(|(_, attempt)| *attempt == 2));
    let attempts: i64 = sqlx::query_scalar("SELECT attempts FROM jobs WHERE id = $1")
        .bind(&job_id)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(attempts, 2);

    db.pool.close().await;
    if let Some(pg) = postgres {
        pg.drop().await;
    }
    let _ = std::fs::remove_dir_all(&data_dir);
}
