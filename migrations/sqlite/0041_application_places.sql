-- Each application's place in the list's default order (most installed
-- first, then name), numbered from 1 by the rollup in its last
-- transaction, and the rebuild those places belong to. While they are
-- current (`places_at = rollup_at`), a default page at any depth is one
-- index seek rather than skipping every row before it.
ALTER TABLE applications ADD COLUMN place BIGINT;
ALTER TABLE rollup_state ADD COLUMN places_at BIGINT;
CREATE INDEX applications_by_place ON applications(tenant_id, place);
