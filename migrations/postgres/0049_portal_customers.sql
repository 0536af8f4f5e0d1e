-- A portal client may stand for one of the partner's customer tenants:
-- through the portal API it then decides that customer's SLA exceptions.
ALTER TABLE portal_clients ADD COLUMN customer_id TEXT REFERENCES tenants(id) ON DELETE SET NULL;
