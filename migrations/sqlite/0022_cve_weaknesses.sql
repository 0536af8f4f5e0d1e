-- Which CWE each CVE names (the `cwe_ids` of its record, one row each),
-- so weaknesses are counted by index rather than by parsing every record.
CREATE TABLE vuln_cve_cwes (
    cwe_id TEXT NOT NULL,
    cve_id TEXT NOT NULL,
    PRIMARY KEY (cwe_id, cve_id)
);
CREATE INDEX vuln_cve_cwes_cve ON vuln_cve_cwes(cve_id);

INSERT INTO vuln_cve_cwes (cwe_id, cve_id)
SELECT DISTINCT j.value, c.id FROM vuln_cves c, json_each(c.cwe_ids) j
WHERE json_valid(c.cwe_ids) AND j.type = 'text';
