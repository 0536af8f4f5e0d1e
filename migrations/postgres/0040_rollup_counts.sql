-- How many applications and assets the tenant's last rebuild left, counted
-- in its last transaction: an unfiltered list's total without scanning the
-- table on every page. NULL until the next rebuild (lists count then).
ALTER TABLE rollup_state ADD COLUMN applications_count BIGINT;
ALTER TABLE rollup_state ADD COLUMN assets_count BIGINT;
