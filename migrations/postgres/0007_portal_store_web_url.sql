-- Portal documents may live in an S3-compatible bucket as well as in the
-- local directory: which store holds each one (so switching stores never
-- strands older documents), and its web address there, if it has one.
ALTER TABLE portal_files ADD COLUMN store TEXT NOT NULL DEFAULT 'local';
ALTER TABLE portal_files ADD COLUMN sp_web_url TEXT;
