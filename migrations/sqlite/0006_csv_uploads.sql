-- CSV/Excel uploads to a CSV source and what their parse found. Rows go to
-- inventory_items or source_records with source = the provider key; the
-- upload keeps the counts, the first rejection reasons, sample rows and the
-- fill rate of each column (JSON).
CREATE TABLE csv_uploads (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    source_key    TEXT NOT NULL,
    filename      TEXT NOT NULL,
    size_bytes    BIGINT NOT NULL,
    content_type  TEXT NOT NULL,
    sheet         TEXT,
    status        TEXT NOT NULL,
    error         TEXT,
    job_id        TEXT,
    uploaded_by   TEXT,
    format        TEXT,
    header_row    BIGINT,
    columns       TEXT NOT NULL DEFAULT '[]',
    rows_read     BIGINT NOT NULL DEFAULT 0,
    rows_imported BIGINT NOT NULL DEFAULT 0,
    rows_rejected BIGINT NOT NULL DEFAULT 0,
    duplicates    BIGINT NOT NULL DEFAULT 0,
    rejections    TEXT NOT NULL DEFAULT '[]',
    sample_rows   TEXT NOT NULL DEFAULT '[]',
    fill_rate     TEXT NOT NULL DEFAULT '{}',
    created_at    BIGINT NOT NULL,
    started_at    BIGINT,
    finished_at   BIGINT
);
CREATE INDEX csv_uploads_by_source ON csv_uploads(tenant_id, source_key, created_at);
CREATE INDEX csv_uploads_waiting ON csv_uploads(status, tenant_id, created_at);
