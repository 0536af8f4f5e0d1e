-- Nothing to do on SQLite: one process serves a SQLite database and
-- counts the writes of the identity tables itself (sqlite_writes). The
-- file keeps both engines' migrations numbered alike.
SELECT 1;
