-- The spec keeps one queued or running job per tenant and kind; 0061 let a
-- parse be queued per blob store besides. A job still names the store it
-- needs (affinity), but an upload kept by another store now waits for the
-- queued job to end, and the parse hands it on (or the sweep does).
-- Of several queued jobs of one kind for a tenant, all but the oldest are
-- closed: their uploads wait for the sweep.
UPDATE jobs SET status = 'canceled', finished_at = created_at,
    error = 'merged into the one job of its kind queued for the tenant'
WHERE status = 'queued' AND EXISTS (
    SELECT 1 FROM jobs AS older
    WHERE older.status = 'queued' AND older.tenant_id = jobs.tenant_id
      AND older.kind = jobs.kind
      AND (older.created_at < jobs.created_at
           OR (older.created_at = jobs.created_at AND older.id < jobs.id)));
DROP INDEX jobs_one_queued_per_kind;
CREATE UNIQUE INDEX jobs_one_queued_per_kind ON jobs(tenant_id, kind) WHERE status = 'queued';
