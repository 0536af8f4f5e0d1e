-- A tenant's subscriptions to a vendor or a product (possibly one with no
-- CVE yet), and the CVEs each sync brought from NVD.
CREATE TABLE subscriptions (
    id                TEXT PRIMARY KEY,
    tenant_id         TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    -- vendor or product
    sub_type          TEXT NOT NULL,
    name              TEXT NOT NULL,
    -- The name as the CVE store writes names (lower case, `_` for spaces).
    name_key          TEXT NOT NULL,
    -- A product's CPE vendor, when the subscriber named it.
    vendor            TEXT,
    created_by        TEXT NOT NULL,
    created_at        BIGINT NOT NULL,
    -- Set when a sync is asked for; cleared by a sync that started later.
    sync_requested_at BIGINT,
    last_synced_at    BIGINT,
    -- ok or error
    last_status       TEXT,
    last_error        TEXT,
    -- The NVD query the last sync made.
    last_query        TEXT,
    UNIQUE (tenant_id, sub_type, name_key)
);

CREATE TABLE subscription_cves (
    subscription_id TEXT NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,
    tenant_id       TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    cve_id          TEXT NOT NULL,
    -- The record's last modification as the last sync saw it.
    last_modified   BIGINT NOT NULL,
    added_at        BIGINT NOT NULL,
    -- 1 when the subscription's first sync brought it: history, not news.
    baseline        BIGINT NOT NULL,
    changed_at      BIGINT,
    PRIMARY KEY (subscription_id, cve_id)
);
CREATE INDEX subscription_cves_tenant ON subscription_cves(tenant_id, cve_id);
