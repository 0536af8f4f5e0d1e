//! Connectors reloaded while the service runs. A `.wasm` file added,
//! replaced or removed in the connectors directory is picked up without a
//! restart: on a change the directory's watcher sees, on `POST
//! /api/v1/admin/connectors/reload`, and on every other process when one
//! reloads (the shared count in `connector_reloads`, read every second, so
//! processes that do not share a disk each read their own directory).
//!
//! A reload reads the directory again on the same engine
//! ([`cairn_plugins::Plugins::reload`]), then builds every area again from
//! the new set: routes (a removed connector's are gone, a new one's are
//! mounted), the OpenAPI documents and the job handlers. The router
//! serving requests is swapped whole; a request, sync or parse under way
//! keeps the set it started with. Reloads run one at a time, on one task.

use std::convert::Infallible;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use arc_swap::ArcSwap;
use axum::extract::Request;
use axum::response::Response;
use axum::Router;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::http::admin::{Ask, Cause, Receiver, Reloaded, Reloads};
use cairn_core::http::middleware::{without_encoded_nul, EitherSpelling};
use cairn_jobs::Registry;
use cairn_platform::app::AppState;
use cairn_platform::connector_reloads;
use cairn_plugins::PluginChanges;

/// How long the directory must be quiet before a reload: a copy in
/// progress writes many times.
const SETTLE: Duration = Duration::from_millis(300);

/// The router serving now, with the paths it answers in either spelling.
struct App {
    router: Router,
    spellings: EitherSpelling,
}

/// The service every connection is served by: the current router, read
/// per request, so a reload changes what the next request meets.
#[derive(Clone)]
pub struct ServedApp(Arc<ArcSwap<App>>);

impl ServedApp {
    pub fn new(router: Router, spellings: EitherSpelling) -> ServedApp {
        ServedApp(Arc::new(ArcSwap::from_pointee(App { router, spellings })))
    }

    fn replace(&self, router: Router, spellings: EitherSpelling) {
        self.0.store(Arc::new(App { router, spellings }));
    }
}

impl tower::Service<Request> for ServedApp {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let app = self.0.load();
        let request = app.spellings.route(without_encoded_nul(request));
        Box::pin(app.router.clone().oneshot(request))
    }
}

/// What the reload task needs to build the service again.
struct Rebuild {
    state: AppState,
    /// The job kinds beside the areas' (tests add their own).
    extra_jobs: Registry,
    served: ServedApp,
    reloads: Reloads,
}

/// The reload task answering `asks` (and following the other processes'
/// reloads), and the directory's watcher when the settings want it; both
/// run until `shutdown`.
pub fn spawn(
    state: &AppState,
    extra_jobs: Registry,
    served: ServedApp,
    reloads: Reloads,
    asks: Receiver,
    shutdown: CancellationToken,
) -> Vec<JoinHandle<()>> {
    let rebuild = Rebuild {
        state: state.clone(),
        extra_jobs,
        served,
        reloads: reloads.clone(),
    };
    let mut tasks = vec![tokio::spawn(run(rebuild, asks.0, shutdown.clone()))];
    if state.settings.connectors_watch {
        tasks.push(watch(
            state.settings.connectors_dir.clone(),
            reloads,
            shutdown,
        ));
    }
    tasks
}

async fn run(rebuild: Rebuild, mut asks: mpsc::Receiver<Ask>, shutdown: CancellationToken) {
    let db = rebuild.state.db.clone();
    // Reloads before this process started are in what it loaded.
    let mut seen = connector_reloads::generation(&db).await.unwrap_or(0);
    let mut poll = tokio::time::interval(connector_reloads::POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Said once per outage, not every second.
    let mut unreadable = false;
    loop {
        let ask = tokio::select! {
            ask = asks.recv() => match ask {
                Some(ask) => ask,
                None => return,
            },
            _ = poll.tick() => match connector_reloads::generation(&db).await {
                Ok(now) => {
                    unreadable = false;
                    if now <= seen {
                        continue;
                    }
                    // Followed once, even if this directory cannot be read
                    // now: the next change or reload tries again.
                    seen = now;
                    Ask { cause: Cause::Elsewhere, reply: None }
                }
                Err(err) => {
                    if !unreadable {
                        tracing::warn!(error = %err, "reading the connector reload count failed");
                    }
                    unreadable = true;
                    continue;
                }
            },
            _ = shutdown.cancelled() => return,
        };
        let answer = rebuild.reload(ask.cause, &mut seen).await;
        if let Err(reason) = &answer {
            tracing::error!(%reason, cause = ?ask.cause, "connector reload failed");
        }
        if let Some(reply) = ask.reply {
            let _ = reply.send(answer);
        }
    }
}

impl Rebuild {
    async fn reload(&self, cause: Cause, seen: &mut i64) -> Result<Reloaded, String> {
        let state = &self.state;
        let before = state.plugins();
        let after = before
            .reload(&state.settings)
            .await
            .map_err(|e| format!("reading the connectors directory failed: {e:#}"))?;
        let changes = PluginChanges::between(&before, &after);
        let skips = |p: &cairn_plugins::Plugins| {
            p.skipped
                .iter()
                .map(|s| (s.file.clone(), s.reason.clone()))
                .collect::<Vec<_>>()
        };
        let differs = !changes.is_empty() || skips(&before) != skips(&after);
        if differs {
            state.live_plugins.replace(Arc::new(after));
            if let Err(reason) = self.rebuild() {
                // The areas could not be built on the new set: keep serving
                // the old one whole.
                state.live_plugins.replace(before);
                return Err(reason);
            }
        }
        match cause {
            Cause::Elsewhere => {}
            Cause::Asked => *seen = self.advance().await?,
            Cause::Directory if !changes.is_empty() => *seen = self.advance().await?,
            Cause::Directory => {}
        }
        let now = state.plugins();
        tracing::info!(
            cause = ?cause,
            generation = *seen,
            added = changes.added.len(),
            replaced = changes.replaced.len(),
            removed = changes.removed.len(),
            skipped = now.skipped.len(),
            "connectors reloaded"
        );
        Ok(Reloaded {
            generation: *seen,
            changes,
            connectors: now
                .connectors
                .iter()
                .map(|c| c.descriptor.id.clone())
                .collect(),
            csv_providers: now
                .csv_providers
                .iter()
                .map(|p| p.descriptor.key.clone())
                .collect(),
            skipped: now.skipped.clone(),
        })
    }

    async fn advance(&self) -> Result<i64, String> {
        connector_reloads::advance(&self.state.db, &self.state.jobs.worker_id)
            .await
            .map_err(|e| format!("counting the reload failed: {e}"))
    }

    /// Every area built again from the plugins serving now; the router and
    /// the job handlers replaced only once all of it was built.
    fn rebuild(&self) -> Result<(), String> {
        let state = &self.state;
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let (routes, jobs) =
                cairn_platform::area::rebuild(state, crate::areas::AREAS, self.extra_jobs.clone())?;
            let (router, documents) = crate::http::router(state, routes, self.reloads.clone());
            anyhow::Ok((router, documents.either_spelling(), jobs))
        }));
        match built {
            Ok(Ok((router, spellings, jobs))) => {
                state.jobs.replace(jobs);
                self.served.replace(router, spellings);
                Ok(())
            }
            Ok(Err(err)) => Err(format!("building the service again failed: {err:#}")),
            Err(_) => {
                Err("building the service again failed: the routes do not fit together".into())
            }
        }
    }
}

/// Watches `dir` and asks for a reload once it has been quiet for
/// [`SETTLE`] after a change.
fn watch(dir: PathBuf, reloads: Reloads, shutdown: CancellationToken) -> JoinHandle<()> {
    let (changed, mut changes) = mpsc::unbounded_channel::<()>();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|e| !e.kind.is_access()) {
            let _ = changed.send(());
        }
    })
    .and_then(|mut watcher| {
        notify::Watcher::watch(&mut watcher, &dir, notify::RecursiveMode::NonRecursive)?;
        Ok(watcher)
    });
    tokio::spawn(async move {
        let _watcher = match watcher {
            Ok(watcher) => watcher,
            Err(err) => {
                tracing::warn!(error = %err, "the connectors directory cannot be watched; \
                    reload with POST /api/v1/admin/connectors/reload");
                return;
            }
        };
        loop {
            tokio::select! {
                change = changes.recv() => if change.is_none() { return },
                _ = shutdown.cancelled() => return,
            }
            // Wait for the directory to settle.
            loop {
                tokio::select! {
                    more = changes.recv() => if more.is_none() { return },
                    _ = tokio::time::sleep(SETTLE) => break,
                    _ = shutdown.cancelled() => return,
                }
            }
            if let Err(reason) = reloads.ask(Cause::Directory).await {
                tracing::warn!(%reason, "reloading after a change of the connectors directory");
            }
        }
    })
}
