-- One status vocabulary for everything that runs: a subscription's last
-- sync and a news feed's last fetch say `succeeded` or `failed`, as jobs,
-- uploads, scans and reports do.
UPDATE subscriptions SET last_status = CASE last_status
    WHEN 'ok' THEN 'succeeded'
    WHEN 'error' THEN 'failed'
    ELSE last_status END;
UPDATE news_feeds SET last_status = CASE last_status
    WHEN 'ok' THEN 'succeeded'
    WHEN 'error' THEN 'failed'
    ELSE last_status END;
