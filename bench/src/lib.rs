//! Shared parts of the benchmark programs.

use std::time::{Duration, Instant};

use cairn_core::db::{Backend, Db};
use cairn_core::ids::TenantId;
use cairn_integrations::storage::upsert_rows;
use cairn_plugins::{InventoryRow, MappedRow};
use serde_json::{json, Value};
use sqlx::{Connection, Executor, PgConnection};

/// A fresh database of the named backend (`sqlite` or `postgres`), migrated.
/// PostgreSQL comes from `CAIRN_BENCH_POSTGRES_URL` (default: the local
/// server, user postgres).
pub async fn fresh_database(backend: &str) -> anyhow::Result<(Db, String)> {
    let url = match backend {
        "sqlite" => {
            let dir =
                std::env::temp_dir().join(format!("cairn-bench-{}", uuid::Uuid::new_v4().simple()));
            std::fs::create_dir_all(&dir)?;
            format!("sqlite://{}?mode=rwc", dir.join("bench.db").display())
        }
        "postgres" => {
            let admin = std::env::var("CAIRN_BENCH_POSTGRES_URL")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
            let name = format!("cairn_bench_{}", uuid::Uuid::new_v4().simple());
            let mut conn = PgConnection::connect(&admin).await?;
            conn.execute(format!("CREATE DATABASE {name}").as_str())
                .await?;
            let (base, _) = admin.rsplit_once('/').unwrap_or((&admin, ""));
            format!("{base}/{name}")
        }
        other => anyhow::bail!("unknown backend {other}; use sqlite or postgres"),
    };
    let connections = std::env::var("BENCH_CONNECTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let db = Db::connect(&url, connections).await?;
    db.migrate().await?;
    Ok((db, url))
}

/// Removes a database made by [`fresh_database`].
pub async fn drop_database(db: Db, url: &str) {
    db.close().await;
    if let Some(path) = url.strip_prefix("sqlite://") {
        let file = path.split('?').next().unwrap_or(path);
        if let Some(dir) = std::path::Path::new(file).parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    } else if let Some((base, name)) = url.rsplit_once('/') {
        let admin = std::env::var("CAIRN_BENCH_POSTGRES_URL")
            .unwrap_or_else(|_| format!("{base}/postgres"));
        if let Ok(mut conn) = PgConnection::connect(&admin).await {
            let _ = conn
                .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                .await;
        }
    }
}

/// Peak resident memory of this process so far, in MiB (Linux).
pub fn peak_rss_mib() -> f64 {
    peak_rss_mib_of("self")
}

/// Peak resident memory of process `pid` (or `self`) so far, in MiB (Linux).
pub fn peak_rss_mib_of(pid: &str) -> f64 {
    status_mib(pid, "VmHWM:")
}

/// Resident memory of this process now, in MiB (Linux).
pub fn rss_mib() -> f64 {
    status_mib("self", "VmRSS:")
}

/// Starts [`peak_rss_mib`] over from the memory resident now (Linux's
/// `clear_refs`), so a figure covers one phase rather than the seeding
/// before it.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn status_mib(pid: &str, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// CPU time (user and system) this process has used so far, in seconds
/// (Linux). A shared machine's wall-clock figures swing with its
/// neighbours; the CPU a phase took shows what a change saved.
pub fn cpu_seconds() -> f64 {
    process_times("self").map_or(0.0, |t| t.own)
}

/// CPU seconds of the PostgreSQL server on this machine so far: every
/// `postgres` process, and through the postmaster's account of its
/// children, the backends that have exited. `None` when no server process
/// is visible here (a remote server).
pub fn postgres_cpu_seconds() -> Option<f64> {
    let mut total = None;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || !is_postgres(&pid) {
            continue;
        }
        let Some(times) = process_times(&pid) else {
            continue;
        };
        let postmaster = !is_postgres(&times.parent);
        *total.get_or_insert(0.0) += times.own + if postmaster { times.children } else { 0.0 };
    }
    total
}

fn is_postgres(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "postgres")
}

struct ProcessTimes {
    parent: String,
    own: f64,
    /// Of the children it has waited for.
    children: f64,
}

fn process_times(pid: &str) -> Option<ProcessTimes> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name: state, ppid, ..., utime (12th),
    // stime, cutime, cstime; in clock ticks, which Linux fixes at 100 a
    // second for user space.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    Some(ProcessTimes {
        parent: fields.get(1)?.to_string(),
        own: (ticks(11)? + ticks(12)?) / 100.0,
        children: (ticks(13)? + ticks(14)?) / 100.0,
    })
}

/// The `p` quantile (0 to 1) of `samples`, in milliseconds (nearest rank).
pub fn percentile_ms(samples: &mut [std::time::Duration], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort();
    let index = ((samples.len() as f64 * p).ceil() as usize).clamp(1, samples.len()) - 1;
    samples[index].as_secs_f64() * 1000.0
}

/// One connector's area synced into a fresh database through the real
/// pipeline and job queue, as the sync benchmarks run it.
pub struct SyncBench {
    pub db: Db,
    pub url: String,
    pub tenant: cairn_core::ids::TenantId,
    pub plugins: std::sync::Arc<cairn_plugins::Plugins>,
    queue: std::sync::Arc<cairn_jobs::Queue>,
    kind: String,
    /// The job runtime, with the service's default threads and niceness:
    /// a sync runs there as in the service (on two cores, one thread
    /// below the request threads' priority).
    jobs: tokio::runtime::Handle,
    area: String,
    secrets: cairn_core::secrets::SecretBox,
}

impl SyncBench {
    /// A fresh `backend` database with one tenant whose `area` is
    /// configured for `connector` (`settings` and `secrets`), the component
    /// built from `component` (e.g. `connectors/edr`); loopback upstreams
    /// over plain http allowed.
    pub async fn new(
        backend: &str,
        component: &str,
        area: &str,
        connector: &str,
        settings: &serde_json::Value,
        secrets: &serde_json::Value,
    ) -> anyhow::Result<SyncBench> {
        use cairn_core::secrets::SecretBox;
        use cairn_integrations::storage;
        use cairn_integrations::sync::{SyncCaps, SyncHandler};
        // The allocator as the service sets it at start: freed memory goes
        // back to the system at once. Memory kept for a while is reused
        // without faulting fresh pages in (less CPU) but stays resident (a
        // higher peak); a sync measured without it ran faster and larger
        // than the service's.
        cairn::allocator::release_freed_memory_at_once();
        let connectors_dir = cairn_tests::components::connectors_dir(&[component], &[]);
        let (db, url) = fresh_database(backend).await?;
        let service = cairn_core::settings::Settings {
            connectors_dir,
            data_dir: std::env::temp_dir()
                .join(format!("cairn-bench-{area}-{}", std::process::id())),
            plugin_plain_http_hosts: "127.0.0.1".into(),
            outbound_private_networks: "127.0.0.0/8".into(),
            plugin_perf_map: std::env::var_os("CAIRN_PLUGIN_PERF_MAP").is_some(),
            ..Default::default()
        }
        .prepare()?;
        let plugins = std::sync::Arc::new(cairn_plugins::LivePlugins::new(
            cairn_plugins::Plugins::load(&service).await?,
        ));
        let secret_box = SecretBox::new(&service.encryption_key)?;
        let tenant = cairn_core::ids::TenantId(uuid::Uuid::now_v7().to_string());
        sqlx::query("INSERT INTO tenants (id, name, timezone, created_at, updated_at) VALUES ($1, 'bench', 'UTC', 0, 0)")
            .bind(tenant.as_str())
            .execute(&db.pool)
            .await?;
        storage::save_config(
            &db,
            &secret_box,
            &tenant,
            area,
            storage::NewConfig {
                connector,
                settings,
                secrets,
                switching: false,
            },
        )
        .await?;
        let kind = cairn_integrations::sync_kind(area);
        let mut registry = cairn_jobs::Registry::default();
        registry.register(
            &kind,
            SyncHandler {
                plugins: plugins.clone(),
                secrets: secret_box.clone(),
                area: area.into(),
                caps: SyncCaps::from_settings(&service),
                mode: cairn_integrations::sync::RunMode::Sync,
            },
            std::time::Duration::from_secs(1200),
        );
        let queue = std::sync::Arc::new(cairn_jobs::Queue::new(
            db.clone(),
            registry,
            cairn_jobs::QueueTiming::from_settings(&service),
        ));
        Ok(SyncBench {
            db,
            url,
            tenant,
            plugins: plugins.current(),
            queue,
            kind,
            jobs: cairn_jobs::runtime::handle(service.job_threads, service.job_niceness),
            area: area.into(),
            secrets: secret_box,
        })
    }

    /// Runs one sync: its seconds and outcome, or the job's error.
    pub async fn run(&self) -> anyhow::Result<(f64, cairn_jobs::RunOutcome)> {
        self.queue
            .enqueue(&self.tenant, &self.kind, &serde_json::json!({}))
            .await?;
        let started = std::time::Instant::now();
        let queue = self.queue.clone();
        let (job_id, outcome) = self
            .jobs
            .spawn(async move { queue.run_one().await })
            .await??
            .ok_or_else(|| anyhow::anyhow!("no sync job to run"))?;
        let secs = started.elapsed().as_secs_f64();
        let error: Option<String> = sqlx::query_scalar("SELECT error FROM jobs WHERE id = $1")
            .bind(&job_id)
            .fetch_one(&self.db.pool)
            .await?;
        match error {
            Some(error) => anyhow::bail!("the sync failed: {error}"),
            None => Ok((secs, outcome)),
        }
    }

    /// Seconds the connector takes to fetch every page of its streams one
    /// after another, as a sync's fetches follow each other (each cursor
    /// comes with the page before), with nothing mapped or written: the
    /// floor of a sync of this upstream.
    pub async fn fetch_alone_secs(&self) -> anyhow::Result<f64> {
        let connector = self.plugins.area_connectors(&self.area)[0].clone();
        // The stored config, secrets included, as a run reads it.
        let config =
            cairn_integrations::storage::config(&self.db, &self.secrets, &self.tenant, &self.area)
                .await?
                .ok_or_else(|| anyhow::anyhow!("the area is not configured"))?
                .full();
        let started = Instant::now();
        for stream in &connector.descriptor.streams {
            let mut cursor: Option<String> = None;
            loop {
                let (records, next) = self
                    .plugins
                    .fetch(
                        &connector,
                        cairn_plugins::CallScope::default(),
                        &config,
                        stream,
                        cursor.as_deref(),
                    )
                    .await?;
                drop(records);
                match next {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
        }
        Ok(started.elapsed().as_secs_f64())
    }

    /// `SELECT COUNT(*)` of `table`.
    pub async fn count(&self, table: &str) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(&self.db.pool)
            .await?)
    }

    /// Seconds the database engine takes to copy `table`'s rows into a
    /// new table of the same shape and indexes (not its triggers), in one
    /// statement inside one transaction, once earlier writes are on disk:
    /// no parsing, no round trips, no service. The ceiling of the disk and
    /// the engine for those rows, beside which a sync's rate is read. The
    /// copy is dropped afterwards.
    pub async fn raw_copy_secs(&self, table: &str) -> anyhow::Result<f64> {
        let copy = format!("raw_{table}");
        let mut ddl = vec![];
        match self.db.backend {
            Backend::Postgres => {
                ddl.push(format!("CREATE TABLE {copy} (LIKE {table} INCLUDING ALL)"));
            }
            Backend::Sqlite => {
                let statements: Vec<String> = sqlx::query_scalar(
                    "SELECT sql FROM sqlite_master WHERE tbl_name = $1 AND sql IS NOT NULL \
                     AND type IN ('table', 'index') ORDER BY type DESC",
                )
                .bind(table)
                .fetch_all(&self.db.pool)
                .await?;
                for statement in statements {
                    // `CREATE TABLE t (...)` and `CREATE INDEX i ON t(...)`,
                    // each renamed.
                    ddl.push(
                        statement
                            .replacen("CREATE INDEX ", "CREATE INDEX raw_", 1)
                            .replace(&format!(" {table}("), &format!(" {copy}("))
                            .replace(&format!(" {table} ("), &format!(" {copy} (")),
                    );
                }
            }
        }
        // One connection throughout: on SQLite another of the pool's
        // connections may still hold the schema from before the last copy's
        // `DROP TABLE`, and refuse to create its indexes again.
        let mut conn = self.db.pool.acquire().await?;
        for statement in &ddl {
            sqlx::query(statement).execute(&mut *conn).await?;
        }
        // What earlier writes left in memory goes to disk first, so the copy
        // is not timed against the engine writing out the sync: measured
        // right after it, the same copy took 4.4 to 10 s on one machine.
        let flush = match self.db.backend {
            Backend::Postgres => "CHECKPOINT",
            Backend::Sqlite => "PRAGMA wal_checkpoint(TRUNCATE)",
        };
        sqlx::query(flush).execute(&mut *conn).await?;
        let started = Instant::now();
        let mut tx = conn.begin().await?;
        sqlx::query(&format!("INSERT INTO {copy} SELECT * FROM {table}"))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        let secs = started.elapsed().as_secs_f64();
        sqlx::query(&format!("DROP TABLE {copy}"))
            .execute(&mut *conn)
            .await?;
        Ok(secs)
    }

    /// Drops the database.
    pub async fn finish(self) {
        drop_database(self.db, &self.url).await;
    }
}

/// An inventory row as a connector maps it: `application` `version` from
/// `vendor` on `device` (`platform`).
pub fn row(
    device: String,
    app: String,
    vendor: String,
    version: String,
    platform: &str,
) -> MappedRow {
    MappedRow::Inventory(InventoryRow {
        device_name: Some(device.into()),
        device_id: None,
        os_platform: Some(platform.into()),
        os_version: Some("10.0.19045".into()),
        // As an edr reports a Windows device: the edition and build apart.
        os_name: Some("Windows 10 Enterprise".into()),
        os_build: Some("19045".into()),
        user_email: None,
        user_name: None,
        application_name: Some(app.into()),
        vendor: Some(vendor.into()),
        version: Some(version.into()),
        publisher: None,
        client_id: None,
        group_ids: vec![],
    })
}

/// Writes `rows` of `source` for `tenant` as a sync does, in pages of
/// 5,000; how many.
pub async fn write_pages(
    db: &Db,
    tenant: &TenantId,
    source: &str,
    rows: impl Iterator<Item = MappedRow>,
) -> anyhow::Result<usize> {
    let mut page = Vec::with_capacity(5000);
    let mut written = 0;
    let flush = async |page: &mut Vec<MappedRow>| -> anyhow::Result<()> {
        let mut tx = db.pool.begin().await?;
        upsert_rows(&mut tx, tenant, source, ("bench", 0), page).await?;
        tx.commit().await?;
        page.clear();
        Ok(())
    };
    for row in rows {
        page.push(row);
        written += 1;
        if page.len() == 5000 {
            flush(&mut page).await?;
        }
    }
    flush(&mut page).await?;
    Ok(written)
}

/// The service's HTTP API.
pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
}

impl Client {
    /// Registers a new tenant's owner: its access token and tenant.
    pub async fn register(&self, email: &str) -> anyhow::Result<(String, TenantId)> {
        let resp: Value = self
            .http
            .post(format!("{}/api/v1/auth/register", self.base))
            .json(&json!({"email": email, "password": "bench-password-1", "name": "Bench"}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let token = resp["access_token"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let tenant = resp["user"]["tenant_id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        Ok((token, TenantId(tenant)))
    }

    /// Sends one request; how long the answer took, and its JSON.
    pub async fn timed(
        &self,
        token: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<(Duration, Value)> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let started = Instant::now();
        let response = request.send().await?;
        let status = response.status();
        if !status.is_success() {
            // The service's error body says what went wrong.
            let body = response.text().await.unwrap_or_default();
            anyhow::bail!("{path} answered {status}: {body}");
        }
        let value: Value = response.json().await?;
        Ok((started.elapsed(), value))
    }
}

/// `count` applications (`Product 00000`, ...) on one to three of 5,000
/// hosts each: the list benchmarks' inventory.
pub fn applications(count: usize) -> impl Iterator<Item = MappedRow> {
    (0..count).flat_map(|a| {
        (0..1 + a % 3).map(move |d| {
            row(
                format!("HOST-{:04}", (a + d) % 5000),
                format!("Product {a:05}"),
                format!("Vendor {}", a % 700),
                "1.0".into(),
                "windows",
            )
        })
    })
}

/// An EDR agent record for every second of `devices` devices `PC-000000`,
/// ...: the device search benchmarks' second source.
pub fn edr_agents(devices: usize) -> impl Iterator<Item = MappedRow> {
    (0..devices).step_by(2).map(|d| {
        MappedRow::Record(cairn_plugins::RecordRow {
            collection: "devices".into(),
            record_type: "device".into(),
            key: format!("agent-{d}").into(),
            device_name: Some(format!("PC-{d:06}").into()),
            client_id: None,
            group_ids: vec![],
            fields: json!({"agent_version": "23.4", "infected": d.is_multiple_of(17), "active_threats": d % 5}),
            body: "{}".into(),
        })
    })
}
