//! Migrated databases by copy: the migrations run once per run and backend
//! into a template, and each test's database starts as a copy of it (a
//! PostgreSQL `CREATE DATABASE ... TEMPLATE`, a SQLite file copy) instead of
//! running every migration again.
//!
//! A template is named after a hash of the migration files, so a changed
//! migration makes a new one. The databases a service must migrate itself
//! (`ScratchDatabase`, for the first-start and crash tests) stay empty.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use sqlx::{Connection, Executor, PgConnection};
use tokio::sync::OnceCell;

/// The migrations of `dialect` (`sqlite`, `postgres`), hashed by name and
/// content: the template's name.
fn migrations_hash(dialect: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../migrations")
        .join(dialect);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the migrations folder")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut hash = Sha256::new();
    for file in files {
        hash.update(file.file_name().unwrap().as_encoded_bytes());
        hash.update(std::fs::read(&file).expect("a migration"));
    }
    hex::encode(&hash.finalize()[..8])
}

/// The name of the migrated PostgreSQL template for this run's migrations,
/// made on first use (by this process or another; both may race to make it,
/// and the loser drops its copy).
pub async fn postgres_template(admin_url: &str) -> &'static str {
    static TEMPLATE: OnceCell<String> = OnceCell::const_new();
    TEMPLATE
        .get_or_init(|| async {
            let name = format!("cairn_tpl_{}", migrations_hash("postgres"));
            let mut admin = super::admin_connection(admin_url)
                .await
                .expect("connect to PostgreSQL");
            if !exists(&mut admin, &name).await {
                build_template(&mut admin, admin_url, &name).await;
            }
            assert!(
                exists(&mut admin, &name).await,
                "the template {name} was made"
            );
            let _ = admin.close().await;
            name
        })
        .await
}

async fn exists(admin: &mut PgConnection, database: &str) -> bool {
    sqlx::query_scalar::<_, i32>("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(database)
        .fetch_optional(admin)
        .await
        .expect("look up a database")
        .is_some()
}

/// Migrates a database of its own and renames it `name`.
async fn build_template(admin: &mut PgConnection, admin_url: &str, name: &str) {
    let building = format!("{name}_{}", uuid::Uuid::new_v4().simple());
    admin
        .execute(format!("CREATE DATABASE {building}").as_str())
        .await
        .expect("create the template");
    let db = cairn_core::db::Db::connect(&super::with_database(admin_url, &building), 2)
        .await
        .expect("open the template");
    db.migrate().await.expect("migrate the template");
    db.close().await;
    // No connection may be open on a template while it is copied: not even
    // autovacuum's.
    let closed = format!("ALTER DATABASE {building} WITH ALLOW_CONNECTIONS false");
    while_in_use(admin, &closed)
        .await
        .expect("close the template");
    // The pool's close does not always wait for a connection the migrator
    // just gave back (seen on a clean machine: the rename then waited on
    // it for good). The database is this builder's alone, so whatever is
    // still connected to it is ended.
    sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = $1 AND pid <> pg_backend_pid()",
    )
    .bind(&building)
    .execute(&mut *admin)
    .await
    .expect("end the template's connections");
    let rename = format!("ALTER DATABASE {building} RENAME TO {name}");
    match while_in_use(admin, &rename).await {
        Ok(()) => {}
        // 42P04: another process made it first.
        Err(sqlx::Error::Database(err)) if err.code().as_deref() == Some("42P04") => {
            let drop = format!("DROP DATABASE IF EXISTS {building}");
            let _ = while_in_use(admin, &drop).await;
        }
        Err(err) => panic!("name the template {name}: {err}"),
    }
}

/// Runs `statement`, again while the database it names is still in use
/// (55006): the server process of a closed connection takes a moment to
/// end, and a concurrent copy holds its template for a moment.
async fn while_in_use(admin: &mut PgConnection, statement: &str) -> sqlx::Result<()> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match admin.execute(statement).await {
            Ok(_) => return Ok(()),
            Err(sqlx::Error::Database(err))
                if err.code().as_deref() == Some("55006") && attempt < 50 =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(20 * attempt)).await;
            }
            Err(err) => return Err(err),
        }
    }
}

/// Creates database `name` as a copy of `template`.
pub async fn create_from_template(admin: &mut PgConnection, name: &str, template: &str) {
    let statement = format!("CREATE DATABASE {name} TEMPLATE {template}");
    if let Err(err) = while_in_use(admin, &statement).await {
        panic!("create test database from {template}: {err}");
    }
}

/// The migrated SQLite template for this run's migrations, under `target/`.
pub async fn sqlite_template() -> &'static Path {
    static TEMPLATE: OnceCell<PathBuf> = OnceCell::const_new();
    TEMPLATE
        .get_or_init(|| async {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-db-templates");
            std::fs::create_dir_all(&dir).expect("the templates folder");
            let path = dir.join(format!("sqlite-{}.db", migrations_hash("sqlite")));
            if !path.is_file() {
                let building = dir.join(format!("building-{}", uuid::Uuid::new_v4().simple()));
                std::fs::create_dir_all(&building).expect("a folder to build in");
                let db = cairn_core::db::Db::connect(
                    &format!("sqlite://{}", building.join("cairn.db").display()),
                    1,
                )
                .await
                .expect("open the template");
                db.migrate().await.expect("migrate the template");
                // One self-contained file, whatever the WAL holds.
                let copy = building.join("template.db");
                sqlx::query(&format!("VACUUM INTO '{}'", copy.display()))
                    .execute(&db.pool)
                    .await
                    .expect("write the template");
                db.close().await;
                // A rename: another process sees the whole file or none.
                std::fs::rename(&copy, &path).expect("place the template");
                let _ = std::fs::remove_dir_all(&building);
            }
            path
        })
        .await
}

/// Puts a migrated SQLite database at `file`.
pub async fn copy_sqlite_template(file: &Path) {
    std::fs::copy(sqlite_template().await, file).expect("copy the SQLite template");
}
