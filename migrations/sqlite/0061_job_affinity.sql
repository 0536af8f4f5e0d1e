-- A job that needs a file kept on one process's local disk (the parse of
-- an upload) names that store; only a process holding it claims the job.
-- '' runs anywhere. One job is queued per tenant, kind and store.
ALTER TABLE jobs ADD COLUMN affinity TEXT NOT NULL DEFAULT '';
DROP INDEX jobs_one_queued_per_kind;
CREATE UNIQUE INDEX jobs_one_queued_per_kind ON jobs(tenant_id, kind, affinity) WHERE status = 'queued';

-- The store that keeps an upload's file ('' when every process reads it).
ALTER TABLE csv_uploads ADD COLUMN store TEXT NOT NULL DEFAULT '';
