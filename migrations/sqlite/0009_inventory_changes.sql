-- Which installed-software keys changed since the vulnerability matcher
-- last looked: a queue the database itself fills, so no write path of the
-- inventory (integration syncs, pruning, CSV uploads, removing an
-- integration) can forget to report a change. The matcher reads it, re-
-- matches those keys, and deletes exactly the rows it read in the same
-- transaction as the findings it wrote.
--
-- No foreign key to tenants: the rows come from triggers that also fire
-- while a tenant's inventory is being cascaded away.
CREATE TABLE inventory_changes (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id        TEXT NOT NULL,
    device_name      TEXT NOT NULL,
    application_name TEXT NOT NULL,
    version          TEXT NOT NULL
);
CREATE INDEX inventory_changes_tenant ON inventory_changes(tenant_id, id);

-- Re-reading the rows of changed keys looks up (device, application): the
-- device index grows the application so neither engine walks every row of
-- a widely installed application instead.
DROP INDEX inventory_items_device;
CREATE INDEX inventory_items_device ON inventory_items(tenant_id, device_name, application_name);

CREATE TRIGGER inventory_items_added AFTER INSERT ON inventory_items
WHEN new.device_name IS NOT NULL AND new.application_name IS NOT NULL
BEGIN
    INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
    VALUES (new.tenant_id, new.device_name, new.application_name, COALESCE(new.version, ''));
END;

CREATE TRIGGER inventory_items_removed AFTER DELETE ON inventory_items
WHEN old.device_name IS NOT NULL AND old.application_name IS NOT NULL
BEGIN
    INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
    VALUES (old.tenant_id, old.device_name, old.application_name, COALESCE(old.version, ''));
END;

-- A sync rewrites every row it sees; only a change of what matching reads
-- is a change.
CREATE TRIGGER inventory_items_changed AFTER UPDATE ON inventory_items
WHEN old.device_name IS NOT new.device_name OR old.application_name IS NOT new.application_name
  OR old.version IS NOT new.version OR old.publisher IS NOT new.publisher
  OR old.vendor IS NOT new.vendor OR old.os_platform IS NOT new.os_platform
BEGIN
    INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
    SELECT old.tenant_id, old.device_name, old.application_name, COALESCE(old.version, '')
    WHERE old.device_name IS NOT NULL AND old.application_name IS NOT NULL;
    INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
    SELECT new.tenant_id, new.device_name, new.application_name, COALESCE(new.version, '')
    WHERE new.device_name IS NOT NULL AND new.application_name IS NOT NULL;
END;

-- What the last match identified each distinct application (as installed,
-- with its publisher or '' ) as: a product, skipped by a rule or mapping,
-- or unmatched with the reason and the dictionary's candidates. A later
-- match re-identifies these and re-matches only the applications whose
-- answer or whose product's CVE data changed; the unmatched list is read
-- from here. Replaces vuln_unmatched_apps, whose stored device count went
-- stale between full matches; the list now counts devices when it is read.
DROP TABLE vuln_unmatched_apps;
CREATE TABLE vuln_identified_apps (
    tenant_id        TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    application_name TEXT NOT NULL,
    publisher        TEXT NOT NULL,
    outcome          TEXT NOT NULL,
    vendor           TEXT,
    product          TEXT,
    reason           TEXT,
    candidates       TEXT NOT NULL DEFAULT '[]',
    seen_at          BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, application_name, publisher)
);
CREATE INDEX vuln_identified_apps_outcome ON vuln_identified_apps(tenant_id, outcome);

-- How a scan ran: 'full' (the whole inventory), 'changes' (only what
-- changed since the tenant was last matched) or 'scoped' (one
-- application, vendor or device); NULL until it has run.
ALTER TABLE vuln_scans ADD COLUMN mode TEXT;
