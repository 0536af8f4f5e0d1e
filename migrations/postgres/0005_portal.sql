-- The client portal: a tenant's customer companies (portal clients), their
-- API keys (stored hashed), invoices, documents, and the payment provider
-- webhook events already applied (so a replay changes nothing).
CREATE TABLE portal_clients (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (tenant_id, name)
);

CREATE TABLE portal_keys (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    client_id    TEXT NOT NULL REFERENCES portal_clients(id) ON DELETE CASCADE,
    key_hash     TEXT NOT NULL UNIQUE,
    key_prefix   TEXT NOT NULL,
    label        TEXT,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at   BIGINT
);
CREATE INDEX portal_keys_by_client ON portal_keys(tenant_id, client_id);

CREATE TABLE invoices (
    id                 TEXT PRIMARY KEY,
    tenant_id          TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    client_id          TEXT NOT NULL REFERENCES portal_clients(id) ON DELETE CASCADE,
    number             TEXT NOT NULL,
    description        TEXT NOT NULL,
    amount_cents       BIGINT NOT NULL,
    currency           TEXT NOT NULL,
    status             TEXT NOT NULL,
    payment_url        TEXT,
    payment_session_id TEXT,
    payment_expires_at BIGINT,
    due_at             BIGINT,
    paid_at            BIGINT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    UNIQUE (tenant_id, number)
);
CREATE INDEX invoices_by_client ON invoices(tenant_id, client_id, created_at);

CREATE TABLE portal_files (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    client_id    TEXT NOT NULL REFERENCES portal_clients(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    size_bytes   BIGINT NOT NULL,
    content_type TEXT,
    storage_key  TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX portal_files_by_client ON portal_files(tenant_id, client_id, created_at);

CREATE TABLE payment_events (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    event_id    TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
);
