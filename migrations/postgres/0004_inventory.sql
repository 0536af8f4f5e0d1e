-- What the rollup rebuild derives from inventory items, per tenant: the
-- software rollup (`applications`) and the NetBIOS asset view (`assets`).
-- product, site, size_bytes, category and install_status stay NULL until a
-- source reports them. Rows carry the `rollup_at` of the rebuild that wrote them; a rebuild
-- deletes the tenant's rows with any other stamp.
CREATE TABLE applications (
    id                  TEXT PRIMARY KEY,
    tenant_id           TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name                TEXT NOT NULL,
    vendor              TEXT,
    device_count        BIGINT NOT NULL,
    most_common_version TEXT,
    newest_version      TEXT,
    oldest_version      TEXT,
    version_counts      TEXT NOT NULL,
    platforms           TEXT NOT NULL,
    versions            TEXT NOT NULL,
    sources             TEXT NOT NULL,
    publisher           TEXT,
    product             TEXT,
    site                TEXT,
    size_bytes          DOUBLE PRECISION,
    category            TEXT,
    install_status      TEXT,
    rollup_at           BIGINT NOT NULL,
    UNIQUE (tenant_id, name)
);
CREATE INDEX applications_by_devices ON applications(tenant_id, device_count DESC, name);
CREATE INDEX applications_by_vendor ON applications(tenant_id, vendor);

CREATE TABLE assets (
    tenant_id         TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    asset_key         TEXT NOT NULL,
    device_name       TEXT NOT NULL,
    device_id         TEXT,
    os_platform       TEXT,
    os_version        TEXT,
    user_email        TEXT,
    user_name         TEXT,
    application_count BIGINT NOT NULL,
    names             TEXT NOT NULL,
    applications      TEXT NOT NULL,
    sources           TEXT NOT NULL,
    mdm               TEXT,
    edr               TEXT,
    scan              TEXT,
    last_seen         BIGINT NOT NULL,
    rollup_at         BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, asset_key)
);
CREATE INDEX assets_by_device_id ON assets(tenant_id, device_id);
CREATE INDEX assets_by_name ON assets(tenant_id, device_name);

-- Coalesces rebuild requests: a request bumps `requested`; a rebuild
-- records the value it started from in `built`, and runs again while they
-- differ.
CREATE TABLE rollup_state (
    tenant_id  TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    requested  BIGINT NOT NULL,
    built      BIGINT NOT NULL,
    rollup_at  BIGINT
);

-- Vendors as the rollup attributes applications to them.
CREATE TABLE vendors (
    tenant_id         TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    application_count BIGINT NOT NULL,
    device_count      BIGINT NOT NULL,
    rollup_at         BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
