-- The operating system's name and edition, and its build, as a source
-- gives them apart from its version (SDK 0.3.2, CSV columns such as
-- "OS Name" and "OS Build"). `os_version` keeps the whole OS in one line,
-- as before; these hold the parts where the source has them. An asset
-- takes them from its newest row that has them, as it does `os_version`.
ALTER TABLE inventory_items ADD COLUMN os_name TEXT;
ALTER TABLE inventory_items ADD COLUMN os_build TEXT;
ALTER TABLE assets ADD COLUMN os_name TEXT;
ALTER TABLE assets ADD COLUMN os_build TEXT;
