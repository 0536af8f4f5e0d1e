-- One row per schedule shared by every process on the database (CVE
-- source loads, news refresh, subscription syncs, sweeps, retention): the
-- process that claims the lease runs that period's tick; the others skip.
CREATE TABLE schedule_leases (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    lease_until BIGINT NOT NULL
);
