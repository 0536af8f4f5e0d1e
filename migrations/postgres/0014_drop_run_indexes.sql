-- A sync no longer finds what it missed through `seen_run` (each page stores
-- the keys it saw, migration 0013); the rows a prune checks are read through
-- the primary key's (tenant, source) prefix, and PostgreSQL fetches each
-- row to check it whichever index leads there. The run indexes only cost
-- every insert and every changed row another index write (measured: 4-6 %
-- of a first sync). SQLite keeps them: it checks `seen_run` in the index
-- and reads only the rows that differ.
DROP INDEX inventory_items_run;
DROP INDEX source_records_run;
