//! The durable job queue through its public functions (`storage`, `Queue`)
//! on a real database: enqueue, claim, fences, the reaper, pruning and the
//! runs of one kind. What the HTTP API says of jobs is in
//! `tests/platform/jobs.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairn_core::db::fence::WriteFence;
use cairn_core::ids::TenantId;
use cairn_jobs::storage::{self, Fence};
use cairn_jobs::{JobFailure, JobStatus, Queue, QueueTiming, Registry, RunOutcome};
use cairn_tests::jobs::registry_with;
use cairn_tests::{backend_tests, wait_for, Backend, TestDb};
use serde_json::json;

backend_tests!(
    concurrent_enqueues_make_one_job_per_tenant_and_kind,
    eight_workers_run_each_of_500_jobs_once,
    failing_handler_retries_then_errors_with_its_message,
    reaper_requeues_or_fails_expired_leases,
    zombie_writes_change_nothing_after_reclaim,
    jobs_of_one_kind_never_overlap,
    pruning_keeps_recent_history,
    a_handler_computing_past_its_lease_keeps_it,
    a_new_job_wakes_another_process_at_once,
    a_request_during_a_run_gets_a_run_after_it,
    a_run_sent_back_gives_way_to_the_job_queued_behind_it,
    a_shared_schedule_runs_in_one_process_per_period,
    a_sweep_queues_no_job_behind_a_live_one,
    a_queue_runs_nothing_until_its_handlers_are_installed,
    a_stopping_process_hands_back_the_jobs_it_still_holds,
    a_job_needing_a_store_is_still_the_one_queued_for_its_kind,
);

/// A process that stops hands back every job still running under its
/// worker id (a run whose own hand-back failed, or one it stopped waiting
/// for): queued again, the attempt not counted. Another process's running
/// job is left alone.
async fn a_stopping_process_hands_back_the_jobs_it_still_holds(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let db = &test_db.db;
    let tenant = test_db.tenant("t").await;
    let queue = queue(&test_db, Registry::default());
    let ours = enqueue_and_claim(db, &tenant, "left_running", &queue.worker_id).await;
    let theirs = enqueue_and_claim(db, &tenant, "still_running", "another-process").await;

    assert_eq!(queue.hand_back_held(&queue.db).await.unwrap(), 1);
    let ours = job(&test_db, &tenant, &ours.job_id).await;
    assert_eq!(ours.status(), JobStatus::Queued);
    assert_eq!(ours.attempts, 0, "a hand-back costs no attempt");
    let theirs = job(&test_db, &tenant, &theirs.job_id).await;
    assert_eq!(
        theirs.status(),
        JobStatus::Running,
        "not this process's job"
    );
    assert_eq!(
        queue.hand_back_held(&queue.db).await.unwrap(),
        0,
        "nothing left"
    );
    test_db.finish().await;
}

/// The areas' handlers reach the queue once (`Queue::install`, from
/// `cairn_platform::area::assemble`), after the state that holds it is
/// built: before that it claims nothing, a kind two areas define is
/// refused by name, and a second install is refused.
async fn a_queue_runs_nothing_until_its_handlers_are_installed(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("t").await;
    let id = storage::enqueue(&test_db.db, &tenant, "area_job", &json!({}))
        .await
        .unwrap()
        .job_id;
    let queue = Arc::new(Queue::without_handlers(test_db.db.clone(), fast()));
    assert!(queue.run_one().await.unwrap().is_none(), "no handlers yet");
    assert_eq!(
        job(&test_db, &tenant, &id).await.status(),
        JobStatus::Queued
    );

    let ok = |_ctx: cairn_jobs::JobContext| async { Ok::<(), JobFailure>(()) };
    let mut handlers = registry_with(&["area_job"], Duration::from_secs(60), ok);
    let twice = handlers.merge(registry_with(&["area_job"], Duration::from_secs(60), ok));
    assert_eq!(
        twice.unwrap_err().to_string(),
        "two areas define the job kind area_job"
    );
    queue.install(handlers).unwrap();
    assert!(
        queue.install(Registry::default()).is_err(),
        "installed once"
    );
    let (ran, outcome) = queue.run_one().await.unwrap().expect("the job runs now");
    assert_eq!(ran, id);
    assert_eq!(outcome, RunOutcome::Recorded(JobStatus::Success));
    test_db.finish().await;
}

/// A sweep's enqueue (`enqueue_unless_live`) adds a job only when none of
/// its kind is queued or running for the tenant: a job queued behind a
/// running parse would only supersede it at the next shutdown.
async fn a_sweep_queues_no_job_behind_a_live_one(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let db = &test_db.db;
    let alpha = test_db.tenant("alpha").await;
    let beta = test_db.tenant("beta").await;
    let sweep = async |tenant: &TenantId| {
        storage::enqueue_unless_live(db, tenant, "csv_parse", &json!({}))
            .await
            .unwrap()
            .map(|enqueued| enqueued.job_id)
    };
    let first = sweep(&alpha).await.expect("no job yet: one is queued");
    assert_eq!(sweep(&alpha).await, None, "one queued: none more");
    let running = storage::claim(db, "w1", &kinds(&["csv_parse"]), 10, 60_000)
        .await
        .unwrap();
    assert_eq!(running[0].id, first);
    assert_eq!(sweep(&alpha).await, None, "one running: none behind it");
    assert!(sweep(&beta).await.is_some(), "another tenant has its own");
    let fence = Fence {
        job_id: first.clone(),
        worker_id: "w1".into(),
        attempts: running[0].attempts,
    };
    assert!(storage::finish_success(db, &fence).await.unwrap());
    let next = sweep(&alpha).await.expect("the run ended: a new job");
    assert_ne!(next, first);
    test_db.finish().await;
}

/// Processes ticking a shared schedule at once: one claims the period,
/// the others skip it; once the lease has run out (its holder died, or
/// the next period came) another may claim it. Schedules are separate.
async fn a_shared_schedule_runs_in_one_process_per_period(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let db = &test_db.db;
    let claim = async |name: &str, holder: &str| {
        storage::claim_schedule(db, name, holder, 60_000)
            .await
            .unwrap()
    };
    let mut claims = tokio::task::JoinSet::new();
    for holder in ["a", "b", "c", "d"] {
        let db = db.clone();
        claims.spawn(async move {
            storage::claim_schedule(&db, "news refresh", holder, 60_000)
                .await
                .unwrap()
        });
    }
    let won = claims
        .join_all()
        .await
        .into_iter()
        .filter(|won| *won)
        .count();
    assert_eq!(
        won, 1,
        "one of four processes ticking at once runs the tick"
    );
    assert!(!claim("news refresh", "a").await && !claim("news refresh", "b").await);
    assert!(
        claim("report retention", "b").await,
        "each schedule has its own lease"
    );

    sqlx::query("UPDATE schedule_leases SET lease_until = 0 WHERE name = 'news refresh'")
        .execute(&db.pool)
        .await
        .unwrap();
    assert!(
        claim("news refresh", "c").await,
        "a lease that ran out is claimed again"
    );
    assert!(!claim("news refresh", "a").await);
    test_db.finish().await;
}

/// The queue's timing with short leases and polls, as the service would
/// have with `job_heartbeat_secs = 1`, `job_lease_secs = 3`,
/// `job_poll_interval_ms = 50` and no retry backoff.
fn fast() -> QueueTiming {
    let settings = cairn_core::settings::Settings {
        job_heartbeat_secs: 1,
        job_lease_secs: 3,
        job_reaper_interval_secs: 1,
        job_poll_interval_ms: 50,
        job_retry_backoff_ms: 0,
        ..Default::default()
    };
    QueueTiming::from_settings(&settings)
}

/// A queue of `registry`'s kinds on the test database, with no worker.
fn queue(test_db: &TestDb, registry: Registry) -> Arc<Queue> {
    Arc::new(Queue::new(test_db.db.clone(), registry, fast()))
}

/// `workers` workers running `queue`'s jobs until `stop`.
struct Pool {
    stop: tokio_util::sync::CancellationToken,
    handle: tokio::task::JoinHandle<()>,
}

impl Pool {
    fn spawn(queue: &Arc<Queue>, workers: usize) -> Pool {
        let stop = tokio_util::sync::CancellationToken::new();
        let handle = queue.spawn_pool(workers, stop.clone());
        Pool { stop, handle }
    }

    async fn stop(self) {
        self.stop.cancel();
        self.handle.await.unwrap();
    }
}

async fn job(test_db: &TestDb, tenant: &TenantId, id: &str) -> storage::JobRow {
    storage::job(&test_db.db, tenant, id)
        .await
        .unwrap()
        .expect("job exists")
}

async fn concurrent_enqueues_make_one_job_per_tenant_and_kind(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let alpha = test_db.tenant("alpha").await;
    let beta = test_db.tenant("beta").await;
    let db = test_db.db.clone();
    let attempts: Vec<_> = (0..8)
        .map(|i| {
            let db = db.clone();
            let tenant = if i % 4 == 3 {
                beta.clone()
            } else {
                alpha.clone()
            };
            tokio::spawn(async move {
                (
                    tenant.clone(),
                    storage::enqueue(&db, &tenant, "rmm_sync", &json!({"n": i}))
                        .await
                        .unwrap(),
                )
            })
        })
        .collect();
    let mut ids: HashMap<String, Vec<(String, bool)>> = HashMap::new();
    for attempt in attempts {
        let (tenant, enqueued) = attempt.await.unwrap();
        ids.entry(tenant.0)
            .or_default()
            .push((enqueued.job_id, enqueued.created));
    }
    for (tenant, results) in &ids {
        let first = &results[0].0;
        assert!(
            results.iter().all(|(id, _)| id == first),
            "{tenant}: every caller gets the one job's id"
        );
        assert_eq!(
            results.iter().filter(|(_, created)| *created).count(),
            1,
            "{tenant}: exactly one created"
        );
    }
    assert_ne!(
        ids[&alpha.0][0].0, ids[&beta.0][0].0,
        "tenants get their own jobs"
    );
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(count, 2);
    // Another kind for the same tenant is a separate job.
    let other = storage::enqueue(&db, &alpha, "mdm_sync", &json!({}))
        .await
        .unwrap();
    assert!(other.created);
    test_db.finish().await;
}

async fn eight_workers_run_each_of_500_jobs_once(backend: Backend) {
    let runs: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let kinds: Vec<String> = (0..100).map(|i| format!("count_{i}")).collect();
    let kind_refs: Vec<&str> = kinds.iter().map(String::as_str).collect();
    let counter = runs.clone();
    let registry = registry_with(&kind_refs, Duration::from_secs(60), move |ctx| {
        let counter = counter.clone();
        async move {
            *counter
                .lock()
                .unwrap()
                .entry(ctx.job_id().to_string())
                .or_default() += 1;
            Ok(())
        }
    });
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let one = queue(&test_db, registry.clone());
    let one_pool = Pool::spawn(&one, 4);
    // A second queue on the same database stands for a second process.
    let other = queue(&test_db, registry);
    let other_pool = Pool::spawn(&other, 4);

    let mut expected = vec![];
    for t in 0..5 {
        let tenant = test_db.tenant(&format!("t{t}")).await;
        for kind in &kinds {
            expected.push(
                storage::enqueue(&test_db.db, &tenant, kind, &json!({}))
                    .await
                    .unwrap()
                    .job_id,
            );
        }
    }
    assert_eq!(expected.len(), 500);
    let db = test_db.db.clone();
    wait_for(
        "500 jobs to succeed",
        Duration::from_secs(120),
        async || {
            let done: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE status = 'success'")
                    .fetch_one(&db.pool)
                    .await
                    .unwrap();
            done == 500
        },
    )
    .await;
    one_pool.stop().await;
    other_pool.stop().await;
    let runs = runs.lock().unwrap().clone();
    assert_eq!(runs.len(), 500);
    assert!(
        runs.values().all(|&n| n == 1),
        "a job ran more than once: {:?}",
        runs.iter().find(|(_, n)| **n != 1)
    );
    let workers: Vec<String> = sqlx::query_scalar("SELECT DISTINCT worker_id FROM jobs")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(workers.len(), 2, "both pools took part: {workers:?}");
    test_db.finish().await;
}

async fn failing_handler_retries_then_errors_with_its_message(backend: Backend) {
    let registry = registry_with(&["flaky"], Duration::from_secs(60), |_ctx| async {
        Err(JobFailure::Failed("upstream said no".into()))
    });
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("t").await;
    let id = storage::enqueue(&test_db.db, &tenant, "flaky", &json!({}))
        .await
        .unwrap()
        .job_id;
    let queue = queue(&test_db, registry);
    for attempt in 1..=3 {
        let (ran, outcome) = queue.run_one().await.unwrap().expect("a job to run");
        assert_eq!(ran, id);
        let row = job(&test_db, &tenant, &id).await;
        assert_eq!(row.attempts, attempt);
        assert_eq!(row.error.as_deref(), Some("upstream said no"));
        let expected = if attempt < 3 {
            JobStatus::Queued
        } else {
            JobStatus::Error
        };
        assert_eq!(row.status(), expected, "after attempt {attempt}");
        assert_eq!(outcome, RunOutcome::Recorded(expected));
    }
    assert!(
        queue.run_one().await.unwrap().is_none(),
        "an errored job is not claimed again"
    );
    assert!(job(&test_db, &tenant, &id).await.finished_at.is_some());
    test_db.finish().await;
}

fn kinds(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

async fn expire_lease(test_db: &TestDb, id: &str) {
    sqlx::query("UPDATE jobs SET lease_until = lease_until - 600000, heartbeat_at = heartbeat_at - 600000 WHERE id = $1")
        .bind(id)
        .execute(&test_db.db.pool)
        .await
        .unwrap();
}

/// Queues a job of `kind` and claims it as `worker`; the run's fence.
async fn enqueue_and_claim(
    db: &cairn_core::db::Db,
    tenant: &TenantId,
    kind: &str,
    worker: &str,
) -> Fence {
    let id = storage::enqueue(db, tenant, kind, &json!({}))
        .await
        .unwrap()
        .job_id;
    let claimed = storage::claim(db, worker, &kinds(&[kind]), 10, 60_000)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1, "the one {kind} job is claimed");
    assert_eq!(claimed[0].id, id);
    Fence {
        job_id: id,
        worker_id: worker.into(),
        attempts: claimed[0].attempts,
    }
}

async fn reaper_requeues_or_fails_expired_leases(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("t").await;
    let db = &test_db.db;
    let mut ids = vec![];
    for kind in ["retryable", "exhausted", "alive", "finished"] {
        ids.push(
            storage::enqueue(db, &tenant, kind, &json!({}))
                .await
                .unwrap()
                .job_id,
        );
    }
    let claimed = storage::claim(
        db,
        "worker-a",
        &kinds(&["retryable", "exhausted", "alive", "finished"]),
        10,
        60_000,
    )
    .await
    .unwrap();
    assert_eq!(claimed.len(), 4);
    let finished = Fence {
        job_id: ids[3].clone(),
        worker_id: "worker-a".into(),
        attempts: 1,
    };
    assert!(storage::finish_success(db, &finished).await.unwrap());
    sqlx::query("UPDATE jobs SET attempts = 3 WHERE id = $1")
        .bind(&ids[1])
        .execute(&db.pool)
        .await
        .unwrap();
    for id in [&ids[0], &ids[1], &ids[3]] {
        expire_lease(&test_db, id).await;
    }
    let reaped = storage::reap_expired(db).await.unwrap();
    assert_eq!(reaped, 2);
    let retryable = job(&test_db, &tenant, &ids[0]).await;
    assert_eq!(retryable.status(), JobStatus::Queued);
    assert_eq!(retryable.attempts, 1);
    let exhausted = job(&test_db, &tenant, &ids[1]).await;
    assert_eq!(exhausted.status(), JobStatus::Error);
    assert!(exhausted.error.unwrap().contains("lease expired"));
    assert_eq!(
        job(&test_db, &tenant, &ids[2]).await.status(),
        JobStatus::Running
    );
    assert_eq!(
        job(&test_db, &tenant, &ids[3]).await.status(),
        JobStatus::Success
    );
    // A second pass finds nothing more to do.
    assert_eq!(storage::reap_expired(db).await.unwrap(), 0);
    test_db.finish().await;
}

async fn zombie_writes_change_nothing_after_reclaim(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("t").await;
    let db = &test_db.db;
    let zombie = enqueue_and_claim(db, &tenant, "sync", "worker-a").await;
    let id = zombie.job_id.clone();
    expire_lease(&test_db, &id).await;
    storage::reap_expired(db).await.unwrap();
    let second = storage::claim(db, "worker-b", &kinds(&["sync"]), 1, 60_000)
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(second.attempts, 2);
    let owner = Fence {
        job_id: id.clone(),
        worker_id: "worker-b".into(),
        attempts: 2,
    };
    assert!(
        storage::set_progress(db, &owner, &json!({"phase": "b"}), 60_000)
            .await
            .unwrap()
    );

    assert_eq!(storage::heartbeat(db, &zombie, 60_000).await.unwrap(), None);
    assert!(
        !storage::set_progress(db, &zombie, &json!({"phase": "zombie"}), 60_000)
            .await
            .unwrap()
    );
    let mut tx = db.pool.begin().await.unwrap();
    assert!(
        !storage::set_checkpoint(&mut tx, db.backend, &zombie, &json!({"next": 99}), 60_000)
            .await
            .unwrap()
    );
    tx.rollback().await.unwrap();
    // The fence the areas' writes hold (`WriteFence`): the owner's holds,
    // the zombie's does not.
    let mut tx = db.pool.begin().await.unwrap();
    assert!(WriteFence::hold(&owner, &mut tx).await.unwrap());
    assert!(!WriteFence::hold(&zombie, &mut tx).await.unwrap());
    tx.rollback().await.unwrap();
    assert!(!storage::finish_success(db, &zombie).await.unwrap());
    assert_eq!(
        storage::finish_failure(db, &zombie, "zombie", 0, true)
            .await
            .unwrap(),
        None
    );
    assert!(!storage::finish_canceled(db, &zombie).await.unwrap());
    assert!(!storage::release(db, &zombie).await.unwrap());

    let row = job(&test_db, &tenant, &id).await;
    assert_eq!(row.status(), JobStatus::Running);
    assert_eq!(row.worker_id.as_deref(), Some("worker-b"));
    assert_eq!(row.progress, json!({"phase": "b"}).to_string());
    assert!(row.checkpoint.is_none());
    assert!(row.error.is_none());

    // A batch of successes records only the runs whose fence holds: the
    // zombie's stale attempt, beside a live run of its own worker and the
    // owner's, changes nothing.
    let live = enqueue_and_claim(db, &tenant, "parse", "worker-a").await;
    let other = live.job_id.clone();
    let recorded = storage::finish_successes(db, &[&zombie, &live])
        .await
        .unwrap();
    assert_eq!(recorded, [other.clone()].into_iter().collect());
    assert_eq!(
        job(&test_db, &tenant, &id).await.status(),
        JobStatus::Running
    );
    assert_eq!(
        job(&test_db, &tenant, &other).await.status(),
        JobStatus::Success
    );
    assert_eq!(
        storage::finish_successes(db, &[&owner]).await.unwrap(),
        [id.clone()].into_iter().collect()
    );
    assert_eq!(
        job(&test_db, &tenant, &id).await.status(),
        JobStatus::Success
    );
    test_db.finish().await;
}

async fn jobs_of_one_kind_never_overlap(backend: Backend) {
    let spans: Arc<Mutex<Vec<(Instant, Instant)>>> = Arc::default();
    let recorder = spans.clone();
    let registry = registry_with(&["exclusive"], Duration::from_secs(60), move |_ctx| {
        let recorder = recorder.clone();
        async move {
            let start = Instant::now();
            tokio::time::sleep(Duration::from_millis(40)).await;
            recorder.lock().unwrap().push((start, Instant::now()));
            Ok(())
        }
    });
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("t").await;
    let queue = queue(&test_db, registry);
    let pool = Pool::spawn(&queue, 8);
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        queue
            .enqueue(&tenant, "exclusive", &json!({}))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let db = test_db.db.clone();
    wait_for("the last run to end", Duration::from_secs(10), async || {
        let active: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')")
                .fetch_one(&db.pool)
                .await
                .unwrap();
        active == 0
    })
    .await;
    pool.stop().await;
    let mut spans = spans.lock().unwrap().clone();
    assert!(spans.len() >= 5, "only {} runs", spans.len());
    spans.sort();
    for pair in spans.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "two runs of one kind overlapped");
    }
    test_db.finish().await;
}

async fn pruning_keeps_recent_history(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("t").await;
    let db = &test_db.db;
    let old = chrono::Utc::now().timestamp_millis() - 30 * 86_400_000;
    for i in 0..30i64 {
        sqlx::query(
            "INSERT INTO jobs (id, tenant_id, kind, args, status, progress, run_after, created_at, finished_at) \
             VALUES ($1, $2, 'rmm_sync', '{}', 'success', '{}', 0, $3, $3)",
        )
        .bind(format!("old-{i:02}"))
        .bind(tenant.as_str())
        .bind(old + i)
        .execute(&db.pool)
        .await
        .unwrap();
    }
    let recent = storage::enqueue(db, &tenant, "mdm_sync", &json!({}))
        .await
        .unwrap()
        .job_id;
    let pruned = storage::prune_finished(db, old + 1_000_000, 20)
        .await
        .unwrap();
    assert_eq!(pruned, 10);
    let kept: Vec<String> =
        sqlx::query_scalar("SELECT id FROM jobs WHERE kind = 'rmm_sync' ORDER BY id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        kept.first().map(String::as_str),
        Some("old-10"),
        "the newest 20 survive"
    );
    assert_eq!(kept.len(), 20);
    assert!(storage::job(db, &tenant, &recent).await.unwrap().is_some());
    test_db.finish().await;
}

async fn a_handler_computing_past_its_lease_keeps_it(backend: Backend) {
    // The handler holds its thread for longer than the three-second lease
    // without an await, as a large rollup's fold does, then reads how long
    // its lease still runs.
    let lease_left: Arc<Mutex<Option<i64>>> = Arc::default();
    let seen = lease_left.clone();
    let registry = registry_with(&["busy"], Duration::from_secs(60), move |ctx| {
        let seen = seen.clone();
        async move {
            std::thread::sleep(Duration::from_secs(5));
            let until: i64 = sqlx::query_scalar("SELECT lease_until FROM jobs WHERE id = $1")
                .bind(ctx.job_id())
                .fetch_one(&ctx.db().pool)
                .await
                .unwrap();
            *seen.lock().unwrap() = Some(until - cairn_core::db::now_ms());
            Ok(())
        }
    });
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("t").await;
    let id = storage::enqueue(&test_db.db, &tenant, "busy", &json!({}))
        .await
        .unwrap()
        .job_id;
    let (_, outcome) = queue(&test_db, registry)
        .run_one()
        .await
        .unwrap()
        .expect("a job");
    assert_eq!(outcome, RunOutcome::Recorded(JobStatus::Success));
    let left = lease_left.lock().unwrap().expect("the handler ran");
    assert!(left > 0, "the heartbeat kept the lease ({left} ms left)");
    assert_eq!(job(&test_db, &tenant, &id).await.attempts, 1);
    test_db.finish().await;
}

async fn a_new_job_wakes_another_process_at_once(backend: Backend) {
    // Across processes only PostgreSQL wakes workers; SQLite's poll.
    if backend != Backend::Postgres {
        return;
    }
    let ran: Arc<Mutex<bool>> = Arc::default();
    let flag = ran.clone();
    let registry = registry_with(&["wake_me"], Duration::from_secs(60), move |_ctx| {
        let flag = flag.clone();
        async move {
            *flag.lock().unwrap() = true;
            Ok(())
        }
    });
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    // Another process, which polls only every ten minutes.
    let mut timing = fast();
    timing.poll_interval = Duration::from_secs(600);
    let other = Arc::new(Queue::new(test_db.db.clone(), registry, timing));
    let stop = tokio_util::sync::CancellationToken::new();
    let listener = cairn_jobs::Wakeup::spawn_postgres_listener(
        test_db.url().to_string(),
        other.wakeup.clone(),
        stop.clone(),
    );
    let pool = other.spawn_pool(1, stop.clone());
    // Its first claim finds nothing; then it sleeps, listening.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let tenant = test_db.tenant("t").await;
    storage::enqueue(&test_db.db, &tenant, "wake_me", &json!({}))
        .await
        .unwrap();
    wait_for(
        "the sleeping process to run the job",
        Duration::from_secs(60),
        async || *ran.lock().unwrap(),
    )
    .await;
    stop.cancel();
    pool.await.unwrap();
    listener.await.unwrap();
    test_db.finish().await;
}

/// The handler reads its input when it starts; a request that arrives
/// while it runs must get a run that reads the input again.
async fn a_request_during_a_run_gets_a_run_after_it(backend: Backend) {
    let input = Arc::new(Mutex::new(vec!["first"]));
    let seen: Arc<Mutex<Vec<Vec<&'static str>>>> = Arc::default();
    let started = Arc::new(tokio::sync::Notify::new());
    let proceed = Arc::new(tokio::sync::Semaphore::new(0));
    let registry = {
        let (input, seen, started, proceed) = (
            input.clone(),
            seen.clone(),
            started.clone(),
            proceed.clone(),
        );
        registry_with(&["read_input"], Duration::from_secs(60), move |_ctx| {
            let (input, seen, started, proceed) = (
                input.clone(),
                seen.clone(),
                started.clone(),
                proceed.clone(),
            );
            async move {
                let read = input.lock().unwrap().clone();
                started.notify_one();
                proceed.acquire().await.unwrap().forget();
                seen.lock().unwrap().push(read);
                Ok(())
            }
        })
    };
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("t").await;
    let queue = queue(&test_db, registry);
    let pool = Pool::spawn(&queue, 4);
    let first = queue
        .enqueue(&tenant, "read_input", &json!({}))
        .await
        .unwrap();
    started.notified().await;
    assert_eq!(
        job(&test_db, &tenant, &first.job_id).await.status(),
        JobStatus::Running
    );

    // Arrives after the running job read its input.
    input.lock().unwrap().push("second");
    let behind = queue
        .enqueue(&tenant, "read_input", &json!({}))
        .await
        .unwrap();
    assert!(behind.created, "a job of its own, not the running one");
    assert_ne!(behind.job_id, first.job_id);
    let again = queue
        .enqueue(&tenant, "read_input", &json!({}))
        .await
        .unwrap();
    assert_eq!(
        again.job_id, behind.job_id,
        "requests coalesce while queued"
    );
    assert!(!again.created);
    // It waits while the first runs: runs of one kind never overlap.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        job(&test_db, &tenant, &behind.job_id).await.status(),
        JobStatus::Queued
    );

    proceed.add_permits(1);
    started.notified().await;
    proceed.add_permits(1);
    let db = test_db.db.clone();
    wait_for(
        "the job behind to run",
        Duration::from_secs(10),
        async || {
            storage::job(&db, &tenant, &behind.job_id)
                .await
                .unwrap()
                .unwrap()
                .status()
                == JobStatus::Success
        },
    )
    .await;
    assert_eq!(
        job(&test_db, &tenant, &first.job_id).await.status(),
        JobStatus::Success
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![vec!["first"], vec!["first", "second"]]
    );
    pool.stop().await;
    test_db.finish().await;
}

/// A run that would go back to the queue (a retry, a lapsed lease, a
/// shutdown) ends instead when a newer job of its kind is queued behind it:
/// that job does the work, and the queue keeps one queued job per kind.
async fn a_run_sent_back_gives_way_to_the_job_queued_behind_it(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("t").await;
    let db = &test_db.db;
    let claim_with_one_behind = async |kind: &str| {
        let fence = enqueue_and_claim(db, &tenant, kind, "worker-a").await;
        let behind = storage::enqueue(db, &tenant, kind, &json!({}))
            .await
            .unwrap();
        assert!(behind.created);
        assert!(
            storage::claim(db, "worker-b", &kinds(&[kind]), 10, 60_000)
                .await
                .unwrap()
                .is_empty(),
            "the job behind waits for the running one"
        );
        (fence, behind.job_id)
    };

    let (failed, failed_behind) = claim_with_one_behind("retried").await;
    assert_eq!(
        storage::finish_failure(db, &failed, "upstream timed out", 0, true)
            .await
            .unwrap(),
        Some(JobStatus::Error)
    );
    let row = job(&test_db, &tenant, &failed.job_id).await;
    assert_eq!(row.error.as_deref(), Some("upstream timed out"));

    let (lapsed, lapsed_behind) = claim_with_one_behind("lapsed").await;
    expire_lease(&test_db, &lapsed.job_id).await;
    assert_eq!(storage::reap_expired(db).await.unwrap(), 1);
    let row = job(&test_db, &tenant, &lapsed.job_id).await;
    assert_eq!(
        row.status(),
        JobStatus::Superseded,
        "not an error: the work goes on"
    );
    assert_eq!(row.superseded_by.as_deref(), Some(lapsed_behind.as_str()));
    assert_eq!(row.error, None);

    let (released, released_behind) = claim_with_one_behind("released").await;
    assert!(storage::release(db, &released).await.unwrap());
    let row = job(&test_db, &tenant, &released.job_id).await;
    assert_eq!(row.status(), JobStatus::Superseded);
    assert_eq!(row.superseded_by.as_deref(), Some(released_behind.as_str()));
    assert!(row.finished_at.is_some());

    // Each job behind is now claimable, once.
    let claimed = storage::claim(
        db,
        "worker-b",
        &kinds(&["retried", "lapsed", "released"]),
        10,
        60_000,
    )
    .await
    .unwrap();
    let mut claimed: Vec<String> = claimed.into_iter().map(|j| j.id).collect();
    claimed.sort();
    let mut expected = vec![failed_behind, lapsed_behind, released_behind];
    expected.sort();
    assert_eq!(claimed, expected);

    // With nothing behind, the same paths still send a run back.
    let fence = enqueue_and_claim(db, &tenant, "alone", "worker-a").await;
    assert_eq!(
        storage::finish_failure(db, &fence, "flaky", 0, true)
            .await
            .unwrap(),
        Some(JobStatus::Queued)
    );
    test_db.finish().await;
}

/// A job may need one process's blob store (a parse of a file on its
/// disk), yet the queue keeps one queued job per tenant and kind, as the
/// spec says of every job: a request for another store gets the queued
/// job's id, only a process holding a job's store claims it, and a run
/// handed back gives way to the job queued behind it without passing its
/// checkpoint to a job of another store.
async fn a_job_needing_a_store_is_still_the_one_queued_for_its_kind(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("t").await;
    let other = test_db.tenant("u").await;
    let db = &test_db.db;
    let parse = "parse";
    let first = storage::enqueue_held(db, &tenant, parse, &json!({}), "disk-a")
        .await
        .unwrap();
    assert!(first.created);
    let cases: [(&TenantId, &str, bool); 4] = [
        (&tenant, "disk-b", false),
        (&tenant, "disk-a", false),
        (&tenant, "", false),
        (&other, "disk-b", true),
    ];
    for (who, store, created) in cases {
        let asked = storage::enqueue_held(db, who, parse, &json!({}), store)
            .await
            .unwrap();
        assert_eq!(asked.created, created, "{} {store}", who.as_str());
        if !created {
            assert_eq!(asked.job_id, first.job_id, "the one queued job's id");
        }
    }
    assert_eq!(
        storage::enqueue_held_unless_live(db, &tenant, parse, &json!({}), "disk-b")
            .await
            .unwrap(),
        None,
        "a sweep queues nothing while a job of the kind is queued, whatever its store"
    );
    let holding = async |store: &str| {
        storage::claim_holding(db, ("w", store), &kinds(&[parse]), 10, 60_000)
            .await
            .unwrap()
    };
    assert!(
        holding("disk-b")
            .await
            .iter()
            .all(|j| j.tenant_id != tenant.as_str()),
        "not its store"
    );
    let claimed = holding("disk-a").await;
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, first.job_id);
    let fence = Fence {
        job_id: first.job_id.clone(),
        worker_id: "w".into(),
        attempts: claimed[0].attempts,
    };
    let mut tx = db.pool.begin().await.unwrap();
    let checkpoint = json!({"upload": "u1", "row": 400});
    assert!(
        storage::set_checkpoint(&mut tx, db.backend, &fence, &checkpoint, 60_000)
            .await
            .unwrap()
    );
    tx.commit().await.unwrap();
    // While disk-a's parse runs, disk-b's is queued behind it.
    let behind = storage::enqueue_held(db, &tenant, parse, &json!({}), "disk-b")
        .await
        .unwrap();
    assert!(behind.created);
    assert!(storage::release(db, &fence).await.unwrap());
    let handed_back = job(&test_db, &tenant, &first.job_id).await;
    assert_eq!(handed_back.status(), JobStatus::Superseded);
    assert_eq!(
        handed_back.superseded_by.as_deref(),
        Some(behind.job_id.as_str())
    );
    let behind = job(&test_db, &tenant, &behind.job_id).await;
    assert_eq!(behind.affinity, "disk-b");
    assert_eq!(
        behind.checkpoint, None,
        "another store's checkpoint means nothing there"
    );
    test_db.finish().await;
}
