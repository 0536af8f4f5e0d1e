-- Every research request, per tenant and user, for the history.
CREATE TABLE research_history (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL,
    -- cve or product
    kind       TEXT NOT NULL,
    -- The CVE id, or the product asked for as `vendor:product` or the
    -- application name.
    query      TEXT NOT NULL,
    -- CVEs the answer held (one for a CVE; the product's for a product).
    result_count BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX research_history_tenant ON research_history(tenant_id, created_at);

-- A tenant's minimum versions: an application (its folded name) is
-- compliant at or above `minimum_version`.
CREATE TABLE version_rules (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    application     TEXT NOT NULL,
    application_key TEXT NOT NULL,
    minimum_version TEXT NOT NULL,
    note            TEXT NOT NULL,
    created_by      TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    UNIQUE (tenant_id, application_key)
);
