-- The vulnerability knowledge base (global reference data, shared by every
-- tenant) and what matching a tenant's inventory against it finds (tenant
-- data). Booleans are BIGINT 0/1; timestamps Unix ms; JSON is text.

CREATE TABLE vuln_cves (
    id               TEXT PRIMARY KEY,
    description      TEXT NOT NULL,
    status           TEXT NOT NULL,
    published        BIGINT,
    last_modified    BIGINT NOT NULL,
    severity         TEXT,
    cvss_score       DOUBLE PRECISION,
    cvss_version     TEXT,
    cvss_vector      TEXT,
    metrics          TEXT NOT NULL,
    cwe_ids          TEXT NOT NULL,
    refs             TEXT NOT NULL,
    -- 1 when NVD gave configurations; CNA `affected[]` rows are used only
    -- for CVEs without them.
    has_nvd_config   BIGINT NOT NULL,
    -- When the CNA rows were last replaced (their record's modification time).
    cna_modified     BIGINT,
    source           TEXT NOT NULL,
    imported_at      BIGINT NOT NULL
);
CREATE INDEX vuln_cves_modified ON vuln_cves(last_modified);

-- One row per CPE match of a CVE's NVD configurations (source 'nvd') or per
-- version entry of its CNA record (source 'cna'), keyed by CPE-style vendor
-- and product.
CREATE TABLE vuln_match_rows (
    cve_id              TEXT NOT NULL,
    source              TEXT NOT NULL,
    seq                 BIGINT NOT NULL,
    vendor              TEXT NOT NULL,
    product             TEXT NOT NULL,
    part                TEXT NOT NULL,
    cpe_version         TEXT NOT NULL,
    cpe_update          TEXT NOT NULL,
    target_sw           TEXT NOT NULL,
    criteria            TEXT NOT NULL,
    match_id            TEXT,
    version_start       TEXT,
    start_including     BIGINT NOT NULL,
    version_end         TEXT,
    end_including       BIGINT NOT NULL,
    vulnerable          BIGINT NOT NULL,
    negate              BIGINT NOT NULL,
    -- JSON array of CPE criteria, one of which must hold on the device (the
    -- other node of an AND configuration); '[]' when none.
    platforms           TEXT NOT NULL,
    PRIMARY KEY (cve_id, source, seq)
);
CREATE INDEX vuln_match_rows_product ON vuln_match_rows(vendor, product);

-- Known CPE vendor/product pairs for candidate lookup: from NVD
-- configurations and from CPE dictionary files.
CREATE TABLE vuln_cpe_products (
    vendor  TEXT NOT NULL,
    product TEXT NOT NULL,
    title   TEXT,
    PRIMARY KEY (vendor, product)
);

CREATE TABLE vuln_cwes (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT NOT NULL
);

CREATE TABLE vuln_kev (
    cve_id             TEXT PRIMARY KEY,
    vendor_project     TEXT NOT NULL,
    product            TEXT NOT NULL,
    name               TEXT NOT NULL,
    date_added         TEXT NOT NULL,
    due_date           TEXT,
    ransomware_use     TEXT NOT NULL,
    required_action    TEXT NOT NULL
);

CREATE TABLE vuln_epss (
    cve_id     TEXT PRIMARY KEY,
    score      DOUBLE PRECISION NOT NULL,
    percentile DOUBLE PRECISION NOT NULL,
    score_date TEXT NOT NULL
);

-- Where each source stands: the NVD window reached, the last KEV and EPSS
-- loads, and a counter bumped by every change of reference data (a tenant
-- whose findings were computed at an older generation re-matches the
-- products that changed since).
CREATE TABLE vuln_source_state (
    source     TEXT PRIMARY KEY,
    position   TEXT,
    updated_at BIGINT NOT NULL,
    detail     TEXT NOT NULL
);

-- Products (vendor, product) whose reference rows changed, with the
-- generation that changed them.
CREATE TABLE vuln_product_changes (
    vendor     TEXT NOT NULL,
    product    TEXT NOT NULL,
    generation BIGINT NOT NULL,
    PRIMARY KEY (vendor, product)
);
CREATE INDEX vuln_product_changes_generation ON vuln_product_changes(generation);

-- Tenant mapping overrides: an application name (normalized, lowercase) to a
-- CPE vendor/product, or to nothing (skip).
CREATE TABLE vuln_app_mappings (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    app_key     TEXT NOT NULL,
    vendor      TEXT,
    product     TEXT,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, app_key)
);

-- Applications the matcher could not map (no candidate, or an ambiguous
-- one), for a person to map.
CREATE TABLE vuln_unmatched_apps (
    tenant_id     TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    app_key       TEXT NOT NULL,
    name          TEXT NOT NULL,
    publisher     TEXT,
    reason        TEXT NOT NULL,
    candidates    TEXT NOT NULL,
    device_count  BIGINT NOT NULL,
    seen_at       BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, app_key)
);

CREATE TABLE vuln_findings (
    tenant_id        TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    device_name      TEXT NOT NULL,
    application_name TEXT NOT NULL,
    version          TEXT NOT NULL,
    cve_id           TEXT NOT NULL,
    vendor           TEXT NOT NULL,
    product          TEXT NOT NULL,
    source           TEXT NOT NULL,
    criteria         TEXT NOT NULL,
    match_id         TEXT,
    version_range    TEXT NOT NULL,
    fix_version      TEXT,
    status           TEXT NOT NULL,
    first_seen       BIGINT NOT NULL,
    last_seen        BIGINT NOT NULL,
    fixed_at         BIGINT,
    PRIMARY KEY (tenant_id, device_name, application_name, version, cve_id)
);
CREATE INDEX vuln_findings_cve ON vuln_findings(tenant_id, cve_id, status);
CREATE INDEX vuln_findings_app ON vuln_findings(tenant_id, application_name, status);
CREATE INDEX vuln_findings_status ON vuln_findings(tenant_id, status);

CREATE TABLE vuln_scans (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    job_id        TEXT,
    scope         TEXT NOT NULL,
    status        TEXT NOT NULL,
    error         TEXT,
    created_at    BIGINT NOT NULL,
    finished_at   BIGINT,
    applications  BIGINT NOT NULL,
    devices       BIGINT NOT NULL,
    findings      BIGINT NOT NULL,
    new_findings  BIGINT NOT NULL,
    fixed_findings BIGINT NOT NULL,
    by_severity   TEXT NOT NULL
);
CREATE INDEX vuln_scans_tenant ON vuln_scans(tenant_id, created_at);

-- What one scan found, per CVE, with the affected (device, application,
-- version) triples as a JSON array: one row per CVE keeps a scan's record
-- small to write however many devices it touched.
CREATE TABLE vuln_scan_cves (
    scan_id      TEXT NOT NULL REFERENCES vuln_scans(id) ON DELETE CASCADE,
    tenant_id    TEXT NOT NULL,
    cve_id       TEXT NOT NULL,
    device_count BIGINT NOT NULL,
    affected     TEXT NOT NULL,
    PRIMARY KEY (scan_id, cve_id)
);

-- Per tenant: the reference generation and inventory time its findings were
-- last computed at, so the next scan can re-match only what changed.
CREATE TABLE vuln_tenant_state (
    tenant_id          TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    matched_generation BIGINT NOT NULL,
    matched_at         BIGINT NOT NULL
);

-- The reference loads (NVD, KEV, EPSS) are jobs like any other; the queue
-- keys jobs by tenant, so they belong to this reserved tenant, which has
-- no members.
INSERT INTO tenants (id, name, created_at, updated_at)
VALUES ('00000000-0000-0000-0000-000000000000', 'Cairn reference data', 0, 0);
