-- The matcher's change queue (0009) is filled for a tenant only once its
-- first whole match is about to read, as the rollup's queue is (0027):
-- that match reads the whole inventory and consumes every entry, so the
-- entries a tenant's first syncs queued (one per new item, half a million
-- for a large first sync) were written only to be deleted unread. A row
-- here turns the tenant's queue on; the matcher adds it before a whole
-- match reads its queue. SQLite has one writer at a time, so every write
-- that saw the queue off has committed before that match reads.
--
-- Every tenant that exists now keeps its queue on, so nothing changes for
-- a deployment that is running.
CREATE TABLE inventory_changes_recording (
    tenant_id TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE
);
INSERT INTO inventory_changes_recording (tenant_id) SELECT id FROM tenants;

DROP TRIGGER inventory_items_added;
CREATE TRIGGER inventory_items_added AFTER INSERT ON inventory_items
WHEN new.device_name IS NOT NULL AND new.application_name IS NOT NULL
  AND EXISTS (SELECT 1 FROM inventory_changes_recording WHERE tenant_id = new.tenant_id)
BEGIN
    INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
    VALUES (new.tenant_id, new.device_name, new.application_name, COALESCE(new.version, ''));
END;

DROP TRIGGER inventory_items_removed;
CREATE TRIGGER inventory_items_removed AFTER DELETE ON inventory_items
WHEN old.device_name IS NOT NULL AND old.application_name IS NOT NULL
  AND EXISTS (SELECT 1 FROM inventory_changes_recording WHERE tenant_id = old.tenant_id)
BEGIN
    INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
    VALUES (old.tenant_id, old.device_name, old.application_name, COALESCE(old.version, ''));
END;

DROP TRIGGER inventory_items_changed;
CREATE TRIGGER inventory_items_changed AFTER UPDATE ON inventory_items
WHEN (old.device_name IS NOT new.device_name OR old.application_name IS NOT new.application_name
  OR old.version IS NOT new.version OR old.publisher IS NOT new.publisher
  OR old.vendor IS NOT new.vendor OR old.os_platform IS NOT new.os_platform)
  AND EXISTS (SELECT 1 FROM inventory_changes_recording WHERE tenant_id = new.tenant_id)
BEGIN
    INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
    SELECT old.tenant_id, old.device_name, old.application_name, COALESCE(old.version, '')
    WHERE old.device_name IS NOT NULL AND old.application_name IS NOT NULL;
    INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
    SELECT new.tenant_id, new.device_name, new.application_name, COALESCE(new.version, '')
    WHERE new.device_name IS NOT NULL AND new.application_name IS NOT NULL;
END;
