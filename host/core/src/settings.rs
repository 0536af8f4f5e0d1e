//! Deployment settings: defaults, then an optional TOML file, then `CAIRN_*`
//! environment variables. Secrets the operator did not give are generated once
//! into the data directory (mode 0600) and reused on every start.
//!
//! Defaults → TOML → `CAIRN_*`; generates missing secrets into the data
//! directory with mode 0600.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use ipnet::IpNet;
use rand::RngCore;
use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("invalid settings: {0}")]
    Invalid(String),
    #[error("cannot prepare data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Every setting the service reads. The README lists them with their
/// environment variable names (`CAIRN_` + upper-case field name).
#[derive(Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Address the HTTP server listens on.
    pub listen: String,
    /// Directory for the embedded database, generated secrets and blobs;
    /// by default `$XDG_DATA_HOME/cairn/data` (`~/.local/share/cairn/data`).
    pub data_dir: PathBuf,
    /// `sqlite://...` or `postgres://...`; empty means SQLite under `data_dir`.
    pub database_url: String,
    /// Largest number of pooled database connections.
    pub database_max_connections: u32,
    /// Name reported by `/health` (development, staging, production, ...).
    pub environment: String,
    /// Base URL users reach the service at; used in invite links and to
    /// decide whether cookies are marked `Secure`.
    pub public_url: String,
    /// Comma-separated browser origins allowed by CORS.
    pub cors_origins: String,
    /// Requests per minute per client (user when signed in, else address)
    /// on routes without their own limit. 0 disables the default limit.
    pub rate_limit_per_minute: u32,
    /// Where the rate limits count: `local` (this process's memory; each
    /// process allows the full rate), `database` (one count per limit and
    /// key in the database, shared by every process on it) or `redis`
    /// (`redis_url`, shared likewise).
    pub rate_limit_store: String,
    /// The Redis server of `rate_limit_store = "redis"`, e.g.
    /// `redis://127.0.0.1:6379`.
    pub redis_url: String,
    /// Comma-separated addresses or CIDR ranges that may read `/metrics`.
    pub metrics_allow: String,
    /// Comma-separated proxy addresses whose `X-Forwarded-For` is trusted.
    pub trusted_proxies: String,
    /// `text` or `json`.
    pub log_format: String,
    /// HS256 key for access tokens; generated into the data directory if empty.
    pub jwt_secret: String,
    /// 32-byte hex key for secrets at rest; generated if empty.
    pub encryption_key: String,
    /// Lifetime of an access token, seconds.
    pub access_token_ttl_secs: i64,
    /// Lifetime of a refresh token, seconds.
    pub refresh_token_ttl_secs: i64,
    /// Lifetime of a browser session, seconds.
    pub session_ttl_secs: i64,
    /// Lifetime of a bridge token, seconds.
    pub bridge_token_ttl_secs: i64,
    /// Default lifetime of an invite, seconds.
    pub invite_ttl_secs: i64,
    /// SMTP server for invites and advisories; empty disables mail (invite
    /// links are logged, advisories are refused).
    pub smtp_host: String,
    pub smtp_port: u16,
    pub smtp_username: String,
    pub smtp_password: String,
    pub smtp_from: String,
    /// `starttls`, `tls` or `none`.
    pub smtp_security: String,
    /// Concurrent job runners in this process; 0 runs none (API only).
    pub job_workers: usize,
    /// Threads the jobs run on, apart from the request threads, at a lower
    /// priority; 0: one fewer than the cores, at least one. Requests keep
    /// a core while uploads and syncs run.
    pub job_threads: usize,
    /// How much lower than the request threads the job threads run (Linux
    /// `nice`, 0 to 19; 0: the same).
    pub job_niceness: i32,
    /// The share of the time jobs' writes may take while requests are in
    /// flight (0.01 to 1; 1: jobs never wait). The database server does a
    /// write's work, out of reach of the job threads' niceness.
    pub job_write_share: f64,
    /// A claimed job's lease, extended by each heartbeat.
    pub job_lease_secs: u64,
    pub job_heartbeat_secs: u64,
    pub job_reaper_interval_secs: u64,
    /// On SIGTERM: how long running jobs have to save their checkpoint and
    /// hand themselves back, and in-flight requests to finish, before the
    /// process exits anyway. A second SIGTERM exits at once.
    pub shutdown_grace_secs: u64,
    /// How often idle workers look for work without a wake-up.
    pub job_poll_interval_ms: u64,
    /// Base of the exponential retry backoff (doubled per attempt).
    pub job_retry_backoff_ms: u64,
    /// Finished jobs older than this are pruned ...
    pub job_retention_days: u64,
    /// ... except the newest this many per tenant and kind.
    pub job_history_keep: i64,
    /// How often automation looks for tenants whose findings moved or
    /// whose deliveries are due.
    pub automation_sweep_ms: u64,
    /// Base of an automation delivery's retry backoff (doubled per
    /// attempt).
    pub automation_retry_ms: u64,
    /// How often remediation starts approved plans, asks the RMM where its
    /// jobs stand and checks reported fixes against the inventory.
    pub remediation_sweep_ms: u64,
    /// A remediation of one application on one device that failed (or
    /// that the next inventory disproved) this many times is not planned
    /// again: no install loop.
    pub remediation_max_attempts: i64,
    /// A device the RMM has not heard from for this many hours is offline
    /// and left out of a plan.
    pub remediation_offline_hours: i64,
    /// How often report schedules are looked at for a report that is due.
    pub report_schedule_sweep_ms: u64,
    /// Directory of connector and CSV provider `.wasm` files; by default
    /// `$XDG_DATA_HOME/cairn/components`, where `cargo xtask install`
    /// puts them.
    pub connectors_dir: PathBuf,
    /// Watch `connectors_dir` and reload the connectors when a file is
    /// added, replaced or removed (off: only `POST
    /// /api/v1/admin/connectors/reload` or another process's reload does).
    pub connectors_watch: bool,
    /// The operator's token for `/api/v1/admin/...` (sent as
    /// `X-Cairn-Admin-Token`); empty: those routes answer 403.
    pub admin_token: String,
    /// Where compiled components are cached, keyed by the file's hash and the
    /// engine; empty: `<data_dir>/plugin-cache`. Processes may share one.
    pub plugin_cache_dir: PathBuf,
    /// Memory cap of one plugin call.
    pub plugin_memory_mb: usize,
    /// List compiled plugin code for `perf` (profiling a slow connector).
    pub plugin_perf_map: bool,
    /// Deadline of one plugin call (its HTTP waits included).
    pub plugin_call_timeout_secs: u64,
    /// Timeout of one outbound HTTP request.
    pub plugin_http_timeout_secs: u64,
    /// Largest upstream response a plugin may receive.
    pub plugin_max_response_mb: usize,
    /// Requests of one connector's `send-all` in flight at once, at most
    /// (a connector asks for its own number, up to this).
    pub plugin_max_concurrent_requests: usize,
    /// Characters of one text field a plugin maps (a name, version, key);
    /// a row over it is rejected with the reason.
    pub plugin_max_field_chars: usize,
    /// Size of one record's JSON body a connector maps.
    pub plugin_max_record_kb: usize,
    /// Pages one sync run may fetch, all streams together.
    pub sync_max_pages: u64,
    /// Records one fetched page may hold.
    pub sync_max_page_records: usize,
    /// Rows one sync run may write.
    pub sync_max_rows: u64,
    /// Pages of one sync written to PostgreSQL at once, each in its own
    /// transaction (SQLite writes one at a time).
    pub sync_page_writes: usize,
    /// Seconds a sync may go without progress (a page with records, or a
    /// cursor that moved) before it fails: the stale-sync guard.
    pub sync_stall_secs: u64,
    /// Comma-separated hosts plugins may reach over plain http (tests, labs).
    pub plugin_plain_http_hosts: String,
    /// Comma-separated `id=sha256` pairs: which file serves a connector id
    /// (or CSV provider key) that several files in the directory declare.
    pub connector_pins: String,
    /// Comma-separated addresses or ranges (CIDR) that outbound requests may
    /// reach although they are loopback, private, link-local or otherwise
    /// not public. Empty (the default): only public addresses.
    pub outbound_private_networks: String,
    /// Tenant whose empty integration configs are filled from
    /// `seed_configs` at start; empty disables seeding.
    pub default_tenant_id: String,
    /// JSON object: area -> config (with `connector` naming one when
    /// several serve the area), used to seed the default tenant. Existing
    /// configs are never overwritten.
    pub seed_configs: String,
    /// Where CSV/Excel uploads wait for their parse; empty means
    /// `<data_dir>/csv-uploads`.
    pub csv_uploads_dir: PathBuf,
    /// Largest CSV/Excel upload.
    pub csv_max_upload_mb: u64,
    /// Where portal documents are stored; empty means `<data_dir>/portal-files`.
    /// Uploads wait here while they are checked, whichever store keeps them.
    pub portal_files_dir: PathBuf,
    /// Which store keeps every file written for later (CSV and Excel
    /// uploads, generated reports, portal documents): `local` (the
    /// directories `csv_uploads_dir`, `reports_dir` and `portal_files_dir`,
    /// one machine only) or `s3` (one S3-compatible bucket, `s3_*`, which
    /// several processes share).
    pub blob_store: String,
    /// Base URL of the S3-compatible service, e.g. `https://s3.eu-west-1.amazonaws.com`.
    pub s3_endpoint: String,
    pub s3_bucket: String,
    pub s3_region: String,
    pub s3_access_key_id: String,
    pub s3_secret_access_key: String,
    /// Base of a document's `spWebUrl` (the key is appended); empty means
    /// `<endpoint>/<bucket>`.
    pub s3_web_base_url: String,
    /// Largest portal document upload.
    pub portal_max_upload_mb: u64,
    /// Lifetime of a signed download URL.
    pub portal_download_ttl_secs: u64,
    /// NVD CVE API 2.0 endpoint (a private mirror or a test fake works).
    pub nvd_api_url: String,
    /// NVD API key, sent in the `apiKey` header; empty: none (slower pace).
    pub nvd_api_key: String,
    /// Pause between NVD requests; 0 means NVD's guidance: 6 s without a
    /// key, 0.6 s with one.
    pub nvd_request_delay_ms: u64,
    /// Results per NVD page (at most 2,000; halved when NVD refuses it).
    pub nvd_results_per_page: u64,
    /// CISA KEV catalog (JSON).
    pub kev_url: String,
    /// FIRST EPSS scores (CSV, plain or gzip).
    pub epss_url: String,
    /// FIRST's EPSS API (`?cve=`), asked when one CVE is enriched now.
    pub epss_api_url: String,
    /// Whether the service loads NVD (every `nvd_interval_secs`), KEV and
    /// EPSS on its own. Off: only `cairn vuln import` and `cairn vuln sync`.
    pub vuln_schedule: bool,
    pub nvd_interval_secs: u64,
    pub kev_interval_secs: u64,
    pub epss_interval_secs: u64,
    /// A translation table replacing the shipped one (JSON, same shape as
    /// `host/src/vulnerabilities/translations.json`); empty: the shipped one.
    pub vuln_translations_path: PathBuf,
    /// An OpenAI-compatible chat completions endpoint (its base URL, the
    /// part before `/chat/completions`) that classifies news and drafts
    /// advisories; empty: the deterministic classifier and the templates.
    pub model_base_url: String,
    /// The model named in each request.
    pub model_name: String,
    /// Sent as `Authorization: Bearer ...`; a secret.
    pub model_api_key: String,
    /// How long one model request may take before the fallback answers.
    pub model_timeout_secs: u64,
    /// How often every tenant's news feeds are refreshed, minutes; 0: only
    /// when asked (`POST /news-feeds/feeds/refresh`).
    pub news_refresh_minutes: u64,
    /// The largest feed document read, MiB.
    pub news_max_feed_mb: usize,
    /// How often every subscription is synced from NVD, hours; 0: only
    /// when asked (`POST /subscriptions/sync`).
    pub subscription_sync_hours: u64,
    /// Advisory e-mails sent per minute, per process.
    pub advisory_mails_per_minute: u32,
    /// Where generated reports are kept; empty: `<data_dir>/reports`.
    pub reports_dir: PathBuf,
    /// Reports finished longer ago than this are deleted with their files.
    pub report_retention_days: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            listen: "127.0.0.1:8000".into(),
            data_dir: standard_dir().join("data"),
            database_url: String::new(),
            database_max_connections: 16,
            environment: "development".into(),
            public_url: String::new(),
            cors_origins: String::new(),
            rate_limit_per_minute: 600,
            rate_limit_store: "local".into(),
            redis_url: String::new(),
            metrics_allow: "127.0.0.1/32,::1/128".into(),
            trusted_proxies: String::new(),
            log_format: "text".into(),
            jwt_secret: String::new(),
            encryption_key: String::new(),
            access_token_ttl_secs: 15 * 60,
            refresh_token_ttl_secs: 30 * 24 * 3600,
            session_ttl_secs: 7 * 24 * 3600,
            bridge_token_ttl_secs: 5 * 60,
            invite_ttl_secs: 7 * 24 * 3600,
            smtp_host: String::new(),
            smtp_port: 587,
            smtp_username: String::new(),
            smtp_password: String::new(),
            smtp_from: "Cairn <no-reply@localhost>".into(),
            smtp_security: "starttls".into(),
            job_workers: 4,
            job_threads: 0,
            job_niceness: 10,
            job_write_share: 0.1,
            job_lease_secs: 60,
            job_heartbeat_secs: 15,
            job_reaper_interval_secs: 60,
            shutdown_grace_secs: 10,
            job_poll_interval_ms: 1000,
            job_retry_backoff_ms: 5000,
            job_retention_days: 14,
            job_history_keep: 20,
            automation_sweep_ms: 10_000,
            automation_retry_ms: 30_000,
            remediation_sweep_ms: 10_000,
            remediation_max_attempts: 2,
            remediation_offline_hours: 24,
            report_schedule_sweep_ms: 60_000,
            connectors_dir: standard_dir().join("components"),
            connectors_watch: true,
            admin_token: String::new(),
            plugin_cache_dir: PathBuf::new(),
            plugin_memory_mb: 256,
            plugin_perf_map: false,
            plugin_call_timeout_secs: 120,
            plugin_http_timeout_secs: 30,
            plugin_max_response_mb: 64,
            plugin_max_concurrent_requests: 8,
            plugin_max_field_chars: 2048,
            plugin_max_record_kb: 512,
            sync_max_pages: 100_000,
            sync_max_page_records: 10_000,
            sync_max_rows: 20_000_000,
            sync_page_writes: 2,
            sync_stall_secs: 20 * 60,
            plugin_plain_http_hosts: String::new(),
            outbound_private_networks: String::new(),
            connector_pins: String::new(),
            csv_uploads_dir: PathBuf::new(),
            csv_max_upload_mb: 100,
            portal_files_dir: PathBuf::new(),
            blob_store: "local".into(),
            s3_endpoint: String::new(),
            s3_bucket: String::new(),
            s3_region: "us-east-1".into(),
            s3_access_key_id: String::new(),
            s3_secret_access_key: String::new(),
            s3_web_base_url: String::new(),
            portal_max_upload_mb: 100,
            portal_download_ttl_secs: 300,
            default_tenant_id: String::new(),
            seed_configs: String::new(),
            nvd_api_url: "https://services.nvd.nist.gov/rest/json/cves/2.0".into(),
            nvd_api_key: String::new(),
            nvd_request_delay_ms: 0,
            nvd_results_per_page: 2000,
            kev_url: "https://www.cisa.gov/sites/default/files/feeds/known_exploited_vulnerabilities.json".into(),
            epss_url: "https://epss.cyentia.com/epss_scores-current.csv.gz".into(),
            epss_api_url: "https://api.first.org/data/v1/epss".into(),
            vuln_schedule: true,
            nvd_interval_secs: 2 * 3600,
            kev_interval_secs: 3600,
            epss_interval_secs: 24 * 3600,
            vuln_translations_path: PathBuf::new(),
            model_base_url: String::new(),
            model_name: "gpt-4o-mini".into(),
            model_api_key: String::new(),
            model_timeout_secs: 30,
            news_refresh_minutes: 60,
            news_max_feed_mb: 5,
            subscription_sync_hours: 24,
            advisory_mails_per_minute: 60,
            reports_dir: PathBuf::new(),
            report_retention_days: 30,
        }
    }
}

impl std::fmt::Debug for Settings {
    // Hand-written so that secrets never reach a log line through `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("listen", &self.listen)
            .field("data_dir", &self.data_dir)
            .field("database", &self.database_kind())
            .field("environment", &self.environment)
            .field("public_url", &self.public_url)
            .field("cors_origins", &self.cors_origins)
            .field("rate_limit_per_minute", &self.rate_limit_per_minute)
            .field("rate_limit_store", &self.rate_limit_store)
            .field("smtp_host", &self.smtp_host)
            .field("blob_store", &self.blob_store)
            .field("s3_endpoint", &self.s3_endpoint)
            .field("s3_bucket", &self.s3_bucket)
            .field("nvd_api_url", &self.nvd_api_url)
            .field("vuln_schedule", &self.vuln_schedule)
            .field("model_base_url", &self.model_base_url)
            .field("model_name", &self.model_name)
            .field("news_refresh_minutes", &self.news_refresh_minutes)
            .field("subscription_sync_hours", &self.subscription_sync_hours)
            .finish_non_exhaustive()
    }
}

/// Cairn's place in the user's data directory: `$XDG_DATA_HOME/cairn`,
/// else `~/.local/share/cairn`; `./cairn` when neither is known.
pub fn standard_dir() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|dir| !dir.is_empty())
                .map(|home| PathBuf::from(home).join(".local").join("share"))
        });
    match base {
        Some(base) => base.join("cairn"),
        None => PathBuf::from("cairn"),
    }
}

impl Settings {
    /// The SQLite database file the settings name when `database_url` is
    /// empty or a `sqlite://` path; `None` for PostgreSQL.
    pub fn sqlite_file(&self) -> Option<PathBuf> {
        if self.database_url.is_empty() {
            return Some(self.data_dir.join("cairn.db"));
        }
        let rest = self.database_url.strip_prefix("sqlite://")?;
        let path = rest.split('?').next().unwrap_or(rest);
        (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path))
    }

    /// Loads defaults, then `CAIRN_CONFIG` (or `cairn.toml` if present), then
    /// `CAIRN_*` variables.
    pub fn load() -> Result<Settings, SettingsError> {
        let file = std::env::var("CAIRN_CONFIG").unwrap_or_else(|_| "cairn.toml".into());
        let figment = Figment::from(Serialized::defaults(Settings::default()))
            .merge(Toml::file(file))
            .merge(Env::prefixed("CAIRN_").ignore(&["config"]));
        refuse_renamed(&figment)?;
        figment
            .extract()
            .map_err(|e| SettingsError::Invalid(e.to_string()))
    }

    /// Fills in derived values and generated secrets; creates the data directory.
    pub fn prepare(mut self) -> Result<Settings, SettingsError> {
        std::fs::create_dir_all(&self.data_dir).map_err(|source| SettingsError::DataDir {
            path: self.data_dir.clone(),
            source,
        })?;
        if self.database_url.is_empty() {
            self.database_url = format!(
                "sqlite://{}?mode=rwc",
                self.data_dir.join("cairn.db").display()
            );
        }
        if self.public_url.is_empty() {
            self.public_url = format!("http://{}", self.listen);
        }
        if self.csv_uploads_dir.as_os_str().is_empty() {
            self.csv_uploads_dir = self.data_dir.join("csv-uploads");
        }
        if self.reports_dir.as_os_str().is_empty() {
            self.reports_dir = self.data_dir.join("reports");
        }
        if self.plugin_cache_dir.as_os_str().is_empty() {
            self.plugin_cache_dir = self.data_dir.join("plugin-cache");
        }
        if self.portal_files_dir.as_os_str().is_empty() {
            self.portal_files_dir = self.data_dir.join("portal-files");
        }
        if self.jwt_secret.is_empty() {
            self.jwt_secret = generated_secret(&self.data_dir, "jwt_secret")?;
        }
        if self.encryption_key.is_empty() {
            self.encryption_key = generated_secret(&self.data_dir, "encryption_key")?;
        }
        self.listen_addr()?;
        self.metrics_allow_list()?;
        self.outbound_private_network_list()?;
        self.connector_pin_list()?;
        self.trusted_proxy_list()?;
        self.check_blob_store()?;
        self.check_rate_limit_store()?;
        Ok(self)
    }

    fn check_rate_limit_store(&self) -> Result<(), SettingsError> {
        match self.rate_limit_store.as_str() {
            "local" | "database" => Ok(()),
            "redis"
                if self.redis_url.starts_with("redis://")
                    || self.redis_url.starts_with("rediss://") =>
            {
                Ok(())
            }
            "redis" => Err(SettingsError::Invalid(
                "rate_limit_store = \"redis\" needs redis_url (redis://host:port)".into(),
            )),
            other => Err(SettingsError::Invalid(format!(
                "rate_limit_store: expected \"local\", \"database\" or \"redis\", got \"{other}\""
            ))),
        }
    }

    /// The S3 store needs all of its settings; finding out at the first
    /// upload would be too late.
    fn check_blob_store(&self) -> Result<(), SettingsError> {
        match self.blob_store.as_str() {
            "local" => Ok(()),
            "s3" => {
                let missing: Vec<&str> = [
                    ("s3_endpoint", &self.s3_endpoint),
                    ("s3_bucket", &self.s3_bucket),
                    ("s3_region", &self.s3_region),
                    ("s3_access_key_id", &self.s3_access_key_id),
                    ("s3_secret_access_key", &self.s3_secret_access_key),
                ]
                .into_iter()
                .filter(|(_, value)| value.trim().is_empty())
                .map(|(name, _)| name)
                .collect();
                if !missing.is_empty() {
                    return Err(SettingsError::Invalid(format!(
                        "blob_store = \"s3\" needs {}",
                        missing.join(", ")
                    )));
                }
                // S3 refuses presigned URLs valid for longer than 7 days.
                if !(1..=7 * 24 * 3600).contains(&self.portal_download_ttl_secs) {
                    return Err(SettingsError::Invalid(
                        "portal_download_ttl_secs: an S3 presigned URL lasts 1 s to 7 days".into(),
                    ));
                }
                for (name, value) in [
                    ("s3_endpoint", &self.s3_endpoint),
                    ("s3_web_base_url", &self.s3_web_base_url),
                ] {
                    if !value.is_empty() && !is_http_url(value) {
                        return Err(SettingsError::Invalid(format!(
                            "{name}: not an http(s) URL: {value}"
                        )));
                    }
                }
                Ok(())
            }
            other => Err(SettingsError::Invalid(format!(
                "blob_store: expected \"local\" or \"s3\", got \"{other}\""
            ))),
        }
    }

    pub fn listen_addr(&self) -> Result<SocketAddr, SettingsError> {
        self.listen
            .parse()
            .map_err(|_| SettingsError::Invalid(format!("listen: not an address: {}", self.listen)))
    }

    pub fn database_kind(&self) -> &'static str {
        if self.database_url.starts_with("postgres") {
            "postgres"
        } else {
            "sqlite"
        }
    }

    pub fn cors_origin_list(&self) -> Vec<String> {
        comma_list(&self.cors_origins)
    }

    pub fn metrics_allow_list(&self) -> Result<Vec<IpNet>, SettingsError> {
        parse_nets("metrics_allow", &self.metrics_allow)
    }

    pub fn trusted_proxy_list(&self) -> Result<Vec<IpNet>, SettingsError> {
        parse_nets("trusted_proxies", &self.trusted_proxies)
    }

    /// Cookies are `Secure` when the service is reached over https.
    pub fn secure_cookies(&self) -> bool {
        self.public_url.starts_with("https://")
    }

    pub fn outbound_private_network_list(&self) -> Result<Vec<IpNet>, SettingsError> {
        parse_nets("outbound_private_networks", &self.outbound_private_networks)
    }

    pub fn connector_pin_list(&self) -> Result<Vec<(String, String)>, SettingsError> {
        comma_list(&self.connector_pins)
            .into_iter()
            .map(|pin| {
                pin.split_once('=')
                    .map(|(id, sha)| (id.trim().to_string(), sha.trim().to_ascii_lowercase()))
                    .filter(|(id, sha)| !id.is_empty() && sha.len() == 64)
                    .ok_or_else(|| {
                        SettingsError::Invalid(format!(
                            "connector_pins: {pin} is not id=<sha256 hex>"
                        ))
                    })
            })
            .collect()
    }

    pub fn plugin_plain_http_host_list(&self) -> Vec<String> {
        comma_list(&self.plugin_plain_http_hosts)
    }

    pub fn smtp_enabled(&self) -> bool {
        !self.smtp_host.is_empty()
    }
}

fn is_http_url(raw: &str) -> bool {
    url::Url::parse(raw)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

fn comma_list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn parse_nets(name: &str, raw: &str) -> Result<Vec<IpNet>, SettingsError> {
    comma_list(raw)
        .into_iter()
        .map(|item| {
            item.parse::<IpNet>()
                .or_else(|_| item.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    SettingsError::Invalid(format!("{name}: not an address or range: {item}"))
                })
        })
        .collect()
}

/// Settings that were renamed: a deployment still naming the old key
/// would otherwise start quietly on the default (a local store on one
/// machine's disk instead of its bucket).
const RENAMED: &[(&str, &str)] = &[
    ("portal_store", "blob_store"),
    ("portal_s3_endpoint", "s3_endpoint"),
    ("portal_s3_bucket", "s3_bucket"),
    ("portal_s3_region", "s3_region"),
    ("portal_s3_access_key_id", "s3_access_key_id"),
    ("portal_s3_secret_access_key", "s3_secret_access_key"),
    ("portal_s3_web_base_url", "s3_web_base_url"),
];

fn refuse_renamed(figment: &Figment) -> Result<(), SettingsError> {
    for (old, new) in RENAMED {
        if figment.find_value(old).is_ok() {
            return Err(SettingsError::Invalid(format!(
                "`{old}` is now `{new}` (CAIRN_{}): one store keeps uploads, reports and \
                 portal documents",
                new.to_uppercase()
            )));
        }
    }
    Ok(())
}

/// Reads `data_dir/name`, or writes 32 random bytes (hex) there with mode 0600.
fn generated_secret(data_dir: &Path, name: &str) -> Result<String, SettingsError> {
    let path = data_dir.join(name);
    let io_err = |source| SettingsError::DataDir {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(existing) if !existing.trim().is_empty() => return Ok(existing.trim().to_string()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(e)),
    }
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let secret = hex::encode(bytes);
    write_private_file(&path, &secret).map_err(io_err)?;
    Ok(secret)
}

#[cfg(unix)]
fn write_private_file(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents.as_bytes())
}

#[cfg(not(unix))]
fn write_private_file(path: &Path, contents: &str) -> std::io::Result<()> {
    std::fs::write(path, contents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limit_store_is_checked_at_startup() {
        let with = |store: &str, redis: &str| Settings {
            rate_limit_store: store.into(),
            redis_url: redis.into(),
            ..Settings::default()
        };
        for (store, redis, ok) in [
            ("local", "", true),
            ("database", "", true),
            ("redis", "redis://127.0.0.1:6379", true),
            ("redis", "", false),
            ("redis", "127.0.0.1:6379", false),
            ("memcached", "", false),
        ] {
            let checked = with(store, redis).check_rate_limit_store();
            assert_eq!(checked.is_ok(), ok, "{store} {redis}: {checked:?}");
        }
    }

    #[test]
    fn a_renamed_setting_is_refused_with_its_new_name() {
        let defaults = || Figment::from(Serialized::defaults(Settings::default()));
        assert!(refuse_renamed(&defaults()).is_ok());
        let old = defaults().merge(Serialized::default("portal_s3_bucket", "docs"));
        match refuse_renamed(&old) {
            Err(SettingsError::Invalid(message)) => {
                assert!(message.contains("CAIRN_S3_BUCKET"), "{message}")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn generated_secrets_are_private_and_reused() {
        let dir = std::env::temp_dir().join(format!("cairn-settings-{}", uuid::Uuid::new_v4()));
        let settings = Settings {
            data_dir: dir.clone(),
            ..Settings::default()
        };
        let first = settings.clone().prepare().unwrap();
        let second = settings.prepare().unwrap();
        assert_eq!(first.jwt_secret, second.jwt_secret);
        assert_eq!(first.jwt_secret.len(), 64);
        assert_ne!(first.jwt_secret, first.encryption_key);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join("jwt_secret"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_incomplete_s3_store_is_refused_at_startup() {
        let data_dir =
            std::env::temp_dir().join(format!("cairn-settings-{}", uuid::Uuid::new_v4()));
        let s3 = Settings {
            data_dir: data_dir.clone(),
            blob_store: "s3".into(),
            s3_endpoint: "http://127.0.0.1:9000".into(),
            s3_bucket: "docs".into(),
            s3_access_key_id: "AKID".into(),
            s3_secret_access_key: "secret".into(),
            ..Settings::default()
        };
        assert!(s3.clone().prepare().is_ok());
        let no_secret = Settings {
            s3_secret_access_key: String::new(),
            ..s3.clone()
        };
        match no_secret.prepare() {
            Err(SettingsError::Invalid(message)) => {
                assert!(message.contains("s3_secret_access_key"), "{message}")
            }
            other => panic!("expected a settings error, got {other:?}"),
        }
        let no_bucket = Settings {
            s3_bucket: " ".into(),
            ..s3.clone()
        };
        assert!(matches!(
            no_bucket.prepare(),
            Err(SettingsError::Invalid(_))
        ));
        let bad_endpoint = Settings {
            s3_endpoint: "127.0.0.1:9000".into(),
            ..s3.clone()
        };
        assert!(matches!(
            bad_endpoint.prepare(),
            Err(SettingsError::Invalid(_))
        ));
        let too_long = Settings {
            portal_download_ttl_secs: 8 * 24 * 3600,
            ..s3.clone()
        };
        assert!(matches!(too_long.prepare(), Err(SettingsError::Invalid(_))));
        let unknown = Settings {
            blob_store: "ftp".into(),
            ..s3
        };
        assert!(matches!(unknown.prepare(), Err(SettingsError::Invalid(_))));
        let _ = std::fs::remove_dir_all(data_dir);
    }

    #[test]
    fn bad_listen_address_is_refused() {
        let settings = Settings {
            listen: "nowhere".into(),
            data_dir: std::env::temp_dir().join(format!("cairn-settings-{}", uuid::Uuid::new_v4())),
            ..Settings::default()
        };
        assert!(matches!(settings.prepare(), Err(SettingsError::Invalid(_))));
    }
}
