-- Findings a scanner reported, one row per (finding record, CVE), copied
-- from the integration area's finding records by the vuln_scan job so the
-- vulnerabilities views read them beside the findings Cairn matched.
CREATE TABLE vuln_scanner_findings (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    -- The area the finding record belongs to (e.g. scanner) and its key.
    area        TEXT NOT NULL,
    record_key  TEXT NOT NULL,
    cve_id      TEXT NOT NULL,
    device_name TEXT NOT NULL,
    title       TEXT NOT NULL,
    -- The scanner's check: its plugin or QID.
    check_id    TEXT NOT NULL,
    severity    TEXT,
    -- open or fixed
    status      TEXT NOT NULL,
    first_seen  BIGINT NOT NULL,
    last_seen   BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, area, record_key, cve_id)
);
CREATE INDEX vuln_scanner_findings_cve ON vuln_scanner_findings(tenant_id, cve_id, status);

-- The version of the finding records last copied, so an unchanged set is
-- not copied again.
CREATE TABLE vuln_scanner_imports (
    tenant_id   TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    version     TEXT NOT NULL,
    imported_at BIGINT NOT NULL
);
