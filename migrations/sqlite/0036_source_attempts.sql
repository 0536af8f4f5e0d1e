-- Every attempt to load a CVE source (nvd, kev, epss), successful or not:
-- what `GET /vulnerabilities/sources` reports, and the backoff of a
-- source that keeps failing (no internet): the next attempt waits twice
-- as long after each failure, up to the source's interval.
CREATE TABLE vuln_source_attempts (
    source          TEXT PRIMARY KEY,
    last_attempt_at BIGINT NOT NULL,
    last_success_at BIGINT,
    last_error      TEXT,
    failures        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL
);
