-- Distribution security advisories in the OSV format (Debian, Ubuntu,
-- Alpine, Rocky, Alma, Red Hat): one row per advisory, and one per
-- (advisory, release, installed package name, range) to match against.
CREATE TABLE vuln_osv_advisories (
    id          TEXT PRIMARY KEY,
    modified    BIGINT NOT NULL,
    -- JSON array of the CVE ids the advisory is about.
    cve_ids     TEXT NOT NULL,
    summary     TEXT NOT NULL
);

CREATE TABLE vuln_osv_ranges (
    advisory_id   TEXT NOT NULL REFERENCES vuln_osv_advisories(id) ON DELETE CASCADE,
    seq           BIGINT NOT NULL,
    -- `debian:12`, `ubuntu:22.04`, `alpine:3.19`, `rocky:9`, `alma:9`, `rhel:9`.
    release       TEXT NOT NULL,
    -- The name an installed package has: the source package or one of the
    -- binaries the advisory lists.
    name          TEXT NOT NULL,
    -- The source package the advisory names.
    package       TEXT NOT NULL,
    introduced    TEXT,
    fixed         TEXT,
    last_affected TEXT,
    PRIMARY KEY (advisory_id, seq)
);
CREATE INDEX vuln_osv_ranges_name ON vuln_osv_ranges(release, name);
