-- The RMM groups each asset's rows name (`inventory_items.group_ids`),
-- written by the rollup: shown on the device and a device search field
-- (`group_id`), so a tier rule can say "every computer of group 12".
ALTER TABLE assets ADD COLUMN group_ids TEXT NOT NULL DEFAULT '[]';
