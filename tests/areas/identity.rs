//! Who a session or token belongs to, kept between requests on SQLite:
//! every committed write to a table a caller is read from ends every kept
//! caller, whichever code path writes it (here plain SQL, as another area
//! or a hand edit would), and a write elsewhere keeps them. On PostgreSQL,
//! where another process may revoke, nothing is kept.

use cairn_core::db::now_ms;
use cairn_platform::auth::kept::{self, Credential};
use cairn_platform::auth::storage::{self, NewUser, SessionLookup};
use cairn_platform::auth::{secret_token, Role};
use cairn_tests::{backend_tests, Backend, TestDb};

backend_tests!(kept_callers_end_with_every_write_they_were_read_from);

async fn kept_callers_end_with_every_write_they_were_read_from(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    kept::watch();
    let user = storage::create_user_with_tenant(
        &db.db,
        NewUser {
            email: "kept@example.com",
            name: None,
            password_hash: "x",
            role: Role::Owner,
        },
        "Kept",
    )
    .await
    .unwrap();
    let (session, _) = storage::create_sign_in(&db.db, &user, 3600, 3600)
        .await
        .unwrap();
    let credential = Credential::Session(secret_token::hash(&session));
    let look_up = async || match storage::session_caller(&db.db, &session).await.unwrap() {
        SessionLookup::Found(caller) => Some(caller),
        _ => None,
    };
    let group = uuid::Uuid::now_v7().to_string();
    let now = now_ms();
    // (statement, whether it ends kept callers); `$1` the user, `$2` its
    // tenant, `$3` a group id, `$4` now.
    let writes = [
        ("UPDATE users SET name = 'Renamed' WHERE id = $1", true),
        (
            "UPDATE sessions SET acting_tenant_id = NULL WHERE user_id = $1",
            true,
        ),
        (
            "UPDATE tenants SET timezone = 'Europe/Paris' WHERE id = $2",
            true,
        ),
        (
            "INSERT INTO partner_groups (id, partner_id, name, created_at, updated_at) \
             VALUES ($3, $2, 'G', $4, $4)",
            true,
        ),
        (
            "INSERT INTO partner_group_members (group_id, customer_id) VALUES ($3, $2)",
            true,
        ),
        (
            "INSERT INTO partner_analyst_scopes (user_id, partner_id, all_customers, \
             customer_ids, group_ids, updated_at) VALUES ($1, $2, 1, '[]', '[]', $4)",
            true,
        ),
        (
            "UPDATE refresh_tokens SET expires_at = expires_at + 1 WHERE user_id = $1",
            false,
        ),
        (
            "INSERT INTO rate_limit_windows (key, window_start, hits) VALUES ($1, $4, 1)",
            false,
        ),
    ];
    for (sql, ends) in writes {
        assert!(look_up().await.is_some(), "{sql}");
        assert_eq!(
            kept::get(&db.db, &credential).is_ok(),
            backend == Backend::Sqlite,
            "kept after a lookup, on SQLite only"
        );
        sqlx::query(sql)
            .bind(&user.id)
            .bind(&user.tenant_id)
            .bind(&group)
            .bind(now)
            .execute(&db.db.pool)
            .await
            .unwrap_or_else(|err| panic!("{sql}: {err}"));
        if backend == Backend::Sqlite {
            assert_eq!(kept::get(&db.db, &credential).is_err(), ends, "{sql}");
        }
    }
    // The renamed user is what the next lookup answers.
    assert_eq!(look_up().await.unwrap().name.as_deref(), Some("Renamed"));

    // Revoked: the very next lookup refuses it.
    let session_id = match storage::session_caller(&db.db, &session).await.unwrap() {
        SessionLookup::Found(caller) => match caller.via {
            cairn_platform::auth::AuthVia::Session { session_id } => session_id,
            other => panic!("{other:?}"),
        },
        _ => panic!("no session"),
    };
    storage::revoke_session(&db.db, &session_id).await.unwrap();
    assert!(look_up().await.is_none(), "a revoked session answered");
    db.finish().await;
}
