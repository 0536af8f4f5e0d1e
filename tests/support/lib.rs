//! Test support: start the real service on a fresh database of either
//! backend, and talk to it over HTTP.

pub mod batches;
pub mod components;
pub mod fake_backup;
pub mod fake_feeds;
pub mod fake_graph;
pub mod fake_inventory;
pub mod fake_model;
pub mod fake_ninjaone;
pub mod fake_nvd;
pub mod fake_oauth;
pub mod fake_payments;
pub mod fake_psa;
pub mod fake_qualys;
pub mod fake_rmm;
pub mod fake_s3;
pub mod fake_sentinelone;
pub mod fake_tenable;
pub mod fake_threat_intel;
pub mod fake_webhooks;
pub mod inventory;
pub mod jobs;
pub mod query_eval;
pub mod smtp;
pub mod sources;
pub mod spreadsheets;
mod templates;

use std::path::{Path, PathBuf};

use cairn::server::RunningServer;
use cairn_core::settings::Settings;
use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};
use sqlx::{Connection, Executor, PgConnection};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Generates `sqlite::<name>` and `postgres::<name>` tests from each
/// `async fn <name>(backend: Backend)` listed.
#[macro_export]
macro_rules! backend_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::Backend::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::Backend::Postgres).await
                }
            )*
        }
    };
}

const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A direct connection to the test server, waiting (up to a minute) while
/// the server is full: six test threads, each with a service's pools, can
/// hold most of PostgreSQL's 100 connections for a moment, and a test must
/// not fail for another test's moment. Pools already wait so (sqlx retries
/// `too_many_connections` while connecting); this does the same for the
/// harness's own connections.
pub async fn admin_connection(url: &str) -> Result<PgConnection, sqlx::Error> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut pause = std::time::Duration::from_millis(50);
    loop {
        match PgConnection::connect(url).await {
            Err(sqlx::Error::Database(error))
                if error.code().as_deref() == Some("53300")
                    && std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(std::time::Duration::from_secs(1));
            }
            other => return other,
        }
    }
}

/// The admin URL of the PostgreSQL server the tests use, or `None` when that
/// backend is skipped. `CAIRN_TEST_POSTGRES_URL=skip` skips it;
/// `CAIRN_REQUIRE_POSTGRES=1` turns an unreachable server into a failure.
async fn postgres_admin_url() -> Option<String> {
    let url =
        std::env::var("CAIRN_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_POSTGRES_URL.into());
    let required = std::env::var("CAIRN_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
    if url == "skip" {
        assert!(
            !required,
            "PostgreSQL is required but CAIRN_TEST_POSTGRES_URL=skip"
        );
        return None;
    }
    match admin_connection(&url).await {
        Ok(conn) => {
            let _ = conn.close().await;
            Some(url)
        }
        Err(err) if !required => {
            eprintln!("SKIPPED: PostgreSQL backend not reachable at {url}: {err}");
            None
        }
        Err(err) => panic!(
            "PostgreSQL is required (CAIRN_REQUIRE_POSTGRES=1) but {url} is unreachable: {err}"
        ),
    }
}

/// One compiled-component cache for every service the tests start: each
/// component is compiled once per run instead of once per test. Under
/// `target/`, so a clean clone starts without it.
pub fn plugin_cache_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-plugin-cache")
}

fn with_database(admin_url: &str, database: &str) -> String {
    let (base, _) = admin_url.rsplit_once('/').expect("URL has a database path");
    format!("{base}/{database}")
}

/// A database of a backend that outlives the services started on it (a
/// restart, or a database made before the service starts), with a scratch
/// directory of its own.
pub struct ScratchDatabase {
    pub dir: PathBuf,
    pub url: String,
    postgres: Option<PostgresDatabase>,
}

impl ScratchDatabase {
    /// An empty database, for a service to migrate as on its first start;
    /// `None` when `backend` is skipped here.
    pub async fn create(backend: Backend) -> Option<ScratchDatabase> {
        Self::create_with(backend, false).await
    }

    /// A database already migrated.
    pub async fn create_migrated(backend: Backend) -> Option<ScratchDatabase> {
        Self::create_with(backend, true).await
    }

    async fn create_with(backend: Backend, migrated: bool) -> Option<ScratchDatabase> {
        let dir =
            std::env::temp_dir().join(format!("cairn-scratch-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let postgres = match (backend, migrated) {
            (Backend::Postgres, false) => Some(PostgresDatabase::create().await?),
            (Backend::Postgres, true) => Some(PostgresDatabase::create_migrated().await?),
            (Backend::Sqlite, _) => None,
        };
        if backend == Backend::Sqlite && migrated {
            templates::copy_sqlite_template(&dir.join("cairn.db")).await;
        }
        let url = match &postgres {
            Some(db) => db.url.clone(),
            None => format!("sqlite://{}?mode=rwc", dir.join("cairn.db").display()),
        };
        Some(ScratchDatabase { dir, url, postgres })
    }

    pub async fn remove(self) {
        if let Some(pg) = self.postgres {
            pg.remove().await;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A migrated database of one backend, with no service on it: for the
/// tests of an area's logic, which call its public functions directly.
/// Cases share it, each in a tenant of its own, as the service's tenants do.
pub struct TestDb {
    pub db: cairn_core::db::Db,
    scratch: ScratchDatabase,
}

impl TestDb {
    /// `None` when `backend` is skipped here.
    pub async fn create(backend: Backend) -> Option<TestDb> {
        let scratch = ScratchDatabase::create_migrated(backend).await?;
        let db = cairn_core::db::Db::connect(&scratch.url, 4)
            .await
            .expect("open the test database");
        // A no-op on the template's copy, but it checks that copy.
        db.migrate().await.expect("migrate the test database");
        Some(TestDb { db, scratch })
    }

    /// The database's URL, for what opens connections of its own.
    pub fn url(&self) -> &str {
        &self.scratch.url
    }

    /// Starts this process's change listener on PostgreSQL, as the server
    /// does, until `stop`; returns once it listens (stamps are given).
    pub async fn listen_for_changes(&self, stop: &tokio_util::sync::CancellationToken) {
        cairn_core::db::changes::spawn_listener(&self.db, self.url().to_string(), stop.clone());
        wait_for(
            "the change listener",
            std::time::Duration::from_secs(20),
            async || cairn_core::db::changes::stamp(&self.db, "any", "any").is_some(),
        )
        .await;
    }

    /// A new tenant, named `name`, for one case.
    pub async fn tenant(&self, name: &str) -> cairn_core::ids::TenantId {
        insert_tenant(&self.db, name).await
    }

    /// Writes `rows` as `source` reported them for `tenant`, through the
    /// sync's own upsert.
    pub async fn seed(
        &self,
        tenant: &cairn_core::ids::TenantId,
        source: &str,
        rows: &[cairn_plugins::MappedRow],
    ) {
        let mut tx = self.db.pool.begin().await.expect("begin");
        cairn_integrations::storage::upsert_rows(&mut tx, tenant, source, ("seed", 0), rows)
            .await
            .expect("write the rows");
        tx.commit().await.expect("commit");
    }

    /// Rebuilds `tenant`'s software rollup from everything written so far.
    pub async fn rebuild(&self, tenant: &cairn_core::ids::TenantId) {
        self.rebuild_in(tenant, cairn_inventory::rollup::Mode::Whole)
            .await;
    }

    /// Folds what was written since `tenant`'s last rebuild into its
    /// rollup, as the job after a sync does.
    pub async fn rebuild_incremental(&self, tenant: &cairn_core::ids::TenantId) {
        self.rebuild_in(tenant, cairn_inventory::rollup::Mode::Incremental)
            .await;
    }

    async fn rebuild_in(
        &self,
        tenant: &cairn_core::ids::TenantId,
        mode: cairn_inventory::rollup::Mode,
    ) {
        cairn_inventory::rollup::rebuild_until_current(&self.db, tenant, mode)
            .await
            .expect("rebuild the rollup");
    }

    /// Closes the pool and removes the database.
    pub async fn finish(self) {
        self.db.close().await;
        self.scratch.remove().await;
    }
}

/// Accepts the risk of `cve_id` in product acme/app for `days` days, as a
/// person's triage change (which counts itself as a findings write).
pub async fn accept_risk(
    db: &cairn_core::db::Db,
    tenant: &cairn_core::ids::TenantId,
    cve_id: &str,
    days: i64,
) {
    let change = cairn_vulnerabilities::findings::triage::Change {
        cve_id,
        vendor: "acme",
        product: "app",
        status: "risk_accepted",
        justification: None,
        expires_at: Some(cairn_core::db::now_ms() + days * 86_400_000),
        assignee_id: None,
        comment: "",
        by: "someone",
    };
    cairn_vulnerabilities::findings::triage::set(db, tenant, &change)
        .await
        .expect("accept the risk");
}

/// A tenant row made directly, for tests that need many tenants but no
/// accounts (registration is rate limited).
async fn insert_tenant(db: &cairn_core::db::Db, name: &str) -> cairn_core::ids::TenantId {
    let id = uuid::Uuid::now_v7().to_string();
    sqlx::query(
        "INSERT INTO tenants (id, name, timezone, created_at, updated_at) \
         VALUES ($1, $2, 'UTC', 0, 0)",
    )
    .bind(&id)
    .bind(name)
    .execute(&db.pool)
    .await
    .expect("insert tenant");
    cairn_core::ids::TenantId(id)
}

/// A fresh PostgreSQL database for one test. One that is not removed
/// (its test panicked or returned without finishing) is dropped when the
/// value is: with its connections, which a service left running would keep
/// open while later tests need the server's connections.
pub struct PostgresDatabase {
    pub url: String,
    admin: String,
    name: String,
    removed: bool,
}

impl PostgresDatabase {
    /// An empty database, for a service to migrate; `None` when the
    /// PostgreSQL backend is skipped here.
    pub async fn create() -> Option<PostgresDatabase> {
        Self::create_with(false).await
    }

    /// A database already migrated (a copy of the run's template).
    pub async fn create_migrated() -> Option<PostgresDatabase> {
        Self::create_with(true).await
    }

    async fn create_with(migrated: bool) -> Option<PostgresDatabase> {
        let admin = postgres_admin_url().await?;
        let name = format!("cairn_t_{}", uuid::Uuid::new_v4().simple());
        let template = match migrated {
            true => Some(templates::postgres_template(&admin).await),
            false => None,
        };
        let mut conn = admin_connection(&admin)
            .await
            .expect("connect to PostgreSQL");
        match template {
            Some(template) => templates::create_from_template(&mut conn, &name, template).await,
            None => {
                conn.execute(format!("CREATE DATABASE {name}").as_str())
                    .await
                    .expect("create test database");
            }
        }
        let _ = conn.close().await;
        Some(PostgresDatabase {
            url: with_database(&admin, &name),
            admin,
            name,
            removed: false,
        })
    }

    /// Drops the database, ending whatever is still connected to it.
    pub async fn remove(mut self) {
        Self::drop_database(&self.admin, &self.name).await;
        self.removed = true;
    }

    async fn drop_database(admin: &str, name: &str) {
        if let Ok(mut conn) = admin_connection(admin).await {
            let _ = conn
                .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                .await;
        }
    }
}

impl Drop for PostgresDatabase {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        // Dropped inside the test's runtime, which cannot be blocked on:
        // a thread with a runtime of its own drops the database.
        let (admin, name) = (self.admin.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime")
                .block_on(Self::drop_database(&admin, &name))
        });
        let _ = dropped.join();
    }
}

/// A running service on its own fresh database and data directory.
pub struct TestApp {
    pub url: String,
    pub server: RunningServer,
    pub http: reqwest::Client,
    data_dir: PathBuf,
    postgres: Option<PostgresDatabase>,
}

impl TestApp {
    /// Starts the service, or returns `None` when `backend` is skipped here.
    pub async fn start(backend: Backend) -> Option<TestApp> {
        Self::start_with(backend, |_| {}).await
    }

    pub async fn start_with(
        backend: Backend,
        configure: impl FnOnce(&mut Settings),
    ) -> Option<TestApp> {
        Self::start_with_jobs(backend, configure, cairn_jobs::Registry::default()).await
    }

    /// Starts the service with extra job handlers registered.
    pub async fn start_with_jobs(
        backend: Backend,
        configure: impl FnOnce(&mut Settings),
        jobs: cairn_jobs::Registry,
    ) -> Option<TestApp> {
        // `CAIRN_TEST_LOG=error` (any filter) shows the service's logs.
        if let Ok(filter) = std::env::var("CAIRN_TEST_LOG") {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_test_writer()
                .try_init();
        }
        let data_dir =
            std::env::temp_dir().join(format!("cairn-test-{}", uuid::Uuid::new_v4().simple()));
        let mut settings = Settings {
            listen: "127.0.0.1:0".into(),
            data_dir: data_dir.clone(),
            // No components unless a test names them (not those an
            // operator installed on this machine).
            connectors_dir: data_dir.join("components"),
            // Many services start in one test process; a watcher each would
            // spend the system's inotify instances. The reload test turns
            // it on.
            connectors_watch: false,
            // The job runtime is one per process, shared by every service
            // a test binary starts: more threads than one service needs.
            job_threads: 4,
            // Tests wait for jobs while other tests load the cores; the
            // niceness is the operator's trade, not the tests' (the load
            // benchmark measures it).
            job_niceness: 0,
            // Tests ask after their jobs while they run; the jobs' writes
            // yielding to those requests is the operator's trade too (the
            // pacing has its own tests, the load benchmark measures it).
            job_write_share: 1.0,
            // Tests make many requests from one address; the default limit has
            // its own test.
            rate_limit_per_minute: 0,
            // No test reaches the real NVD, KEV or EPSS; the ones that
            // load reference data point the sources at fakes.
            vuln_schedule: false,
            // The fakes listen on loopback; the tests of the address rule
            // set this back to empty.
            outbound_private_networks: "127.0.0.0/8".into(),
            plugin_cache_dir: plugin_cache_dir(),
            ..Settings::default()
        };
        // A migrated copy: the service's own migration finds nothing to do.
        let mut postgres = None;
        match backend {
            Backend::Postgres => {
                let database = PostgresDatabase::create_migrated().await?;
                settings.database_url = database.url.clone();
                // Six tests run at once against one server of 100
                // connections. A service holds its pool, the bookkeeping
                // and COPY pools of half as many each, and two listeners:
                // at 10 that was 22 apiece, and six scanner and search
                // tests filled the server (a CI run failed 30 tests on
                // "too many clients"; at 7, 15 apiece, the run peaked at
                // 89). At 6 it is 14, 84 for six, as the crash tests'
                // processes keep.
                settings.database_max_connections = 6;
                postgres = Some(database);
            }
            Backend::Sqlite => {
                std::fs::create_dir_all(&data_dir).expect("data directory");
                templates::copy_sqlite_template(&data_dir.join("cairn.db")).await;
            }
        }
        configure(&mut settings);
        let settings = settings.prepare().expect("valid settings");
        let server = cairn::server::start_with_jobs(settings, jobs)
            .await
            .expect("service starts");
        Some(TestApp {
            url: server.base_url(),
            server,
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            data_dir,
            postgres,
        })
    }

    /// Stops the service and removes its database and data directory.
    pub async fn finish(self) {
        self.server.stop().await.expect("clean shutdown");
        if let Some(database) = self.postgres {
            database.remove().await;
        }
        let _ = std::fs::remove_dir_all(self.data_dir);
    }

    pub fn db(&self) -> &cairn_core::db::Db {
        &self.server.state.db
    }

    /// On PostgreSQL, an outage of the app's database (`down`: new
    /// connections refused and open ones ended) or its end; false on
    /// SQLite, which has no server to lose.
    pub async fn postgres_outage(&self, down: bool) -> bool {
        let Some(database) = &self.postgres else {
            return false;
        };
        let mut conn = admin_connection(&database.admin)
            .await
            .expect("connect to PostgreSQL");
        conn.execute(
            format!(
                "ALTER DATABASE {} ALLOW_CONNECTIONS {}",
                database.name,
                if down { "false" } else { "true" }
            )
            .as_str(),
        )
        .await
        .expect("change the database's connections");
        if down {
            conn.execute(
                format!(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = '{}' AND pid <> pg_backend_pid()",
                    database.name
                )
                .as_str(),
            )
            .await
            .expect("end the database's connections");
        }
        let _ = conn.close().await;
        true
    }

    /// A tenant row made directly, for tests that need many tenants but no
    /// accounts (registration is rate limited).
    pub async fn create_tenant(&self, name: &str) -> cairn_core::ids::TenantId {
        insert_tenant(self.db(), name).await
    }

    pub async fn call(&self, method: Method, path: &str, auth: &Auth, body: Option<Value>) -> Resp {
        let mut request = self.http.request(method, format!("{}{path}", self.url));
        request = auth.apply(request);
        if let Some(body) = body {
            request = request.json(&body);
        }
        Resp::from(request.send().await.expect("request sent")).await
    }

    pub async fn get(&self, path: &str, auth: &Auth) -> Resp {
        self.call(Method::GET, path, auth, None).await
    }

    pub async fn post(&self, path: &str, auth: &Auth, body: Value) -> Resp {
        self.call(Method::POST, path, auth, Some(body)).await
    }

    pub async fn patch(&self, path: &str, auth: &Auth, body: Value) -> Resp {
        self.call(Method::PATCH, path, auth, Some(body)).await
    }

    pub async fn delete(&self, path: &str, auth: &Auth) -> Resp {
        self.call(Method::DELETE, path, auth, None).await
    }

    /// Registers a new account (and with it a new tenant).
    pub async fn register(&self, email: &str) -> Account {
        let resp = self
            .post(
                "/api/v1/auth/register",
                &Auth::None,
                json!({"email": email, "password": PASSWORD, "organization": format!("org of {email}")}),
            )
            .await;
        assert_eq!(resp.status, 201, "register {email}: {}", resp.body);
        Account::from_sign_in(&resp)
    }

    /// Signs in an existing account.
    pub async fn login(&self, email: &str) -> Account {
        let resp = self
            .post(
                "/api/v1/auth/login",
                &Auth::None,
                json!({"email": email, "password": PASSWORD}),
            )
            .await;
        assert_eq!(resp.status, 200, "login {email}: {}", resp.body);
        Account::from_sign_in(&resp)
    }

    /// Polls `GET /api/v1/jobs/{job_id}` until the job ends in success or
    /// error (60 s at most) and returns it.
    pub async fn wait_for_job(&self, account: &Account, job_id: &str) -> Value {
        self.wait_for_job_within(account, job_id, 60).await
    }

    /// [`TestApp::wait_for_job`] with a limit of `secs` seconds.
    pub async fn wait_for_job_within(&self, account: &Account, job_id: &str, secs: u64) -> Value {
        let limit = std::time::Duration::from_secs(secs);
        wait_until(&format!("job {job_id}"), limit, async || {
            let job = self
                .get(&format!("/api/v1/jobs/{job_id}"), &account.bearer())
                .await;
            if ["success", "error"].contains(&job.body["status"].as_str().unwrap_or("")) {
                Ok(job.body)
            } else {
                Err(job.text)
            }
        })
        .await
    }

    /// Starts a sync of `area` (`POST /api/v1/<area>/sync`) and waits,
    /// through its `sync-status`, until that job ends in success or error;
    /// returns the job.
    pub async fn sync_area(&self, account: &Account, area: &str) -> Value {
        let started = self
            .post(
                &format!("/api/v1/{area}/sync"),
                &account.bearer(),
                serde_json::json!({}),
            )
            .await;
        assert_eq!(started.status, 202, "{}", started.text);
        let job_id = started.body["job_id"].as_str().unwrap().to_string();
        let limit = std::time::Duration::from_secs(60);
        wait_until(&format!("the {area} sync"), limit, async || {
            let status = self
                .get(&format!("/api/v1/{area}/sync-status"), &account.bearer())
                .await;
            let current = &status.body["current"];
            if current["id"] == job_id.as_str()
                && ["success", "error"].contains(&current["status"].as_str().unwrap_or(""))
            {
                Ok(current.clone())
            } else {
                Err(status.text)
            }
        })
        .await
    }

    /// `admin` invites `email` with `role`; returns the invite token and id.
    pub async fn invite(&self, admin: &Account, email: &str, role: &str) -> (String, String) {
        let resp = self
            .post(
                "/api/v1/invites",
                &admin.bearer(),
                json!({"email": email, "role": role}),
            )
            .await;
        assert_eq!(resp.status, 201, "invite {email}: {}", resp.body);
        (
            resp.body["token"].as_str().unwrap().to_string(),
            resp.body["invite"]["id"].as_str().unwrap().to_string(),
        )
    }

    /// Invites `email` into `admin`'s tenant with `role` and accepts.
    pub async fn add_member(&self, admin: &Account, email: &str, role: &str) -> Account {
        let (token, _) = self.invite(admin, email, role).await;
        let resp = self
            .post(
                &format!("/api/v1/invites/{token}/accept"),
                &Auth::None,
                json!({"password": PASSWORD}),
            )
            .await;
        assert_eq!(resp.status, 201, "accept for {email}: {}", resp.body);
        Account::from_sign_in(&resp)
    }
}

/// Polls `probe` until it is ready and returns what it gave: the one way the
/// tests wait for something the service does in the background. `probe`
/// answers `Ok(value)` when done and `Err(state)` while not; the state of the
/// last poll is in the failure message. Polls quickly at first (most waits
/// are short), then every 100 ms. `limit` is a guard against a hang, never a
/// timing check: with the whole suite on two cores a job may wait its turn.
pub async fn wait_until<T>(
    what: &str,
    limit: std::time::Duration,
    mut probe: impl AsyncFnMut() -> Result<T, String>,
) -> T {
    let deadline = std::time::Instant::now() + limit;
    let mut pause = std::time::Duration::from_millis(5);
    loop {
        let state = match probe().await {
            Ok(value) => return value,
            Err(state) => state,
        };
        assert!(
            std::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}; last seen: {state}"
        );
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(std::time::Duration::from_millis(100));
    }
}

/// Waits until `check` holds; [`wait_until`] for a plain condition.
pub async fn wait_for(
    what: &str,
    limit: std::time::Duration,
    mut check: impl AsyncFnMut() -> bool,
) {
    wait_until(what, limit, async || {
        if check().await {
            Ok(())
        } else {
            Err("not yet".to_string())
        }
    })
    .await
}

pub const PASSWORD: &str = "correct horse battery";

/// How a request authenticates.
#[derive(Debug, Clone)]
pub enum Auth {
    None,
    Bearer(String),
    Cookie(String),
}

impl Auth {
    fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self {
            Auth::None => request,
            Auth::Bearer(token) => request.bearer_auth(token),
            Auth::Cookie(value) => request.header("cookie", format!("cairn.session_token={value}")),
        }
    }
}

/// A signed-in account as the tests hold it.
#[derive(Debug, Clone)]
pub struct Account {
    pub user_id: String,
    pub tenant_id: String,
    pub email: String,
    pub access_token: String,
    pub refresh_token: String,
    pub session: String,
}

impl Account {
    pub fn from_sign_in(resp: &Resp) -> Account {
        Account {
            user_id: resp.body["user"]["id"].as_str().unwrap().to_string(),
            tenant_id: resp.body["user"]["tenant_id"].as_str().unwrap().to_string(),
            email: resp.body["user"]["email"].as_str().unwrap().to_string(),
            access_token: resp.body["access_token"].as_str().unwrap().to_string(),
            refresh_token: resp.body["refresh_token"].as_str().unwrap().to_string(),
            session: resp
                .session_cookie()
                .expect("sign-in sets the session cookie"),
        }
    }

    pub fn bearer(&self) -> Auth {
        Auth::Bearer(self.access_token.clone())
    }

    pub fn cookie(&self) -> Auth {
        Auth::Cookie(self.session.clone())
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Resp {
    pub async fn from(response: reqwest::Response) -> Resp {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Resp {
            status,
            headers,
            body,
            text,
        }
    }

    /// The value of the session cookie this response sets, if any.
    pub fn session_cookie(&self) -> Option<String> {
        self.set_cookie_header()
            .and_then(|h| h.split(';').next())
            .and_then(|pair| pair.strip_prefix("cairn.session_token="))
            .map(String::from)
    }

    pub fn set_cookie_header(&self) -> Option<&str> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with("cairn.session_token="))
    }

    /// Asserts the status and that the body is one of our JSON errors.
    pub fn assert_error(&self, status: u16) -> &Resp {
        assert_eq!(
            self.status, status,
            "unexpected status; body: {}",
            self.text
        );
        assert!(
            self.body["detail"].is_string(),
            "error body lacks detail: {}",
            self.text
        );
        assert!(
            self.body["type"].is_string(),
            "error body lacks type: {}",
            self.text
        );
        self
    }
}
