-- Structured search reads each application and asset through a small JSON
-- document the rollup writes beside it: text fields case-folded in Rust
-- (one rule on both engines, non-ASCII included), numbers and booleans as
-- they are (jsonb here, so a search does not parse text per row). `sort_key`
-- is the folded name, indexed for the default order.
ALTER TABLE applications ADD COLUMN search_doc JSONB NOT NULL DEFAULT '{}';
ALTER TABLE applications ADD COLUMN sort_key TEXT NOT NULL DEFAULT '';
ALTER TABLE assets ADD COLUMN search_doc JSONB NOT NULL DEFAULT '{}';
ALTER TABLE assets ADD COLUMN sort_key TEXT NOT NULL DEFAULT '';
CREATE INDEX applications_by_sort_key ON applications(tenant_id, sort_key, name);
CREATE INDEX assets_by_sort_key ON assets(tenant_id, sort_key, asset_key);

-- Rows written before this migration have empty documents: ask every
-- tenant's rollup for a rebuild, which the rollup sweeper then enqueues.
UPDATE rollup_state SET requested = requested + 1;
