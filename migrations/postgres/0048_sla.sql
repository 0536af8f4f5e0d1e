-- Remediation SLAs. A policy says how many days a finding has to be fixed
-- in, by its CVE's severity, KEV listing, EPSS score and the device's
-- tier. A tenant's own default covers it; a partner's default, group and
-- customer policies cover its customers (the narrowest wins). `scope_id`
-- is '' for a default, else the group's or the customer's id; `rules` is
-- the policy as JSON.
CREATE TABLE sla_policies (
    owner_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    scope      TEXT NOT NULL,
    scope_id   TEXT NOT NULL,
    name       TEXT NOT NULL,
    rules      TEXT NOT NULL,
    updated_by TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (owner_id, scope, scope_id)
);

-- Every change of a policy: who, when, the policy before and after (JSON,
-- NULL when there was none or is none now) and how many open findings'
-- due dates it moved.
CREATE TABLE sla_policy_changes (
    id         TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    scope      TEXT NOT NULL,
    scope_id   TEXT NOT NULL,
    changed_by TEXT NOT NULL,
    changed_at BIGINT NOT NULL,
    before     TEXT,
    after      TEXT,
    moved      BIGINT NOT NULL
);
CREATE INDEX sla_policy_changes_by_time ON sla_policy_changes(owner_id, changed_at);

-- How much a device matters: critical, high, standard (the default, kept
-- as no row) or low. `device_key` is the name as findings compare it
-- (trimmed, lower case).
CREATE TABLE device_tiers (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    device_key  TEXT NOT NULL,
    device_name TEXT NOT NULL,
    tier        TEXT NOT NULL,
    set_by      TEXT NOT NULL,
    set_at      BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, device_key)
);

-- Exceptions: a finding's SLA set aside until `expires_at`, once someone
-- other than the requester approved it. `devices` is a JSON array of
-- device names (empty: every device with the CVE). `status` is pending,
-- approved or rejected; an approved one past its expiry reads as expired.
CREATE TABLE sla_exceptions (
    id                   TEXT PRIMARY KEY,
    tenant_id            TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    cve_id               TEXT NOT NULL,
    devices              TEXT NOT NULL,
    reason               TEXT NOT NULL,
    compensating_control TEXT,
    expires_at           BIGINT NOT NULL,
    status               TEXT NOT NULL,
    requested_by         TEXT NOT NULL,
    requested_by_email   TEXT NOT NULL,
    requested_at         BIGINT NOT NULL,
    decided_by_email     TEXT,
    decided_at           BIGINT,
    decision_comment     TEXT,
    -- When the requester was told the exception expires soon.
    reminded_at          BIGINT
);
CREATE INDEX sla_exceptions_by_tenant ON sla_exceptions(tenant_id, status);
