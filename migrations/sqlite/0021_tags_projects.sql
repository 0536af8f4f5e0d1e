-- A tenant's tags (unique by folded name) and what they are assigned to:
-- a CVE by id, a vendor or a product by name (folded in `entity_key`).
CREATE TABLE tags (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    name_key    TEXT NOT NULL,
    color       TEXT NOT NULL,
    description TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    UNIQUE (tenant_id, name_key)
);

CREATE TABLE tag_assignments (
    tag_id      TEXT NOT NULL REFERENCES tags(id) ON DELETE CASCADE,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    -- cve, vendor or product
    entity_type TEXT NOT NULL,
    entity_name TEXT NOT NULL,
    entity_key  TEXT NOT NULL,
    created_by  TEXT,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (tag_id, entity_type, entity_key)
);
CREATE INDEX tag_assignments_entity ON tag_assignments(tenant_id, entity_type, entity_key);

-- A tenant's projects: named sets of vendors and products (CPE-style
-- names, folded in `name_key`).
CREATE TABLE projects (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    name_key    TEXT NOT NULL,
    description TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    UNIQUE (tenant_id, name_key)
);

CREATE TABLE project_entries (
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    -- vendor or product
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    name_key   TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (project_id, kind, name_key)
);
