-- Durable job queue. One queued-or-running job per (tenant, kind): the
-- partial unique index is what makes enqueue's dedupe hold under races.
CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    kind             TEXT NOT NULL,
    args             TEXT NOT NULL,
    status           TEXT NOT NULL,
    progress         TEXT NOT NULL,
    checkpoint       TEXT,
    attempts         BIGINT NOT NULL DEFAULT 0,
    max_attempts     BIGINT NOT NULL DEFAULT 3,
    cancel_requested BIGINT NOT NULL DEFAULT 0,
    worker_id        TEXT,
    heartbeat_at     BIGINT,
    lease_until      BIGINT,
    run_after        BIGINT NOT NULL,
    error            TEXT,
    created_at       BIGINT NOT NULL,
    started_at       BIGINT,
    finished_at      BIGINT
);
CREATE UNIQUE INDEX jobs_one_active_per_kind ON jobs(tenant_id, kind) WHERE status IN ('queued', 'running');
-- Claiming walks queued jobs oldest first and stops at the limit.
CREATE INDEX jobs_claimable ON jobs(status, created_at, id);
CREATE INDEX jobs_by_tenant ON jobs(tenant_id, created_at);
CREATE INDEX jobs_lease ON jobs(status, lease_until);

-- A queue table swings between empty and thousands of rows; keep its
-- statistics fresh so the claim keeps walking jobs_claimable in order.
ALTER TABLE jobs SET (autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 200,
                      autovacuum_vacuum_scale_factor = 0.05);
