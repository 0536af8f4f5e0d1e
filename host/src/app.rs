//! The state every handler shares.

use std::ops::Deref;
use std::sync::Arc;

use ipnet::IpNet;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::auth::JwtKeys;
use crate::db::Db;
use crate::http::rate_limit::RateLimits;
use crate::integrations::sync::{RunMode, SyncCaps, SyncHandler};
use crate::integrations::SecretBox;
use crate::jobs::{Queue, QueueTiming, Registry};
use crate::mail::Mailer;
use crate::plugins::Plugins;
use crate::portal::store::BlobStore;
use crate::settings::Settings;

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
    /// Where new portal documents are kept.
    pub portal_store: BlobStore,
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// Connects to the database, applies migrations and builds the shared parts.
    /// `settings` must have been through [`Settings::prepare`]; `jobs` holds the
    /// handler of every job kind this process runs.
    pub async fn new(settings: Settings, mut jobs: Registry) -> anyhow::Result<AppState> {
        let db = Db::connect(&settings.database_url, settings.database_max_connections).await?;
        db.migrate().await?;
        let plugins = Arc::new(Plugins::load(&settings).await?);
        let secrets = SecretBox::new(&settings.encryption_key)?;
        // One sync job kind per area, and one bulk-pull kind, all run by the
        // same pipeline with the connector each tenant chose.
        for area in plugins.areas() {
            for (kind, mode) in [
                (crate::integrations::sync_kind(area), RunMode::Sync),
                (crate::integrations::pull_kind(area), RunMode::Pull),
            ] {
                let handler = SyncHandler {
                    plugins: plugins.clone(),
                    secrets: secrets.clone(),
                    area: area.to_string(),
                    caps: SyncCaps::from_settings(&settings),
                    mode,
                };
                // The spec's stale-sync guard.
                let stall = std::time::Duration::from_secs(settings.sync_stall_secs.max(1));
                jobs.register(&kind, handler, stall);
            }
        }
        crate::csv_sources::register(&mut jobs, plugins.clone(), settings.csv_uploads_dir.clone());
        crate::vulnerabilities::register(&mut jobs, &settings)?;
        crate::news::register(&mut jobs, &settings);
        crate::subscriptions::register(&mut jobs, &settings);
        crate::advisories::register(&mut jobs, &settings)?;
        crate::reports::register(&mut jobs, settings.reports_dir.clone());
        let inner = Inner {
            plugins,
            secrets,
            jobs: Arc::new(Queue::new(
                db.clone(),
                jobs,
                QueueTiming::from_settings(&settings),
            )),
            jwt: JwtKeys::new(&settings.jwt_secret),
            limits: RateLimits::new(
                settings.rate_limit_per_minute,
                settings.trusted_proxy_list()?,
            ),
            mailer: Mailer::from_settings(&settings)?,
            portal_store: BlobStore::from_settings(&settings)?,
            metrics: crate::http::metrics::handle(),
            metrics_allow: settings.metrics_allow_list()?,
            db,
            settings,
        };
        Ok(AppState(Arc::new(inner)))
    }
}
