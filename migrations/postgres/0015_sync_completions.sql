-- When each synced source last completed a run. A sync rewrites only rows
-- that changed, so a row's updated_at says when it last changed; every row
-- a source still holds after a complete run was reported by that run, so
-- readers take the later of the two as when a row was last reported (an
-- asset's last_seen, the freshest value across sources).
CREATE TABLE sync_completions (
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    source       TEXT NOT NULL,
    completed_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, source)
);
