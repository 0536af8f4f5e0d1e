-- A tenant's status for a CVE of one product, keyed by (vendor, product,
-- CVE) so it survives version upgrades; empty vendor and product for the
-- CVEs a scanner reported. `suppress_until` is when the status stops
-- taking its findings out of the open counts (far future for not
-- affected and false positive, the expiry for risk accepted, NULL else).
CREATE TABLE vuln_triage (
    tenant_id      TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    vendor         TEXT NOT NULL,
    product        TEXT NOT NULL,
    cve_id         TEXT NOT NULL,
    status         TEXT NOT NULL,
    justification  TEXT,
    expires_at     BIGINT,
    assignee_id    TEXT,
    suppress_until BIGINT,
    updated_by     TEXT NOT NULL,
    updated_at     BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, cve_id, vendor, product)
);

-- Every change of a triage status: who, when, from and to, and why.
CREATE TABLE vuln_triage_history (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    vendor        TEXT NOT NULL,
    product       TEXT NOT NULL,
    cve_id        TEXT NOT NULL,
    from_status   TEXT NOT NULL,
    to_status     TEXT NOT NULL,
    justification TEXT,
    expires_at    BIGINT,
    assignee_id   TEXT,
    comment       TEXT NOT NULL,
    changed_by    TEXT NOT NULL,
    changed_at    BIGINT NOT NULL
);
CREATE INDEX vuln_triage_history_cve ON vuln_triage_history(tenant_id, cve_id, changed_at);
