-- Assets get a stable integer id, and their search terms point at it
-- instead of repeating the text key: a rule's lookup then yields a set of
-- integers the page and the count probe, not a set of strings. The text key
-- stays the primary key.
DROP TABLE asset_terms;
ALTER TABLE assets ADD COLUMN id BIGSERIAL;
ALTER TABLE assets ADD CONSTRAINT assets_id_unique UNIQUE (id);

-- Text compares byte by byte ("C"), as on SQLite.
CREATE TABLE asset_terms (
    tenant_id    TEXT NOT NULL,
    asset_id     BIGINT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    field        TEXT NOT NULL,
    text_value   TEXT COLLATE "C",
    number_value DOUBLE PRECISION
);
CREATE INDEX asset_terms_by_value ON asset_terms(tenant_id, field, text_value, number_value, asset_id);
CREATE INDEX asset_terms_by_asset ON asset_terms(asset_id);

-- The terms were dropped: the next rebuild of every tenant is a whole one.
UPDATE rollup_state SET requested = requested + 1, tallied = 0;

-- As in 0028: a search over the terms is an index-only scan only once
-- vacuum has marked the pages all-visible, and planned well only once they
-- are analyzed; a whole rebuild rewrites many at once.
ALTER TABLE asset_terms SET (autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.02);
