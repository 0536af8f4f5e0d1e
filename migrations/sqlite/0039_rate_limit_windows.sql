-- Shared rate limit counts (`rate_limit_store = "database"`): one row per
-- limit and client key, counting the hits of its current fixed window.
-- Rows of past windows are deleted every minute.
CREATE TABLE rate_limit_windows (
    key          TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    hits         BIGINT NOT NULL
);
CREATE INDEX rate_limit_windows_by_start ON rate_limit_windows (window_start);
