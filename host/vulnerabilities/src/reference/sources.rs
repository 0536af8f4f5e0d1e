//! The online sources of the reference store, each a durable job (and a
//! `cairn vuln sync` command): NVD CVE API 2.0, CISA KEV, FIRST EPSS. Every
//! request goes through the plugin host's outbound path (allow-list of the
//! configured host, plain http only where the operator granted it, size
//! cap, 429 waits).

use std::io::Read;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::reference::{feeds, records, store};
use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_core::settings::Settings;
use cairn_jobs::schedule::Schedule;
use cairn_jobs::{JobContext, JobFailure, JobHandler};
use cairn_plugins::outbound::{AddressRule, HostPolicy, Outbound};
use cairn_plugins::CallScope;

pub const NVD: &str = "nvd";
pub const KEV: &str = "kev";
pub const EPSS: &str = "epss";
pub const SOURCES: [&str; 3] = [NVD, KEV, EPSS];

/// The tenant that owns reference jobs (it has no members).
pub fn reference_tenant() -> TenantId {
    TenantId("00000000-0000-0000-0000-000000000000".into())
}

pub fn job_kind(source: &str) -> String {
    format!("vuln_{source}_sync")
}

/// NVD's limit on one `lastModStartDate`/`lastModEndDate` window.
const MAX_WINDOW_MS: i64 = 120 * 86_400_000;
/// Retries of one NVD request refused with 403, 429 or 503.
const NVD_RETRIES: u32 = 6;
/// The first wait of a source job on a 429 or 503.
const SYNC_BACKOFF: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{0}")]
    Upstream(String),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("stopped")]
    Stopped,
}

/// Settings the sources read, copied out so a job owns them.
#[derive(Clone)]
pub struct SourceConfig {
    pub nvd_api_url: String,
    pub nvd_api_key: String,
    pub nvd_delay: Duration,
    pub nvd_results_per_page: u64,
    pub kev_url: String,
    pub epss_url: String,
    pub epss_api_url: String,
    pub plain_http_hosts: Vec<String>,
    pub addresses: AddressRule,
    pub timeout: Duration,
    pub max_response_bytes: usize,
}

impl SourceConfig {
    pub fn from_settings(settings: &Settings) -> SourceConfig {
        let delay = match (
            settings.nvd_request_delay_ms,
            settings.nvd_api_key.is_empty(),
        ) {
            (0, true) => 6_000,
            (0, false) => 600,
            (ms, _) => ms,
        };
        SourceConfig {
            nvd_api_url: settings.nvd_api_url.clone(),
            nvd_api_key: settings.nvd_api_key.clone(),
            nvd_delay: Duration::from_millis(delay),
            nvd_results_per_page: settings.nvd_results_per_page.clamp(1, 2000),
            kev_url: settings.kev_url.clone(),
            epss_url: settings.epss_url.clone(),
            epss_api_url: settings.epss_api_url.clone(),
            plain_http_hosts: settings.plugin_plain_http_host_list(),
            // Checked when the settings were prepared.
            addresses: AddressRule::new(
                settings.outbound_private_network_list().unwrap_or_default(),
            ),
            timeout: Duration::from_secs(settings.plugin_http_timeout_secs.max(60)),
            // EPSS and NVD pages are larger than connector pages.
            max_response_bytes: settings.plugin_max_response_mb.max(128) * 1024 * 1024,
        }
    }

    /// The outbound path to `url`; a 429 or 503 is waited out from
    /// `backoff`, doubling.
    fn outbound(&self, url: &str, backoff: Duration) -> Result<(Outbound, url::Url), SourceError> {
        let parsed = url::Url::parse(url)
            .map_err(|e| SourceError::Upstream(format!("{url} is not a URL: {e}")))?;
        let policy =
            HostPolicy::for_urls(&[&parsed], &self.plain_http_hosts, self.addresses.clone());
        Ok((
            Outbound::new(policy, None, self.timeout, self.max_response_bytes, backoff),
            parsed,
        ))
    }
}

struct Response {
    status: u16,
    body: Vec<u8>,
}

async fn get(
    outbound: &Outbound,
    url: &url::Url,
    headers: Vec<(String, String)>,
) -> Result<Response, SourceError> {
    use cairn_plugins::runtime::connector_world::cairn::plugin::types as wit;
    let scope = CallScope {
        plugin: "vulnerabilities".into(),
        tenant_id: None,
        job_id: None,
    };
    let request = wit::HttpRequest {
        method: "GET".into(),
        url: url.to_string(),
        headers: headers
            .into_iter()
            .map(|(name, value)| wit::Header { name, value })
            .collect(),
        body: vec![],
    };
    match outbound.send(&scope, request).await {
        Ok(response) => Ok(Response {
            status: response.status,
            body: response.body,
        }),
        Err(wit::PluginError::RateLimited(secs)) => Ok(Response {
            status: 429,
            body: format!("rate limited for {secs} s").into_bytes(),
        }),
        Err(err) => Err(SourceError::Upstream(cairn_plugins::outbound::describe(
            &err,
        ))),
    }
}

/// What one run of a source did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct SourceRun {
    pub requests: u64,
    pub records: u64,
    pub written: u64,
    pub retries: u64,
}

/// Reports a source's progress (a job's, or nothing for the CLI).
#[async_trait]
pub trait Progress: Send + Sync {
    async fn page(&self, done: u64, total: u64, checkpoint: &Value) -> Result<(), SourceError>;
    fn resume_from(&self) -> Option<Value>;
    fn stop_token(&self) -> CancellationToken;
}

fn nvd_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3f+00:00")
        .to_string()
}

/// Loads NVD: everything the first time, then what changed since the last
/// run, in windows of at most 120 days, page by page, resuming from the
/// checkpoint of an interrupted run.
pub async fn sync_nvd(
    db: &Db,
    config: &SourceConfig,
    progress: &dyn Progress,
) -> Result<SourceRun, SourceError> {
    let (outbound, base) = config.outbound(&config.nvd_api_url, SYNC_BACKOFF)?;
    let state = store::source_state(db, NVD).await?;
    let started = cairn_core::db::now_ms();
    let since: Option<i64> = state
        .as_ref()
        .and_then(|s| s.position.as_deref())
        .and_then(records::parse_time);
    // (window start, window end) pairs; `None` = a full load.
    let mut windows: Vec<Option<(i64, i64)>> = match since {
        None => vec![None],
        Some(from) => {
            let mut out = vec![];
            let mut start = from;
            while start < started {
                let end = (start + MAX_WINDOW_MS).min(started);
                out.push(Some((start, end)));
                start = end;
            }
            out
        }
    };
    let resume = progress.resume_from();
    let mut start_index = 0u64;
    if let Some(checkpoint) = &resume {
        let window = checkpoint["window"].as_array().map(|w| {
            (
                w.first().and_then(Value::as_i64).unwrap_or(0),
                w.last().and_then(Value::as_i64).unwrap_or(0),
            )
        });
        if let Some(position) = windows.iter().position(|w| *w == window) {
            windows.drain(..position);
            start_index = checkpoint["start_index"].as_u64().unwrap_or(0);
        }
    }
    let mut run = SourceRun::default();
    let mut per_page = config.nvd_results_per_page;
    for window in windows {
        loop {
            let mut url = base.clone();
            {
                let mut query = url.query_pairs_mut();
                query.append_pair("resultsPerPage", &per_page.to_string());
                query.append_pair("startIndex", &start_index.to_string());
                if let Some((from, to)) = window {
                    query.append_pair("lastModStartDate", &nvd_time(from));
                    query.append_pair("lastModEndDate", &nvd_time(to));
                }
            }
            let mut headers = vec![];
            if !config.nvd_api_key.is_empty() {
                headers.push(("apiKey".to_string(), config.nvd_api_key.clone()));
            }
            if run.requests > 0 {
                pause(config.nvd_delay, &progress.stop_token()).await?;
            }
            let mut attempt = 0;
            let response = loop {
                run.requests += 1;
                let response = get(&outbound, &url, headers.clone()).await?;
                match response.status {
                    200 => break response,
                    403 | 429 | 503 | 502 | 504 if attempt < NVD_RETRIES => {
                        attempt += 1;
                        run.retries += 1;
                        tracing::info!(
                            status = response.status,
                            attempt,
                            "NVD refused a request; backing off"
                        );
                        pause(
                            config.nvd_delay * 2u32.pow(attempt.min(5)),
                            &progress.stop_token(),
                        )
                        .await?;
                    }
                    // Pages larger than NVD will serve today come back 404
                    // or 400: ask for 1,000.
                    400 | 404 if per_page > 1000 => {
                        per_page = 1000;
                        run.retries += 1;
                        let mut pairs: Vec<(String, String)> = url
                            .query_pairs()
                            .map(|(k, v)| (k.into_owned(), v.into_owned()))
                            .collect();
                        for (k, v) in &mut pairs {
                            if k == "resultsPerPage" {
                                *v = "1000".into();
                            }
                        }
                        url.query_pairs_mut().clear().extend_pairs(pairs);
                    }
                    status => {
                        return Err(SourceError::Upstream(format!(
                            "NVD answered {status} after {attempt} retries"
                        )))
                    }
                }
            };
            let mut page: Value = serde_json::from_slice(&response.body)
                .map_err(|e| SourceError::Upstream(format!("NVD page is not JSON: {e}")))?;
            let total = page["totalResults"].as_u64().unwrap_or(0);
            let items = match page["vulnerabilities"].take() {
                Value::Array(items) => items,
                _ => vec![],
            };
            let count = items.len() as u64;
            let mut parsed = Vec::with_capacity(items.len());
            for mut item in items {
                match records::from_nvd(item["cve"].take()) {
                    Ok(record) => parsed.push(record),
                    Err(err) => tracing::warn!(error = %err, "NVD record skipped"),
                }
            }
            run.records += count;
            run.written += store::write_cves(db, &parsed).await?.written;
            start_index += count;
            let checkpoint = json!({
                "window": window.map(|(a, b)| vec![a, b]),
                "start_index": start_index,
            });
            progress.page(start_index, total, &checkpoint).await?;
            if count == 0 || start_index >= total {
                break;
            }
        }
        start_index = 0;
    }
    store::set_source_state(
        db,
        NVD,
        Some(&nvd_time(started)),
        &json!({"last_run": run, "results_per_page": per_page}),
    )
    .await?;
    Ok(run)
}

/// Retries of an on-demand lookup, and its first wait on a 429 or 503: a
/// person is waiting for the answer.
const LOOKUP_RETRIES: u32 = 2;
const LOOKUP_BACKOFF: Duration = Duration::from_millis(250);

/// One NVD CVE API request for a person or a tenant's job: a refusal
/// (403, 429, 503) is retried twice after a short pause, then reported.
/// `None` when NVD answers that nothing fits (404, or 400 for some
/// malformed ids).
async fn nvd_request(
    config: &SourceConfig,
    query: &[(&str, String)],
) -> Result<Option<Value>, SourceError> {
    let (outbound, mut url) = config.outbound(&config.nvd_api_url, LOOKUP_BACKOFF)?;
    url.query_pairs_mut()
        .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
    let mut headers = vec![];
    if !config.nvd_api_key.is_empty() {
        headers.push(("apiKey".to_string(), config.nvd_api_key.clone()));
    }
    let mut attempt = 0;
    let response = loop {
        let response = get(&outbound, &url, headers.clone()).await?;
        match response.status {
            200 => break response,
            404 | 400 => return Ok(None),
            403 | 429 | 503 | 502 | 504 if attempt < LOOKUP_RETRIES => {
                attempt += 1;
                let wait = config.nvd_delay.min(Duration::from_secs(2)) * attempt;
                tokio::time::sleep(wait).await;
            }
            status => {
                return Err(SourceError::Upstream(format!(
                    "NVD answered {status} after {attempt} retries"
                )))
            }
        }
    };
    serde_json::from_slice(&response.body)
        .map(Some)
        .map_err(|e| SourceError::Upstream(format!("NVD answer is not JSON: {e}")))
}

/// Fetches one CVE from NVD (`?cveId=`) and stores it: `true` when NVD
/// has it, `false` when NVD answers that it does not.
pub async fn nvd_lookup(db: &Db, config: &SourceConfig, cve_id: &str) -> Result<bool, SourceError> {
    let Some(page) = nvd_request(config, &[("cveId", cve_id.to_string())]).await? else {
        return Ok(false);
    };
    let Some(item) = page["vulnerabilities"]
        .as_array()
        .and_then(|items| items.first())
    else {
        return Ok(false);
    };
    let record = records::from_nvd(item["cve"].clone())
        .map_err(|e| SourceError::Upstream(format!("NVD record unreadable: {e}")))?;
    if !record.id.eq_ignore_ascii_case(cve_id) {
        return Err(SourceError::Upstream(format!(
            "NVD answered {} for {cve_id}",
            record.id
        )));
    }
    store::write_cves(db, std::slice::from_ref(&record)).await?;
    Ok(true)
}

/// What to ask NVD's CVE API for: CVEs of a CPE vendor (and product), or
/// those whose description holds every word of a keyword search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvdSearch {
    Cpe {
        vendor: String,
        product: Option<String>,
    },
    Keyword(String),
}

impl NvdSearch {
    fn query(&self) -> (&'static str, String) {
        match self {
            NvdSearch::Cpe { vendor, product } => (
                "virtualMatchString",
                match product {
                    Some(product) => format!("cpe:2.3:*:{vendor}:{product}"),
                    None => format!("cpe:2.3:*:{vendor}"),
                },
            ),
            NvdSearch::Keyword(words) => ("keywordSearch", words.clone()),
        }
    }
}

/// One page of an NVD search, its records stored.
#[derive(Debug, Default)]
pub struct SearchedPage {
    /// (CVE id, last modified in Unix ms) of each record of the page.
    pub cves: Vec<(String, i64)>,
    /// Records of the whole search.
    pub total: u64,
    /// Records new to the CVE store or newer than its copy.
    pub written: u64,
}

/// Asks NVD for one page of `search` from `start_index`, and stores its
/// records in the CVE store (as a sync would).
pub async fn nvd_search_page(
    db: &Db,
    config: &SourceConfig,
    search: &NvdSearch,
    start_index: u64,
    per_page: u64,
) -> Result<SearchedPage, SourceError> {
    let (key, value) = search.query();
    let query = [
        (key, value),
        ("resultsPerPage", per_page.clamp(1, 2000).to_string()),
        ("startIndex", start_index.to_string()),
    ];
    let Some(page) = nvd_request(config, &query).await? else {
        return Ok(SearchedPage::default());
    };
    let mut parsed = vec![];
    for item in page["vulnerabilities"].as_array().into_iter().flatten() {
        match records::from_nvd(item["cve"].clone()) {
            Ok(record) => parsed.push(record),
            Err(err) => tracing::warn!(error = %err, "NVD record skipped"),
        }
    }
    let written = store::write_cves(db, &parsed).await?.written;
    Ok(SearchedPage {
        written,
        cves: parsed
            .iter()
            .map(|r| (r.id.clone(), r.last_modified))
            .collect(),
        total: page["totalResults"].as_u64().unwrap_or(0),
    })
}

async fn pause(wait: Duration, stop: &CancellationToken) -> Result<(), SourceError> {
    tokio::select! {
        _ = tokio::time::sleep(wait) => Ok(()),
        _ = stop.cancelled() => Err(SourceError::Stopped),
    }
}

async fn fetch_whole(config: &SourceConfig, url: &str) -> Result<Vec<u8>, SourceError> {
    let (outbound, url) = config.outbound(url, SYNC_BACKOFF)?;
    let response = get(&outbound, &url, vec![]).await?;
    if response.status != 200 {
        return Err(SourceError::Upstream(format!(
            "{} answered {}",
            url.host_str().unwrap_or(""),
            response.status
        )));
    }
    let mut body = response.body;
    if body.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        flate2::read::MultiGzDecoder::new(&body[..])
            .take(1 << 30)
            .read_to_end(&mut plain)
            .map_err(|e| SourceError::Upstream(format!("bad gzip: {e}")))?;
        body = plain;
    }
    Ok(body)
}

pub async fn sync_kev(db: &Db, config: &SourceConfig) -> Result<SourceRun, SourceError> {
    let body = fetch_whole(config, &config.kev_url).await?;
    let entries = feeds::parse_kev(&body)
        .map_err(|e| SourceError::Upstream(format!("KEV catalog unreadable: {e}")))?;
    let written = store::write_kev(db, &entries).await?;
    let run = SourceRun {
        requests: 1,
        records: entries.len() as u64,
        written,
        retries: 0,
    };
    store::set_source_state(db, KEV, None, &json!({"last_run": run})).await?;
    Ok(run)
}

/// Asks FIRST's EPSS API for one CVE's score (`?cve=`) and stores it:
/// the score, or `None` when FIRST has none.
pub async fn epss_lookup(
    db: &Db,
    config: &SourceConfig,
    cve_id: &str,
) -> Result<Option<feeds::EpssScore>, SourceError> {
    let (outbound, mut url) = config.outbound(&config.epss_api_url, LOOKUP_BACKOFF)?;
    url.query_pairs_mut().append_pair("cve", cve_id);
    let response = get(
        &outbound,
        &url,
        vec![("Accept".into(), "application/json".into())],
    )
    .await?;
    if response.status != 200 {
        return Err(SourceError::Upstream(format!(
            "EPSS answered {}",
            response.status
        )));
    }
    let answer: Value = serde_json::from_slice(&response.body)
        .map_err(|e| SourceError::Upstream(format!("EPSS answer is not JSON: {e}")))?;
    // FIRST sends the numbers as strings.
    let number = |v: &Value| {
        v.as_str()
            .and_then(|s| s.parse::<f64>().ok())
            .or(v.as_f64())
    };
    let Some(entry) = answer["data"].as_array().into_iter().flatten().find(|e| {
        e["cve"]
            .as_str()
            .is_some_and(|c| c.eq_ignore_ascii_case(cve_id))
    }) else {
        return Ok(None);
    };
    let (Some(score), Some(percentile)) = (number(&entry["epss"]), number(&entry["percentile"]))
    else {
        return Err(SourceError::Upstream("EPSS entry without a score".into()));
    };
    let date = entry["date"].as_str().unwrap_or_default().to_string();
    let score = feeds::EpssScore {
        cve_id: cve_id.to_string(),
        score,
        percentile,
    };
    store::write_epss(db, &date, std::slice::from_ref(&score)).await?;
    Ok(Some(score))
}

pub async fn sync_epss(db: &Db, config: &SourceConfig) -> Result<SourceRun, SourceError> {
    let body = fetch_whole(config, &config.epss_url).await?;
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let (date, scores) = feeds::parse_epss(&body[..], &today)
        .map_err(|e| SourceError::Upstream(format!("EPSS file unreadable: {e}")))?;
    let written = store::write_epss(db, &date, &scores).await?;
    let run = SourceRun {
        requests: 1,
        records: scores.len() as u64,
        written,
        retries: 0,
    };
    store::set_source_state(db, EPSS, Some(&date), &json!({"last_run": run})).await?;
    Ok(run)
}

/// A job's progress: fenced progress and checkpoint writes.
struct JobProgress<'a>(&'a JobContext);

#[async_trait]
impl Progress for JobProgress<'_> {
    async fn page(&self, done: u64, total: u64, checkpoint: &Value) -> Result<(), SourceError> {
        self.0
            .progress("nvd", done as i64, total as i64, "CVE records", "")
            .await
            .map_err(|_| SourceError::Stopped)?;
        self.0
            .save_checkpoint(checkpoint)
            .await
            .map_err(|_| SourceError::Stopped)
    }
    fn resume_from(&self) -> Option<Value> {
        self.0.checkpoint().cloned()
    }
    fn stop_token(&self) -> CancellationToken {
        self.0.stop_token().clone()
    }
}

/// The job of one source.
pub struct SourceHandler {
    pub source: &'static str,
    pub config: SourceConfig,
    /// How often the source loads when it works.
    pub interval: Duration,
}

/// How often `source` loads, from the settings.
pub fn interval(settings: &Settings, source: &str) -> Duration {
    Duration::from_secs(match source {
        NVD => settings.nvd_interval_secs,
        KEV => settings.kev_interval_secs,
        _ => settings.epss_interval_secs,
    })
}

#[async_trait]
impl JobHandler for SourceHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        let db = ctx.db();
        let result = match self.source {
            NVD => sync_nvd(db, &self.config, &JobProgress(ctx)).await,
            KEV => sync_kev(db, &self.config).await,
            _ => sync_epss(db, &self.config).await,
        };
        let source = self.source;
        let outcome = match result {
            Ok(run) => {
                let failed_before =
                    crate::reference::attempts::succeeded(db, source, self.interval).await?;
                if failed_before > 0 {
                    tracing::info!(
                        source,
                        records = run.records,
                        written = run.written,
                        failed_before,
                        "CVE source loads again"
                    );
                } else {
                    tracing::info!(
                        source,
                        records = run.records,
                        written = run.written,
                        "CVE source loaded"
                    );
                }
                if source == NVD && run.written > 0 {
                    crate::request_rescans(db).await?;
                }
                Ok(())
            }
            Err(SourceError::Stopped) => Err(JobFailure::Failed("stopped".into())),
            // A database error is this machine's (a lock another process on
            // the same SQLite file held, say): the queue tries again soon,
            // as for any job. The growing pause below spares the upstream.
            Err(SourceError::Db(err)) => Err(err.into()),
            Err(err) => {
                let error = err.to_string();
                let (failures, pause) =
                    crate::reference::attempts::failed(db, source, &error, self.interval).await?;
                // Once when it starts failing; then quietly, with backoff,
                // until it loads again.
                if failures == 1 {
                    tracing::warn!(source, %error, next_attempt_in_secs = pause.as_secs(),
                        "CVE source failed to load; retrying with a growing pause");
                } else {
                    tracing::debug!(source, %error, failures, next_attempt_in_secs = pause.as_secs(),
                        "CVE source still failing");
                }
                Err(JobFailure::Reported(error))
            }
        };
        record_gauges(db).await;
        outcome
    }
}

/// The CVE sources' figures for the metrics: age since the last success,
/// records held, failing or not. Read after every load and every minute.
pub async fn record_gauges(db: &Db) {
    use cairn_core::telemetry;
    let now = cairn_core::db::now_ms();
    // A source that never loaded is as old as the database: the age series
    // exists from the start, so "CVE data too old" also alerts on a
    // service that never loaded any.
    let set_up_at = db.set_up_at().await.ok().flatten();
    for source in SOURCES {
        // Only the source's own table: the match rows and CPE dictionary
        // are far larger and not needed here.
        let records = match store::count(db, records_key(source)).await {
            Ok(records) => records,
            Err(err) => {
                tracing::debug!(error = %err, "CVE source figures not read");
                return;
            }
        };
        metrics::gauge!(telemetry::CVE_SOURCE_RECORDS, "source" => source).set(records as f64);
        let attempts = crate::reference::attempts::of(db, source)
            .await
            .ok()
            .flatten();
        let last_success = match &attempts {
            Some(a) => a.last_success_at,
            None => store::source_state(db, source)
                .await
                .ok()
                .flatten()
                .map(|s| s.updated_at),
        };
        if let Some(at) = last_success.or(set_up_at) {
            metrics::gauge!(telemetry::CVE_SOURCE_AGE, "source" => source)
                .set(((now - at).max(0) / 1000) as f64);
        }
        let failing = attempts.is_some_and(|a| a.failures > 0);
        metrics::gauge!(telemetry::CVE_SOURCE_FAILING, "source" => source).set(if failing {
            1.0
        } else {
            0.0
        });
    }
}

/// Which count of `reference::counts` a source fills.
pub fn records_key(source: &str) -> &'static str {
    match source {
        NVD => "cves",
        KEV => "kev",
        _ => "epss",
    }
}

/// Enqueues each source that is due: never tried, its interval passed
/// since it last loaded, or its backoff over after a failure.
pub async fn enqueue_due(db: &Db, settings: &Settings) -> sqlx::Result<()> {
    let now = cairn_core::db::now_ms();
    for source in SOURCES {
        let due = match crate::reference::attempts::of(db, source).await? {
            Some(attempts) => now >= attempts.next_attempt_at,
            // Loaded before attempts were kept (or by `cairn vuln import`).
            None => store::source_state(db, source)
                .await?
                .map(|s| s.updated_at)
                .is_none_or(|at| now - at >= interval(settings, source).as_millis() as i64),
        };
        if due {
            cairn_jobs::enqueue(db, &reference_tenant(), &job_kind(source), &json!({})).await?;
        }
    }
    Ok(())
}

/// The CVE sources' gauges, at start and every minute, in every process
/// (each answers its own `/metrics`), whether or not the service loads the
/// sources itself.
pub fn gauges(db: Db) -> Schedule {
    Schedule::every("CVE source gauges", Duration::from_secs(60), move || {
        let db = db.clone();
        async move {
            record_gauges(&db).await;
            Ok::<(), std::convert::Infallible>(())
        }
    })
    .per_process()
}

/// The schedule: checks every minute which sources are due.
pub fn schedule(db: Db, settings: Settings) -> Schedule {
    Schedule::every(
        "vulnerability sources",
        Duration::from_secs(60),
        move || {
            let (db, settings) = (db.clone(), settings.clone());
            async move { enqueue_due(&db, &settings).await }
        },
    )
}
