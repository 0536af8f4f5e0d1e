-- The ticket raised for a CVE at a company through the tenant's psa
-- connector, so asking again returns it instead of a duplicate. A row
-- without a ticket id is a creation under way (claimed_at says since when).
CREATE TABLE vuln_tickets (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    cve_id     TEXT NOT NULL,
    company_id TEXT NOT NULL,
    ticket_id  TEXT,
    summary    TEXT NOT NULL,
    claimed_at BIGINT NOT NULL,
    created_at BIGINT,
    PRIMARY KEY (tenant_id, cve_id, company_id)
);
CREATE INDEX vuln_tickets_ticket ON vuln_tickets(tenant_id, ticket_id);
