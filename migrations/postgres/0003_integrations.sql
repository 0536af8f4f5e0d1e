-- Per-tenant integration config (secrets encrypted at rest) and what syncs
-- write: inventory items and source records. `seen_run` is the sync run that
-- last reported a row; a complete run prunes rows it did not see.
CREATE TABLE integration_configs (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    integration TEXT NOT NULL,
    settings    TEXT NOT NULL,
    secrets     TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, integration)
);

CREATE TABLE inventory_items (
    tenant_id        TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    source           TEXT NOT NULL,
    item_key         TEXT NOT NULL,
    device_name      TEXT,
    device_id        TEXT,
    os_platform      TEXT,
    os_version       TEXT,
    user_email       TEXT,
    user_name        TEXT,
    application_name TEXT,
    vendor           TEXT,
    version          TEXT,
    publisher        TEXT,
    client_id        TEXT,
    group_ids        TEXT NOT NULL DEFAULT '[]',
    seen_run         TEXT NOT NULL,
    updated_at       BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, source, item_key)
);
CREATE INDEX inventory_items_device ON inventory_items(tenant_id, device_name);
CREATE INDEX inventory_items_application ON inventory_items(tenant_id, application_name);
CREATE INDEX inventory_items_run ON inventory_items(tenant_id, source, seen_run);

CREATE TABLE source_records (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    source      TEXT NOT NULL,
    kind        TEXT NOT NULL,
    record_key  TEXT NOT NULL,
    device_name TEXT,
    client_id   TEXT,
    group_ids   TEXT NOT NULL DEFAULT '[]',
    body        TEXT NOT NULL,
    seen_run    TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, source, kind, record_key)
);
CREATE INDEX source_records_device ON source_records(tenant_id, source, kind, device_name);
CREATE INDEX source_records_run ON source_records(tenant_id, source, seen_run);
