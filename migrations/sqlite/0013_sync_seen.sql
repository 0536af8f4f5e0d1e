-- What each page of a sync run saw: the hashes of its rows' keys, 8 bytes
-- each, written in the page's transaction. A page's upsert leaves a row
-- whose content did not change as it is (no new version, no change-queue
-- entry), so its seen_run names the run that last changed it; after a
-- complete run, the rows whose key hash no page of the run stored are
-- pruned, and the run's pages are deleted.
CREATE TABLE sync_seen (
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    source    TEXT NOT NULL,
    run       TEXT NOT NULL,
    page      INTEGER NOT NULL,
    hashes    BLOB NOT NULL,
    PRIMARY KEY (tenant_id, source, run, page)
);
