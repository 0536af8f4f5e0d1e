-- Vendor names are filtered through their case-folded form, folded in Rust
-- like the applications' and assets' `sort_key`, so a search for `müller`
-- finds `MÜLLER` on both engines.
ALTER TABLE vendors ADD COLUMN sort_key TEXT NOT NULL DEFAULT '';

-- Rows written before this migration have no key: ask every tenant's
-- rollup for a rebuild, which the rollup sweeper then enqueues.
UPDATE rollup_state SET requested = requested + 1;
