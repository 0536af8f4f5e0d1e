//! The migrations this build carries, embedded by `build.rs`, and the
//! sqlx [`Migrator`] that applies them.

use std::borrow::Cow;

use futures::future::BoxFuture;
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};

use super::Backend;

/// One file of `migrations/<engine>/`.
#[derive(Debug)]
pub(super) struct Embedded {
    version: i64,
    description: &'static str,
    sql: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

fn embedded(backend: Backend) -> &'static [Embedded] {
    match backend {
        Backend::Sqlite => SQLITE,
        Backend::Postgres => POSTGRES,
    }
}

/// The newest version this build carries for `backend`.
pub(super) fn newest(backend: Backend) -> Option<i64> {
    embedded(backend).iter().map(|m| m.version).max()
}

/// A migrator over this build's migrations for `backend`.
pub(super) async fn migrator(backend: Backend) -> Result<Migrator, sqlx::migrate::MigrateError> {
    Migrator::new(Source(embedded(backend))).await
}

#[derive(Debug)]
struct Source(&'static [Embedded]);

impl<'s> MigrationSource<'s> for Source {
    fn resolve(self) -> BoxFuture<'s, Result<Vec<Migration>, BoxDynError>> {
        let migrations = self
            .0
            .iter()
            .map(|m| {
                Migration::new(
                    m.version,
                    Cow::Borrowed(m.description),
                    MigrationType::Simple,
                    Cow::Borrowed(m.sql),
                    // sqlx's own reading of a file: this line first opts it
                    // out of a transaction.
                    m.sql.starts_with("-- no-transaction"),
                )
            })
            .collect();
        Box::pin(std::future::ready(Ok(migrations)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_carries_its_files_in_order_with_sqlx_descriptions() {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            let files = embedded(backend);
            assert!(files.len() > 50, "{backend:?}: {} migrations", files.len());
            assert!(files.windows(2).all(|w| w[0].version < w[1].version));
            assert_eq!((files[0].version, files[0].description), (1, "platform"));
            assert!(files[0].sql.contains("CREATE TABLE"));
        }
    }
}
