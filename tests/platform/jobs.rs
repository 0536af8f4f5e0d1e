//! The job queue as the service runs it: a stalled or panicking handler
//! leaves the service answering, cancelling over HTTP, and the jobs API's
//! filters, pages and tenant isolation. The queue's own logic is tested
//! through its functions in `tests/areas/jobs.rs`.

use std::time::Duration;

use cairn_core::ids::TenantId;
use cairn_jobs::storage;
use cairn_jobs::{JobContext, JobStatus, RunOutcome};
use cairn_tests::jobs::{registry_with, FnHandler};
use cairn_tests::{backend_tests, wait_for, Auth, Backend, TestApp};
use serde_json::json;

backend_tests!(
    stalled_and_panicking_handlers_fail_with_reasons,
    cancel_queued_and_running_jobs,
    jobs_api_filters_pages_and_isolates_tenants,
);

fn fast(s: &mut cairn_core::settings::Settings) {
    s.job_heartbeat_secs = 1;
    s.job_lease_secs = 3;
    s.job_reaper_interval_secs = 1;
    s.job_poll_interval_ms = 50;
    s.job_retry_backoff_ms = 0;
}

fn no_workers(s: &mut cairn_core::settings::Settings) {
    fast(s);
    s.job_workers = 0;
}

async fn job(app: &TestApp, tenant: &TenantId, id: &str) -> storage::JobRow {
    storage::job(app.db(), tenant, id)
        .await
        .unwrap()
        .expect("job exists")
}

async fn stalled_and_panicking_handlers_fail_with_reasons(backend: Backend) {
    let mut registry = registry_with(&["stuck"], Duration::from_millis(1500), |ctx| async move {
        ctx.stop_token().cancelled().await;
        Ok(())
    });
    registry.register(
        "boom",
        FnHandler(|_ctx: JobContext| async move {
            if true {
                panic!("the parser fell over");
            }
            Ok(())
        }),
        Duration::from_secs(60),
    );
    let Some(app) = TestApp::start_with_jobs(backend, no_workers, registry).await else {
        return;
    };
    let tenant = app.create_tenant("t").await;
    let queue = app.server.state.jobs.clone();
    let stuck = queue
        .enqueue(&tenant, "stuck", &json!({}))
        .await
        .unwrap()
        .job_id;
    let (_, outcome) = queue.run_one().await.unwrap().unwrap();
    assert_eq!(outcome, RunOutcome::Recorded(JobStatus::Queued));
    let row = job(&app, &tenant, &stuck).await;
    assert!(
        row.error.as_deref().unwrap().contains("no progress"),
        "{:?}",
        row.error
    );

    let boom = queue
        .enqueue(&tenant, "boom", &json!({}))
        .await
        .unwrap()
        .job_id;
    sqlx::query("UPDATE jobs SET run_after = run_after + 3600000 WHERE id = $1")
        .bind(&stuck)
        .execute(&app.db().pool)
        .await
        .unwrap();
    queue.run_one().await.unwrap().unwrap();
    let row = job(&app, &tenant, &boom).await;
    assert_eq!(
        row.error.as_deref(),
        Some("handler panicked: the parser fell over")
    );
    // The service is fine.
    assert_eq!(app.get("/health", &Auth::None).await.status, 200);
    app.finish().await;
}

async fn cancel_queued_and_running_jobs(backend: Backend) {
    let registry = registry_with(&["long"], Duration::from_secs(60), |ctx| async move {
        let mut done = 0;
        loop {
            ctx.progress("working", done, 0, "items", "").await?;
            done += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let Some(app) = TestApp::start_with_jobs(backend, fast, registry).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let outsider = app.register("outsider@example.com").await;
    let tenant = TenantId(owner.tenant_id.clone());

    // Queued: no worker here handles "parked" jobs, so it waits, and is
    // canceled at once.
    let parked = storage::enqueue(app.db(), &tenant, "parked", &json!({}))
        .await
        .unwrap()
        .job_id;
    app.post(
        &format!("/api/v1/jobs/{parked}/cancel"),
        &outsider.bearer(),
        json!({}),
    )
    .await
    .assert_error(404);
    let canceled = app
        .post(
            &format!("/api/v1/jobs/{parked}/cancel"),
            &owner.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(canceled.status, 200, "{}", canceled.text);
    assert_eq!(canceled.body["status"], "canceled");
    app.post(
        &format!("/api/v1/jobs/{parked}/cancel"),
        &owner.bearer(),
        json!({}),
    )
    .await
    .assert_error(409);

    // Running: asked to stop, ends canceled.
    let long = app
        .server
        .state
        .jobs
        .enqueue(&tenant, "long", &json!({}))
        .await
        .unwrap()
        .job_id;
    wait_for("the job to run", Duration::from_secs(10), async || {
        app.get(&format!("/api/v1/jobs/{long}"), &owner.bearer())
            .await
            .body["progress"]["done"]
            .as_i64()
            > Some(2)
    })
    .await;
    let asked = app
        .post(
            &format!("/api/v1/jobs/{long}/cancel"),
            &owner.cookie(),
            json!({}),
        )
        .await;
    assert_eq!(asked.status, 202, "{}", asked.text);
    wait_for(
        "the job to end canceled",
        Duration::from_secs(10),
        async || {
            app.get(&format!("/api/v1/jobs/{long}"), &owner.bearer())
                .await
                .body["status"]
                == "canceled"
        },
    )
    .await;
    app.finish().await;
}

async fn jobs_api_filters_pages_and_isolates_tenants(backend: Backend) {
    let Some(app) = TestApp::start_with(backend, no_workers).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let other = app.register("other@example.com").await;
    let tenant = TenantId(owner.tenant_id.clone());
    let mut ids = vec![];
    for kind in ["rmm_sync", "mdm_sync", "csv_parse"] {
        ids.push(
            storage::enqueue(app.db(), &tenant, kind, &json!({"upload": kind}))
                .await
                .unwrap()
                .job_id,
        );
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let theirs = storage::enqueue(
        app.db(),
        &TenantId(other.tenant_id.clone()),
        "rmm_sync",
        &json!({}),
    )
    .await
    .unwrap()
    .job_id;

    let all = app.get("/api/v1/jobs", &owner.bearer()).await;
    assert_eq!(all.status, 200, "{}", all.text);
    assert_eq!(all.body["total"], 3);
    let listed: Vec<&str> = all.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        [ids[2].as_str(), ids[1].as_str(), ids[0].as_str()],
        "newest first"
    );
    assert_eq!(all.body["items"][0]["args"], json!({"upload": "csv_parse"}));
    assert_eq!(all.body["items"][0]["max_attempts"], 3);
    assert_eq!(all.body["items"][0]["attempts"], 0);

    let rmm = app
        .get("/api/v1/jobs?kind=rmm_sync&status=queued", &owner.bearer())
        .await;
    assert_eq!(rmm.body["total"], 1);
    assert_eq!(rmm.body["items"][0]["id"], ids[0]);
    let page = app
        .get("/api/v1/jobs?limit=2&offset=2", &owner.bearer())
        .await;
    assert_eq!(page.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        app.get("/api/v1/jobs?status=success", &owner.bearer())
            .await
            .body["total"],
        0
    );
    app.get("/api/v1/jobs?status=bogus", &owner.bearer())
        .await
        .assert_error(422);
    app.get("/api/v1/jobs?limit=0", &owner.bearer())
        .await
        .assert_error(422);
    app.get("/api/v1/jobs", &Auth::None).await.assert_error(401);

    let one = app
        .get(&format!("/api/v1/jobs/{}", ids[1]), &owner.cookie())
        .await;
    assert_eq!(one.body["kind"], "mdm_sync");
    // The other tenant's job is invisible and untouchable.
    app.get(&format!("/api/v1/jobs/{theirs}"), &owner.bearer())
        .await
        .assert_error(404);
    app.post(
        &format!("/api/v1/jobs/{theirs}/cancel"),
        &owner.bearer(),
        json!({}),
    )
    .await
    .assert_error(404);
    let others = app.get("/api/v1/jobs", &other.bearer()).await;
    assert_eq!(others.body["total"], 1);
    assert_eq!(others.body["items"][0]["status"], "queued");
    app.finish().await;
}
