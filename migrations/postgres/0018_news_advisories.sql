-- A tenant's news feeds. The conditional-GET validators of the last
-- successful fetch are kept so a refresh asks only for what changed.
CREATE TABLE news_feeds (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    url             TEXT NOT NULL,
    title           TEXT NOT NULL,
    format          TEXT,
    seeded          BIGINT NOT NULL,
    etag            TEXT,
    last_modified   TEXT,
    last_fetched_at BIGINT,
    last_status     TEXT,
    last_error      TEXT,
    created_at      BIGINT NOT NULL,
    UNIQUE (tenant_id, url)
);

-- One item per tenant and dedupe key (guid, else link, else title and
-- date), whichever feed brought it first.
CREATE TABLE news_items (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    feed_id       TEXT NOT NULL REFERENCES news_feeds(id) ON DELETE CASCADE,
    dedupe_key    TEXT NOT NULL,
    title         TEXT NOT NULL,
    link          TEXT,
    summary       TEXT NOT NULL,
    published_at  BIGINT,
    fetched_at    BIGINT NOT NULL,
    category      TEXT,
    severity      TEXT,
    vendors       TEXT NOT NULL DEFAULT '[]',
    products      TEXT NOT NULL DEFAULT '[]',
    relevance     TEXT NOT NULL DEFAULT '[]',
    relevant      BIGINT NOT NULL DEFAULT 0,
    classified_by TEXT,
    classifier_note TEXT,
    classified_at BIGINT,
    -- Asked to be classified again by the next classification job.
    reclassify    BIGINT NOT NULL DEFAULT 0,
    assigned_to   TEXT REFERENCES users(id) ON DELETE SET NULL,
    assigned_at   BIGINT,
    UNIQUE (tenant_id, dedupe_key)
);
CREATE INDEX news_items_recent ON news_items(tenant_id, fetched_at DESC);
CREATE INDEX news_items_feed ON news_items(feed_id);

CREATE TABLE news_item_cves (
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    item_id   TEXT NOT NULL REFERENCES news_items(id) ON DELETE CASCADE,
    cve_id    TEXT NOT NULL,
    PRIMARY KEY (item_id, cve_id)
);
CREATE INDEX news_item_cves_cve ON news_item_cves(tenant_id, cve_id);

CREATE TABLE news_item_reads (
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    item_id   TEXT NOT NULL REFERENCES news_items(id) ON DELETE CASCADE,
    user_id   TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    read_at   BIGINT NOT NULL,
    PRIMARY KEY (item_id, user_id)
);

-- An advisory sent to the users of affected software. `request_key` makes
-- a repeated send the same advisory; each recipient row is sent once.
CREATE TABLE advisories (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    request_key TEXT NOT NULL,
    subject     TEXT NOT NULL,
    body        TEXT NOT NULL,
    cve_id      TEXT,
    application TEXT,
    versions    TEXT NOT NULL DEFAULT '[]',
    created_by  TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at  BIGINT NOT NULL,
    UNIQUE (tenant_id, request_key)
);
CREATE INDEX advisories_recent ON advisories(tenant_id, created_at DESC);

CREATE TABLE advisory_recipients (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    advisory_id TEXT NOT NULL REFERENCES advisories(id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    name        TEXT,
    devices     TEXT NOT NULL DEFAULT '[]',
    explicit    BIGINT NOT NULL,
    status      TEXT NOT NULL,
    error       TEXT,
    attempts    BIGINT NOT NULL DEFAULT 0,
    sent_at     BIGINT,
    PRIMARY KEY (advisory_id, email)
);
CREATE INDEX advisory_recipients_pending ON advisory_recipients(tenant_id, status);
