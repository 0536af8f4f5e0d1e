-- The matcher's change queue (0009, per statement since 0031) is filled
-- for a tenant only once its first whole match is about to read, as the
-- rollup's queue is (0027): that match reads the whole inventory and
-- consumes every entry, so the entries a tenant's first syncs queued (one
-- per new item, half a million for a large first sync) were written only
-- to be deleted unread. A row here turns the tenant's queue on; the
-- matcher adds it before a whole match reads its queue.
--
-- A writer takes a shared advisory lock on the tenant before it looks at
-- the switch and holds it to its commit; the matcher adds the row under
-- the exclusive lock, so every write that saw the queue off has committed
-- before the match reads (9 marks this lock, after 0009).
--
-- Every tenant that exists now keeps its queue on, so nothing changes for
-- a deployment that is running.
CREATE TABLE inventory_changes_recording (
    tenant_id TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE
);
INSERT INTO inventory_changes_recording (tenant_id) SELECT id FROM tenants;

CREATE FUNCTION inventory_changes_recorded(tenant TEXT) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(9, hashtext(tenant));
    RETURN EXISTS (SELECT 1 FROM inventory_changes_recording WHERE tenant_id = tenant);
END;
$$;

CREATE OR REPLACE FUNCTION inventory_items_changes_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
    SELECT tenant_id, device_name, application_name, COALESCE(version, '') FROM added
    WHERE device_name IS NOT NULL AND application_name IS NOT NULL
      AND tenant_id IN (SELECT t FROM (SELECT DISTINCT tenant_id AS t FROM added) d
                        WHERE inventory_changes_recorded(t));
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION inventory_items_changes_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
    SELECT tenant_id, device_name, application_name, COALESCE(version, '') FROM removed
    WHERE device_name IS NOT NULL AND application_name IS NOT NULL
      AND tenant_id IN (SELECT t FROM (SELECT DISTINCT tenant_id AS t FROM removed) d
                        WHERE inventory_changes_recorded(t));
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION inventory_items_changes_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
    SELECT k.tenant_id, k.device_name, k.application_name, k.version
    FROM before_rows o JOIN after_rows n
      ON n.tenant_id = o.tenant_id AND n.source = o.source AND n.item_key = o.item_key
    CROSS JOIN LATERAL (VALUES
        (o.tenant_id, o.device_name, o.application_name, COALESCE(o.version, '')),
        (n.tenant_id, n.device_name, n.application_name, COALESCE(n.version, ''))
    ) AS k(tenant_id, device_name, application_name, version)
    WHERE (o.device_name IS DISTINCT FROM n.device_name
       OR o.application_name IS DISTINCT FROM n.application_name
       OR o.version IS DISTINCT FROM n.version OR o.publisher IS DISTINCT FROM n.publisher
       OR o.vendor IS DISTINCT FROM n.vendor OR o.os_platform IS DISTINCT FROM n.os_platform)
      AND k.device_name IS NOT NULL AND k.application_name IS NOT NULL
      AND n.tenant_id IN (SELECT t FROM (SELECT DISTINCT tenant_id AS t FROM after_rows) d
                          WHERE inventory_changes_recorded(t));
    RETURN NULL;
END;
$$;
