-- Contract v0.2: integrations are areas served by connectors. A tenant's
-- config is per area (`integration` holds the area) and names the
-- connector it uses; NULL means "the area's only loaded connector" (configs
-- stored before areas existed).
ALTER TABLE integration_configs ADD COLUMN connector TEXT;

-- A source record belongs to a declared collection (`kind` holds its
-- name), has a record type the host joins on (`device`, `threat`, ...),
-- and carries the collection's normalized fields as a JSON object.
ALTER TABLE source_records ADD COLUMN record_type TEXT NOT NULL DEFAULT '';
ALTER TABLE source_records ADD COLUMN fields TEXT NOT NULL DEFAULT '{}';
UPDATE source_records SET record_type = kind;
CREATE INDEX source_records_type ON source_records(tenant_id, record_type, device_name);
