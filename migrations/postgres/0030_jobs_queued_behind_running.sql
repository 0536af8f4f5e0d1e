-- A request that arrives while a job of its kind runs gets a queued job of
-- its own, which starts when the running one ends: the running one may
-- already have read its input. Enqueue coalesces only into a queued job;
-- claim leaves a queued job waiting while its kind runs for the tenant.
DROP INDEX jobs_one_active_per_kind;
CREATE UNIQUE INDEX jobs_one_queued_per_kind ON jobs(tenant_id, kind) WHERE status = 'queued';
CREATE UNIQUE INDEX jobs_one_running_per_kind ON jobs(tenant_id, kind) WHERE status = 'running';
