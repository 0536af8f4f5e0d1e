-- Asset criticality, moved to the inventory: each asset shows the tier
-- that the tiers set by hand (`device_tiers`, kept from 0048) and the
-- ordered rules below give it (`inventory::tiers::reapply` writes it after
-- every change of either and every rollup). A rule is a device search
-- query; the first that matches an asset gives its tier.
ALTER TABLE assets ADD COLUMN tier TEXT NOT NULL DEFAULT 'standard';

CREATE TABLE device_tier_rules (
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    position  BIGINT NOT NULL,
    name      TEXT NOT NULL,
    query     TEXT NOT NULL,
    tier      TEXT NOT NULL,
    set_by    TEXT NOT NULL,
    set_at    BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, position)
);
