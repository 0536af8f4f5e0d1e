//! Starting and stopping the service: used by `cairn serve` and by the tests,
//! which run the real server on a real socket.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use cairn_core::db::Backend;
use cairn_core::settings::Settings;
use cairn_jobs::Registry;
use cairn_platform::app::AppState;
use cairn_platform::area::assemble;

pub struct RunningServer {
    pub addr: SocketAddr,
    pub state: AppState,
    shutdown: CancellationToken,
    http: JoinHandle<std::io::Result<()>>,
    workers: Option<JoinHandle<()>>,
    background: Vec<JoinHandle<()>>,
}

/// Binds, prepares state, starts the job workers and serves until
/// [`RunningServer::stop`]. `settings` must have been prepared.
pub async fn start(settings: Settings) -> anyhow::Result<RunningServer> {
    start_with_jobs(settings, Registry::default()).await
}

/// As [`start`], with job handlers beside the areas' (tests add their own
/// kinds).
pub async fn start_with_jobs(settings: Settings, jobs: Registry) -> anyhow::Result<RunningServer> {
    crate::allocator::release_freed_memory_at_once();
    let listen = settings.listen_addr()?;
    let workers = settings.job_workers;
    let state = AppState::new(settings).await?;
    let areas = assemble(&state, crate::areas::AREAS, jobs.clone())?;
    seed_default_tenant(&state).await?;
    let (reloads, asks) = crate::http::admin::channel();
    let (router, documents) = crate::http::router(&state, areas.routes, reloads.clone());
    let served = crate::reload::ServedApp::new(router, documents.either_spelling());
    let listener = TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let shutdown = CancellationToken::new();
    let app = axum::ServiceExt::<axum::extract::Request>::into_make_service_with_connect_info::<
        SocketAddr,
    >(served.clone());
    let http_shutdown = shutdown.clone();
    let http = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { http_shutdown.cancelled().await })
            .await
    });
    let leases = cairn_jobs::schedule::Leases {
        db: state.db.clone(),
        holder: state.jobs.worker_id.clone(),
    };
    let mut background = cairn_jobs::schedule::run(areas.schedules, Some(leases), shutdown.clone());
    // Connectors added, replaced or removed while it runs.
    background.extend(crate::reload::spawn(
        &state,
        jobs,
        served,
        reloads,
        asks,
        shutdown.clone(),
    ));
    if state.db.backend == Backend::Postgres {
        background.push(cairn_jobs::Wakeup::spawn_postgres_listener(
            state.settings.database_url.clone(),
            state.jobs.wakeup.clone(),
            shutdown.clone(),
        ));
        // Answers kept in memory (a tenant's open CVEs by application)
        // learn of the other processes' writes through it.
        background.push(cairn_core::db::changes::spawn_listener(
            &state.db,
            state.settings.database_url.clone(),
            shutdown.clone(),
        ));
    }
    // Said alive beside the others, with whether its files are only its own.
    background.push(cairn_platform::processes::spawn(
        state.db.clone(),
        state.jobs.worker_id.clone(),
        state.blobs.any_local(),
        shutdown.clone(),
    ));
    // On threads of their own, below the request threads.
    let job_runtime =
        cairn_jobs::runtime::handle(state.settings.job_threads, state.settings.job_niceness);
    let workers = (workers > 0).then(|| {
        state
            .jobs
            .spawn_pool_on(&job_runtime, workers, shutdown.clone())
    });
    tracing::info!(%addr, backend = state.db.backend.name(), worker_id = %state.jobs.worker_id, "cairn listening");
    Ok(RunningServer {
        addr,
        state,
        shutdown,
        http,
        workers,
        background,
    })
}

/// Fills the default tenant's empty integration configs from settings.
async fn seed_default_tenant(state: &AppState) -> anyhow::Result<()> {
    let settings = &state.settings;
    if settings.default_tenant_id.is_empty() {
        return Ok(());
    }
    let seeds = cairn_integrations::seed::with_derived(
        &state.plugins(),
        cairn_integrations::seed::seed_configs(&settings.seed_configs)?,
    );
    let tenant = cairn_core::ids::TenantId(settings.default_tenant_id.clone());
    if !cairn_platform::tenancy::exists(&state.db, &tenant).await? {
        tracing::warn!(
            tenant_id = tenant.as_str(),
            "default_tenant_id names no tenant; seeding skipped"
        );
        return Ok(());
    }
    cairn_integrations::seed::seed_default_tenant(
        &state.db,
        &state.secrets,
        &state.plugins(),
        &tenant,
        &seeds,
    )
    .await?;
    Ok(())
}

impl RunningServer {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets in-flight requests finish, hands running jobs
    /// back to the queue with their checkpoints, closes the pool. Jobs and
    /// requests get `shutdown_grace_secs` each; a job still running then is
    /// dropped and handed back as it stands.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        let grace = Duration::from_secs(self.state.settings.shutdown_grace_secs);
        if let Some(workers) = self.workers.take() {
            workers.await?;
            // Best effort: a database already gone leaves the jobs to their
            // leases, as a killed process does.
            if let Err(err) = self.state.jobs.hand_back_held(&self.state.db).await {
                tracing::warn!(error = %err, "handing back the running jobs failed");
            }
        }
        for task in self.background.drain(..) {
            let _ = task.await;
        }
        // Graceful shutdown waits for every open request; a client holding
        // a slow request open must not hold the process.
        match tokio::time::timeout(grace, &mut self.http).await {
            Ok(served) => served??,
            Err(_) => {
                tracing::warn!(
                    grace_secs = grace.as_secs(),
                    "requests still open after the grace period; closing them"
                );
                self.http.abort();
            }
        }
        self.state.db.close().await;
        Ok(())
    }

    /// Serves until SIGINT or SIGTERM, then stops gracefully. A second
    /// signal exits at once; so does a stop that overruns the grace period
    /// by more than a few seconds.
    pub async fn run_until_signal(self) -> anyhow::Result<()> {
        shutdown_signal().await;
        let grace = Duration::from_secs(self.state.settings.shutdown_grace_secs);
        tracing::info!(
            grace_secs = grace.as_secs(),
            "shutting down: no new work; running jobs hand themselves back"
        );
        tokio::spawn(async {
            shutdown_signal().await;
            tracing::warn!("second signal; exiting now");
            std::process::exit(1);
        });
        // Workers and requests each have the grace period; what remains
        // is writing the releases and closing the pool.
        let deadline = grace * 2 + Duration::from_secs(3);
        let jobs = self.state.jobs.clone();
        let db = self.state.db.clone();
        match tokio::time::timeout(deadline, self.stop()).await {
            Ok(stopped) => {
                tracing::info!("stopped");
                stopped
            }
            Err(_) => {
                tracing::warn!(
                    deadline_secs = deadline.as_secs(),
                    "shutdown did not finish in time; exiting"
                );
                // The runs still going are dropped with the process: their
                // jobs go back to the queue rather than wait out a lease.
                // A run starved inside a transaction holds its job's row,
                // which the hand-back would wait on: its session is ended
                // first (on PostgreSQL; the exit rolls it back anyway).
                let handed_back = tokio::time::timeout(RELEASE_TIME, async {
                    // On connections this runtime drives: the pools' may
                    // be the blocked job runtime's (see `Db::reopened`).
                    let db = match db.reopened().await {
                        Ok(reopened) => reopened,
                        Err(err) => {
                            tracing::warn!(error = %err, "no new database connection to hand the jobs back on; using the pools");
                            db
                        }
                    };
                    match db.end_other_sessions().await {
                        Ok(0) => {}
                        Ok(ended) => tracing::warn!(
                            ended,
                            "ended this process's database sessions still open"
                        ),
                        Err(err) => {
                            tracing::warn!(error = %err, "ending this process's database sessions failed")
                        }
                    }
                    jobs.hand_back_held(&db).await
                });
                if let Ok(Err(err)) = handed_back.await {
                    tracing::warn!(error = %err, "handing back the running jobs failed");
                }
                Ok(())
            }
        }
    }
}

/// A server dropped without [`RunningServer::stop`] (its owner panicked or
/// returned early) still stops: the job workers run on a runtime of their
/// own that outlives the caller's, and would otherwise go on claiming jobs
/// and holding database connections for as long as the process lives.
impl Drop for RunningServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
        self.http.abort();
    }
}

/// How long a stop that overran its deadline may spend handing back the
/// jobs it still holds.
const RELEASE_TIME: Duration = Duration::from_secs(3);

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        if let Ok(mut sig) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            sig.recv().await;
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}
