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
    id               BIGSERIAL PRIMARY KEY,
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

CREATE FUNCTION inventory_items_log_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A sync rewrites every row it sees; only a change of what matching
    -- reads is a change.
    IF TG_OP = 'UPDATE' AND NOT (
        OLD.device_name IS DISTINCT FROM NEW.device_name
        OR OLD.application_name IS DISTINCT FROM NEW.application_name
        OR OLD.version IS DISTINCT FROM NEW.version
        OR OLD.publisher IS DISTINCT FROM NEW.publisher
        OR OLD.vendor IS DISTINCT FROM NEW.vendor
        OR OLD.os_platform IS DISTINCT FROM NEW.os_platform) THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE')
        AND OLD.device_name IS NOT NULL AND OLD.application_name IS NOT NULL THEN
        INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
        VALUES (OLD.tenant_id, OLD.device_name, OLD.application_name, COALESCE(OLD.version, ''));
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT')
        AND NEW.device_name IS NOT NULL AND NEW.application_name IS NOT NULL THEN
        INSERT INTO inventory_changes (tenant_id, device_name, application_name, version)
        VALUES (NEW.tenant_id, NEW.device_name, NEW.application_name, COALESCE(NEW.version, ''));
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER inventory_items_log_change AFTER INSERT OR UPDATE OR DELETE ON inventory_items
FOR EACH ROW EXECUTE FUNCTION inventory_items_log_change();

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
