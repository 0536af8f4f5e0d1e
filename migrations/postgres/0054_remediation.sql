-- Remediation: plans that fix findings through the tenant's RMM connector,
-- one item per device and vulnerable application version, each verified
-- by a later inventory rather than by the RMM's answer.
-- A plan is made from a CVE (`cve_id`) or a device search (`devices`, the
-- query as JSON); `status`: draft (a dry run: nothing sent), approved,
-- running, done, cancelled.
CREATE TABLE remediation_plans (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    cve_id       TEXT,
    devices      TEXT,
    connector_id TEXT NOT NULL,
    status       TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    approved_by  TEXT,
    approved_at  BIGINT,
    finished_at  BIGINT
);
CREATE INDEX remediation_plans_by_tenant ON remediation_plans(tenant_id, created_at);
CREATE INDEX remediation_plans_by_status ON remediation_plans(status, tenant_id);

-- One device's vulnerable application version in a plan. `cve_ids` (JSON)
-- are the plan's CVEs this version has on the device; `target_version` the
-- lowest version that fixes them all. `state`: planned, skipped (with the
-- reason), starting (the call upstream is under way), pending, running,
-- awaiting_inventory (the RMM reported success), fixed (a later inventory
-- shows it), remediation_failed (the RMM reported success but a later
-- inventory still shows the vulnerable version; `reason` says both), failed
-- (the RMM reported failure or refused), cancelled.
CREATE TABLE remediation_items (
    plan_id          TEXT NOT NULL REFERENCES remediation_plans(id) ON DELETE CASCADE,
    tenant_id        TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    device_name      TEXT NOT NULL,
    application_name TEXT NOT NULL,
    version          TEXT NOT NULL,
    cve_ids          TEXT NOT NULL,
    target_version   TEXT,
    action           TEXT,
    inputs           TEXT,
    device_key       TEXT,
    state            TEXT NOT NULL,
    reason           TEXT,
    upstream_handle  TEXT,
    upstream_report  TEXT,
    started_at       BIGINT,
    reported_at      BIGINT,
    verified_at      BIGINT,
    PRIMARY KEY (plan_id, device_name, application_name, version)
);
CREATE INDEX remediation_items_by_state ON remediation_items(tenant_id, state);
CREATE INDEX remediation_items_by_device ON remediation_items(tenant_id, device_name, application_name);
