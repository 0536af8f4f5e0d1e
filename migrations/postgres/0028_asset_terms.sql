-- Structured search over assets reads a child table instead of each
-- asset's JSON document: one row per searchable value (a name the asset
-- was seen under, a source, a text field of its row, an allow-listed key
-- of its mdm, edr or scanner record), text case-folded in Rust, numbers,
-- dates and booleans (0/1) as numbers. A rule compiles to a lookup in
-- `asset_terms_by_value`, so the count of a search no longer parses every
-- asset of the tenant. The document stays for sorting by those fields.
-- Text compares byte by byte ("C"), as on SQLite.
CREATE TABLE asset_terms (
    tenant_id    TEXT NOT NULL,
    asset_key    TEXT NOT NULL,
    field        TEXT NOT NULL,
    text_value   TEXT COLLATE "C",
    number_value DOUBLE PRECISION,
    FOREIGN KEY (tenant_id, asset_key) REFERENCES assets(tenant_id, asset_key) ON DELETE CASCADE
);
CREATE INDEX asset_terms_by_value ON asset_terms(tenant_id, field, text_value, number_value, asset_key);
CREATE INDEX asset_terms_by_asset ON asset_terms(tenant_id, asset_key);

-- Assets written before this migration have no terms: the next rebuild of
-- every tenant is a whole one, and is asked for now.
UPDATE rollup_state SET requested = requested + 1, tallied = 0;

-- A whole rebuild rewrites many terms at once; a search over them is an
-- index-only scan only once vacuum has marked the pages all-visible, and
-- planned well only once they are analyzed: do both soon after.
ALTER TABLE asset_terms SET (autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.02);
