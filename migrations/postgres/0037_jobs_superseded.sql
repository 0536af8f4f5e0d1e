-- A run whose work passed to the job queued behind it (its lease lapsed,
-- or its process shut down) ends `superseded` and names that job, instead
-- of `error` or `canceled`.
ALTER TABLE jobs ADD COLUMN superseded_by TEXT;
