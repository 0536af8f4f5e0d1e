//! The state every handler shares.

use std::ops::Deref;
use std::sync::Arc;

use ipnet::IpNet;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::auth::JwtKeys;
use crate::http::limits::RateLimits;
use cairn_core::blobs::Blobs;
use cairn_core::clock::Clock;
use cairn_core::db::{Backend, Db};
use cairn_core::mail::Mailer;
use cairn_core::secrets::SecretBox;
use cairn_core::settings::Settings;
use cairn_jobs::{Queue, QueueTiming};
use cairn_plugins::{LivePlugins, Plugins};

#[derive(Clone)]
pub struct AppState(Arc<Inner>);

pub struct Inner {
    pub settings: Settings,
    pub db: Db,
    pub jwt: JwtKeys,
    pub limits: RateLimits,
    pub mailer: Mailer,
    pub metrics: PrometheusHandle,
    pub metrics_allow: Vec<IpNet>,
    pub jobs: Arc<Queue>,
    /// The plugins serving now; read through [`Inner::plugins`].
    pub live_plugins: Arc<LivePlugins>,
    /// Encrypts integration secrets at rest.
    pub secrets: SecretBox,
    /// Where uploads, reports and portal documents are kept.
    pub blobs: Blobs,
    /// Now, for due dates and expiries (tests move it forward).
    pub clock: Clock,
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl Inner {
    /// The plugin set serving now. Hold it for one piece of work (a request,
    /// a run): a reload meanwhile does not change the modules it calls.
    pub fn plugins(&self) -> Arc<Plugins> {
        self.live_plugins.current()
    }
}

impl AppState {
    /// Connects to the database, applies migrations and builds the shared
    /// parts. `settings` must have been through [`Settings::prepare`]. The
    /// job queue runs nothing until the areas' handlers are installed
    /// ([`crate::area::assemble`]).
    pub async fn new(settings: Settings) -> anyhow::Result<AppState> {
        // First: what the areas record while starting must reach it.
        let metrics = crate::http::recorder::handle();
        // Before the first connection serves a write: who a caller is may
        // then be kept between requests (SQLite).
        crate::auth::kept::watch();
        let db = Db::connect(&settings.database_url, settings.database_max_connections).await?;
        db.migrate().await?;
        let live_plugins = Arc::new(LivePlugins::new(Plugins::load(&settings).await?));
        let secrets = SecretBox::new(&settings.encryption_key)?;
        let blobs = Blobs::from_settings(&settings)?;
        let jobs = Queue::without_handlers(db.clone(), QueueTiming::from_settings(&settings))
            // An upload's parse goes to a process holding its file.
            .holding(blobs.uploads.holder()?);
        // The runs' SQL on connections opened by a job thread, so that on
        // SQLite it runs below the requests' too (`Db::with_pool_of_its_own`),
        // and their write turns yield to requests on both engines.
        let run_db = match db.backend {
            Backend::Sqlite if settings.job_workers > 0 => {
                let (db, url) = (db.clone(), settings.database_url.clone());
                let max = (settings.job_workers as u32 * 2)
                    .clamp(2, settings.database_max_connections.max(2));
                cairn_jobs::runtime::handle(settings.job_threads, settings.job_niceness)
                    .spawn(async move { db.with_pool_of_its_own(&url, max).await })
                    .await??
            }
            _ => db.clone(),
        };
        let jobs = jobs.running_on(run_db.paced(settings.job_write_share));
        let inner = Inner {
            live_plugins,
            secrets,
            jobs: Arc::new(jobs),
            jwt: JwtKeys::new(&settings.jwt_secret),
            limits: RateLimits::new(&settings, &db).await?,
            mailer: Mailer::from_settings(&settings)?,
            blobs,
            clock: Clock::default(),
            metrics,
            metrics_allow: settings.metrics_allow_list()?,
            db,
            settings,
        };
        Ok(AppState(Arc::new(inner)))
    }
}
