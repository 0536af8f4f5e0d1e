-- The assets of a tier other than `standard`, found without reading every
-- asset of the tenant: each due-date computation looks them up.
CREATE INDEX assets_by_tier ON assets(tenant_id, tier);
