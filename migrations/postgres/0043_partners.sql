-- Partner accounts: a managed service provider's tenant (the partner) owns
-- customer tenants. A customer's `partner_id` names its partner; a tenant
-- is a partner once it has `is_partner` set (by creating its first
-- customer). Nothing here widens what a customer's own users see.
ALTER TABLE tenants ADD COLUMN partner_id TEXT REFERENCES tenants(id);
ALTER TABLE tenants ADD COLUMN is_partner BIGINT NOT NULL DEFAULT 0;
CREATE INDEX tenants_by_partner ON tenants(partner_id, name);

-- A session acting in a customer tenant: the user stays the partner's, the
-- tenant every route reads is this one.
ALTER TABLE sessions ADD COLUMN acting_tenant_id TEXT;
CREATE INDEX sessions_acting ON sessions(acting_tenant_id);

-- Named sets of a partner's customers ("maintenance contract").
CREATE TABLE partner_groups (
    id          TEXT PRIMARY KEY,
    partner_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    description TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    UNIQUE (partner_id, name)
);

CREATE TABLE partner_group_members (
    group_id    TEXT NOT NULL REFERENCES partner_groups(id) ON DELETE CASCADE,
    customer_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, customer_id)
);
CREATE INDEX partner_group_members_customer ON partner_group_members(customer_id);

-- Which customers a partner analyst may see: all, or the listed customers
-- and the members of the listed groups (JSON arrays of ids). An analyst
-- without a row sees no customer.
CREATE TABLE partner_analyst_scopes (
    user_id       TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    partner_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    all_customers BIGINT NOT NULL,
    customer_ids  TEXT NOT NULL,
    group_ids     TEXT NOT NULL,
    updated_at    BIGINT NOT NULL
);

-- Every write a partner user made inside a customer (acting) or on the
-- partner's routes: who, where, what and how it ended.
CREATE TABLE partner_audit (
    id          TEXT PRIMARY KEY,
    partner_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    customer_id TEXT,
    user_id     TEXT NOT NULL,
    user_email  TEXT NOT NULL,
    method      TEXT NOT NULL,
    path        TEXT NOT NULL,
    status      BIGINT NOT NULL,
    at          BIGINT NOT NULL
);
CREATE INDEX partner_audit_by_time ON partner_audit(partner_id, at);

-- The partner's name, logo and colours on the reports it makes for its
-- customers.
CREATE TABLE partner_branding (
    partner_id    TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    display_name  TEXT,
    logo_png      TEXT,
    primary_color TEXT,
    accent_color  TEXT,
    updated_at    BIGINT NOT NULL
);

-- A customer's config for an area may be its partner's, shared: the row
-- then names the partner and holds only the customer's scope (which
-- clients, groups or company of the partner's upstream are this
-- customer's); connector and secrets are read from the partner's own row
-- at each use, so the secrets are never copied into the customer.
ALTER TABLE integration_configs ADD COLUMN shared_from TEXT;
CREATE INDEX integration_configs_shared ON integration_configs(shared_from, integration);
