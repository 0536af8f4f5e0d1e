-- Every transaction that writes a tenant's rolled-up rows (applications,
-- assets and their search terms, vendors) counts itself here, in that
-- transaction: a search's matches kept in memory are answered again only
-- while the count they were read at is still the tenant's.
ALTER TABLE rollup_state ADD COLUMN writes BIGINT NOT NULL DEFAULT 0;
