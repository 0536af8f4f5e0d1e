-- The CVEs one range of an advisory is for, where the record says so per
-- release (Ubuntu's USN records: one notice, a CVE that affected one
-- release only). NULL: every CVE of the advisory, as before.
ALTER TABLE vuln_osv_ranges ADD COLUMN cve_ids TEXT;
