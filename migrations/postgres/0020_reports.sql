-- A report asked for, and once written its file (relative to the reports
-- directory).
CREATE TABLE reports (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    report_type TEXT NOT NULL,
    format      TEXT NOT NULL,
    scope       TEXT NOT NULL,
    title       TEXT NOT NULL,
    status      TEXT NOT NULL,
    error       TEXT,
    stored_path TEXT,
    file_name   TEXT,
    size_bytes  BIGINT,
    row_count   BIGINT,
    created_by  TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at  BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX reports_recent ON reports(tenant_id, created_at DESC);
CREATE INDEX reports_finished ON reports(finished_at);
