//! Each area's logic through its public functions on a real database, on
//! SQLite and PostgreSQL, without a service or HTTP: many small cases of
//! the shape `check(input, expected)`, each in a tenant of its own. The
//! HTTP contract (authentication, tenant isolation, OpenAPI, crash and
//! restart, one end-to-end path per area) stays in `tests/platform`.

mod advisories;
mod identity;
mod inventory;
mod items;
mod jobs;
mod kept_cves;
mod kept_pages;
mod partner;
mod rollup_incremental;
mod search;
mod stored_json;
mod vulnerabilities;
