-- The spec's words for how a run ended, as jobs store them: `success` and
-- `error` (it names them for jobs and sync status; uploads, scans,
-- reports, subscriptions and feeds say the same, so the API keeps one
-- vocabulary). `not_modified` (a feed fetched, nothing new) stays.
UPDATE csv_uploads SET status = CASE status
    WHEN 'succeeded' THEN 'success'
    WHEN 'failed' THEN 'error'
    ELSE status END;
UPDATE vuln_scans SET status = CASE status
    WHEN 'succeeded' THEN 'success'
    WHEN 'failed' THEN 'error'
    ELSE status END;
UPDATE reports SET status = CASE status
    WHEN 'succeeded' THEN 'success'
    WHEN 'failed' THEN 'error'
    ELSE status END;
UPDATE subscriptions SET last_status = CASE last_status
    WHEN 'succeeded' THEN 'success'
    WHEN 'failed' THEN 'error'
    ELSE last_status END;
UPDATE news_feeds SET last_status = CASE last_status
    WHEN 'succeeded' THEN 'success'
    WHEN 'failed' THEN 'error'
    ELSE last_status END;
