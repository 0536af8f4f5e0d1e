-- Asset search documents list each installed application with its version
-- (`installed`, for `application_name` and `application_version` rules)
-- and application documents their versions' release keys (`version_key`):
-- the next rebuild of every tenant is a whole one, which writes them.
UPDATE rollup_state SET requested = requested + 1, tallied = 0;
