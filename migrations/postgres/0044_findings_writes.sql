-- Every transaction that writes a tenant's findings (a scan's results, a
-- scanner's copied findings) or its triage counts itself here: figures
-- kept in memory per tenant (a partner's overview) are counted again only
-- when the count moved.
CREATE TABLE vuln_findings_writes (
    tenant_id TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    writes    BIGINT NOT NULL
);
