-- How long a tenant's IP and file-hash answers are reused, and the
-- answers themselves (per tenant: each tenant asks with its own key).
CREATE TABLE threat_intel_settings (
    tenant_id     TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    cache_minutes BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);

CREATE TABLE threat_intel_answers (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    -- ip or hash
    lookup     TEXT NOT NULL,
    -- The address or hash asked for, normalized, with its parameters.
    query      TEXT NOT NULL,
    connector  TEXT NOT NULL,
    answer     TEXT NOT NULL,
    fetched_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, lookup, query)
);
