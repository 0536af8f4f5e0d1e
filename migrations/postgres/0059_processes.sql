-- The serving processes on this database, each with its heartbeat and
-- whether it keeps its files on a local disk: a process that shares the
-- database with others while keeping files only it can read says so (at
-- start, and as `degraded` in /health/ready).
CREATE TABLE processes (
    id TEXT PRIMARY KEY,
    started_at BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    local_files INTEGER NOT NULL
);
