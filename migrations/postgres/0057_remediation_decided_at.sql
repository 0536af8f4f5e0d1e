-- When an item reached its verdict (fixed, failed, remediation_failed), by
-- the service's clock: automation's tickets and triggers follow verdicts
-- in the order they were reached. `verified_at` is the deciding sync's
-- time, which comes before the verdict itself.
ALTER TABLE remediation_items ADD COLUMN decided_at BIGINT;
UPDATE remediation_items SET decided_at = COALESCE(verified_at, reported_at, started_at)
 WHERE state IN ('fixed', 'failed', 'remediation_failed');
CREATE INDEX remediation_items_decided ON remediation_items(decided_at);
