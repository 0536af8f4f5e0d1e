-- Dashboards of a user, private or shared with the tenant; one default
-- per user.
CREATE TABLE dashboards (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    owner_id   TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    shared     BIGINT NOT NULL,
    is_default BIGINT NOT NULL,
    layout     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX dashboards_tenant ON dashboards(tenant_id, owner_id);
CREATE UNIQUE INDEX dashboards_one_default ON dashboards(tenant_id, owner_id) WHERE is_default = 1;

CREATE TABLE dashboard_widgets (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    dashboard_id TEXT NOT NULL REFERENCES dashboards(id) ON DELETE CASCADE,
    title        TEXT NOT NULL,
    widget_type  TEXT NOT NULL,
    data_source  TEXT NOT NULL,
    position     TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX dashboard_widgets_dashboard ON dashboard_widgets(dashboard_id);

-- The tenant's key figures once a day (UTC), rewritten through the day:
-- the history trends are drawn from.
CREATE TABLE dashboard_daily_figures (
    tenant_id        TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    day              TEXT NOT NULL,
    open_findings    BIGINT NOT NULL,
    critical         BIGINT NOT NULL,
    high             BIGINT NOT NULL,
    kev_findings     BIGINT NOT NULL,
    affected_devices BIGINT NOT NULL,
    recorded_at      BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, day)
);

-- The applications of a tenant's open findings with their CVEs, read in
-- order from the index alone (the most vulnerable applications).
CREATE INDEX vuln_findings_open_applications ON vuln_findings(tenant_id, status, application_name, cve_id);
