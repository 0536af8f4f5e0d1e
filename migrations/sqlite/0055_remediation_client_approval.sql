-- Remediation approved by the customer: a tenant whose plans need its
-- client's approval through the client portal after an admin's, and the
-- client's decision on a plan (`status` awaiting_client, then approved or
-- rejected).
CREATE TABLE remediation_settings (
    tenant_id       TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    client_approval BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
ALTER TABLE remediation_plans ADD COLUMN client_decided_by TEXT;
ALTER TABLE remediation_plans ADD COLUMN client_decided_at BIGINT;
ALTER TABLE remediation_plans ADD COLUMN client_comment TEXT;
