//! The state every handler shares.

use std::ops::Deref;
use std::sync::Arc;

use ipnet::IpNet;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::auth::JwtKeys;
use crate::http::limits::RateLimits;
use cairn_core::blobs::Blobs;
use cairn_core::db::Db;
use cairn_core::mail::Mailer;
use cairn_core::secrets::SecretBox;
use cairn_core::settings::Settings;
use cairn_jobs::{Queue, QueueTiming, Registry};
use cairn_plugins::Plugins;

/// What the areas' job handlers are built from, before the state exists.
pub struct Boot<'a> {
    pub settings: &'a Settings,
    pub plugins: &'a Arc<Plugins>,
    pub secrets: &'a SecretBox,
    pub blobs: &'a Blobs,
}

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
    pub plugins: Arc<Plugins>,
    /// Encrypts integration secrets at rest.
    pub secrets: SecretBox,
    /// Where uploads, reports and portal documents are kept.
    pub blobs: Blobs,
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// Connects to the database, applies migrations and builds the shared parts.
    /// `settings` must have been through [`Settings::prepare`]; `jobs` holds
    /// handlers registered up front (tests add kinds of their own) and
    /// `register` adds the areas' handlers, which need the loaded plugins.
    pub async fn new(
        settings: Settings,
        mut jobs: Registry,
        register: impl FnOnce(&Boot, &mut Registry) -> anyhow::Result<()>,
    ) -> anyhow::Result<AppState> {
        // First: what the areas record while starting must reach it.
        let metrics = crate::http::recorder::handle();
        // Before the first connection serves a write: who a caller is may
        // then be kept between requests (SQLite).
        crate::auth::kept::watch();
        let db = Db::connect(&settings.database_url, settings.database_max_connections).await?;
        db.migrate().await?;
        let plugins = Arc::new(Plugins::load(&settings).await?);
        let secrets = SecretBox::new(&settings.encryption_key)?;
        let blobs = Blobs::from_settings(&settings)?;
        register(
            &Boot {
                settings: &settings,
                plugins: &plugins,
                secrets: &secrets,
                blobs: &blobs,
            },
            &mut jobs,
        )?;
        let inner = Inner {
            plugins,
            secrets,
            jobs: Arc::new(Queue::new(
                db.clone(),
                jobs,
                QueueTiming::from_settings(&settings),
            )),
            jwt: JwtKeys::new(&settings.jwt_secret),
            limits: RateLimits::new(&settings, &db).await?,
            mailer: Mailer::from_settings(&settings)?,
            blobs,
            metrics,
            metrics_allow: settings.metrics_allow_list()?,
            db,
            settings,
        };
        Ok(AppState(Arc::new(inner)))
    }
}
