-- What changed in the inventory since the rollup last looked, so that a
-- rebuild after a sync recomputes only the assets and applications the
-- changes touched. As with `inventory_changes`, the database fills it, so
-- no write path can forget to report a change; the rollup reads it in the
-- snapshot it reads the inventory in and deletes exactly the entries it
-- read in the transaction that writes its result.
--
-- An item entry ('item', or 'item-removed' for a deleted row) keeps the
-- row's device now (`device_name`) and, when the row existed before
-- (`had_old`), every column the rollup reads as it was: the first entry
-- of a key since the last rollup tells what that rollup counted. A
-- record entry (a device record of an area whose detail attaches to
-- assets) keeps its device names only.
--
-- Nothing is recorded for a tenant until its first whole rebuild is about
-- to read (`rollup_state.recording`): that rebuild reads everything, so a
-- first sync of a million rows queues nothing. SQLite has one writer at a
-- time, so every write before the switch has committed by the time the
-- rebuild's snapshot begins.
--
-- No foreign key to tenants: the rows come from triggers that also fire
-- while a tenant's inventory is being cascaded away.
CREATE TABLE rollup_changes (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id            TEXT NOT NULL,
    kind                 TEXT NOT NULL,
    source               TEXT NOT NULL,
    item_key             TEXT NOT NULL,
    device_name          TEXT,
    had_old              SMALLINT NOT NULL,
    old_device_name      TEXT,
    old_device_id        TEXT,
    old_os_platform      TEXT,
    old_os_version       TEXT,
    old_user_email       TEXT,
    old_user_name        TEXT,
    old_application_name TEXT,
    old_vendor           TEXT,
    old_version          TEXT,
    old_publisher        TEXT,
    old_updated_at       BIGINT
);
CREATE INDEX rollup_changes_tenant ON rollup_changes(tenant_id, id);

ALTER TABLE rollup_state ADD COLUMN recording SMALLINT NOT NULL DEFAULT 0;

CREATE TRIGGER inventory_items_rollup_added AFTER INSERT ON inventory_items
WHEN (SELECT recording FROM rollup_state WHERE tenant_id = new.tenant_id) = 1
BEGIN
    INSERT INTO rollup_changes (tenant_id, kind, source, item_key, device_name, had_old)
    VALUES (new.tenant_id, 'item', new.source, new.item_key, new.device_name, 0);
END;

CREATE TRIGGER inventory_items_rollup_removed AFTER DELETE ON inventory_items
WHEN (SELECT recording FROM rollup_state WHERE tenant_id = old.tenant_id) = 1
BEGIN
    INSERT INTO rollup_changes (tenant_id, kind, source, item_key, device_name, had_old,
        old_device_name, old_device_id, old_os_platform, old_os_version, old_user_email,
        old_user_name, old_application_name, old_vendor, old_version, old_publisher, old_updated_at)
    VALUES (old.tenant_id, 'item-removed', old.source, old.item_key, NULL, 1,
        old.device_name, old.device_id, old.os_platform, old.os_version, old.user_email,
        old.user_name, old.application_name, old.vendor, old.version, old.publisher, old.updated_at);
END;

CREATE TRIGGER inventory_items_rollup_changed AFTER UPDATE ON inventory_items
WHEN (SELECT recording FROM rollup_state WHERE tenant_id = new.tenant_id) = 1
AND (old.device_name IS NOT new.device_name OR old.device_id IS NOT new.device_id
  OR old.os_platform IS NOT new.os_platform OR old.os_version IS NOT new.os_version
  OR old.user_email IS NOT new.user_email OR old.user_name IS NOT new.user_name
  OR old.application_name IS NOT new.application_name OR old.vendor IS NOT new.vendor
  OR old.version IS NOT new.version OR old.publisher IS NOT new.publisher
  OR old.updated_at IS NOT new.updated_at)
BEGIN
    INSERT INTO rollup_changes (tenant_id, kind, source, item_key, device_name, had_old,
        old_device_name, old_device_id, old_os_platform, old_os_version, old_user_email,
        old_user_name, old_application_name, old_vendor, old_version, old_publisher, old_updated_at)
    VALUES (new.tenant_id, 'item', new.source, new.item_key, new.device_name, 1,
        old.device_name, old.device_id, old.os_platform, old.os_version, old.user_email,
        old.user_name, old.application_name, old.vendor, old.version, old.publisher, old.updated_at);
END;

CREATE TRIGGER source_records_rollup_added AFTER INSERT ON source_records
WHEN new.record_type = 'device' AND new.source IN ('mdm', 'edr', 'scanner')
  AND (SELECT recording FROM rollup_state WHERE tenant_id = new.tenant_id) = 1
BEGIN
    INSERT INTO rollup_changes (tenant_id, kind, source, item_key, device_name, had_old)
    VALUES (new.tenant_id, 'record', new.source, new.record_key, new.device_name, 0);
END;

CREATE TRIGGER source_records_rollup_removed AFTER DELETE ON source_records
WHEN old.record_type = 'device' AND old.source IN ('mdm', 'edr', 'scanner')
  AND (SELECT recording FROM rollup_state WHERE tenant_id = old.tenant_id) = 1
BEGIN
    INSERT INTO rollup_changes (tenant_id, kind, source, item_key, device_name, had_old, old_device_name)
    VALUES (old.tenant_id, 'record', old.source, old.record_key, NULL, 1, old.device_name);
END;

CREATE TRIGGER source_records_rollup_changed AFTER UPDATE ON source_records
WHEN (old.record_type = 'device' OR new.record_type = 'device')
  AND new.source IN ('mdm', 'edr', 'scanner')
  AND (SELECT recording FROM rollup_state WHERE tenant_id = new.tenant_id) = 1
BEGIN
    INSERT INTO rollup_changes (tenant_id, kind, source, item_key, device_name, had_old, old_device_name)
    VALUES (new.tenant_id, 'record', new.source, new.record_key, new.device_name, 1, old.device_name);
END;

-- What the incremental rebuild adds to and takes from: each application's
-- tallies (devices, rows and per-value counts, which add up over disjoint
-- sets of devices), each asset's device names as the inventory spells them
-- where that differs from the cleaned name, the spellings of a blank
-- device name, the source completion times the rows' last_seen reflect,
-- and whether the stored tallies answer every change not yet read.
ALTER TABLE applications ADD COLUMN tally TEXT;
ALTER TABLE assets ADD COLUMN raw_names TEXT NOT NULL DEFAULT '[]';
ALTER TABLE rollup_state ADD COLUMN blank_names TEXT NOT NULL DEFAULT '[]';
ALTER TABLE rollup_state ADD COLUMN completions TEXT NOT NULL DEFAULT '{}';
ALTER TABLE rollup_state ADD COLUMN tallied SMALLINT NOT NULL DEFAULT 0;
