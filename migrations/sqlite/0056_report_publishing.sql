-- Reports published to the client portal: a report may name a portal
-- client (`publish_to`); once written, a copy becomes one of that client's
-- documents (`published_file_id`), or `publish_error` says why not.
-- Report schedules: a report asked for again every `every_days`, the next
-- one at `next_at`.
ALTER TABLE reports ADD COLUMN publish_to TEXT;
ALTER TABLE reports ADD COLUMN published_file_id TEXT;
ALTER TABLE reports ADD COLUMN publish_error TEXT;
CREATE TABLE report_schedules (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    report_type TEXT NOT NULL,
    format      TEXT NOT NULL,
    scope       TEXT NOT NULL,
    every_days  BIGINT NOT NULL,
    publish_to  TEXT,
    created_by  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    next_at     BIGINT NOT NULL
);
CREATE INDEX report_schedules_due ON report_schedules(next_at);
CREATE INDEX report_schedules_by_tenant ON report_schedules(tenant_id, created_at);
