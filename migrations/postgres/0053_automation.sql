-- Automation: rules that act when findings start to match them (a PSA
-- ticket, an e-mail, a webhook), what each rule matches now, the tickets
-- they keep, the deliveries they queue and the log of every run.
-- A rule belongs to `tenant_id`; a partner's rule may reach its customers
-- (which ones: in `rule`, the rule as JSON with its trigger, conditions,
-- actions and limits). `version` moves on every change of the rule.
CREATE TABLE automation_rules (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    enabled     BIGINT NOT NULL,
    customers   BIGINT NOT NULL,
    rule        TEXT NOT NULL,
    owner_id    TEXT NOT NULL,
    owner_email TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    version     BIGINT NOT NULL
);
CREATE INDEX automation_rules_by_tenant ON automation_rules(tenant_id, created_at);

-- Where a rule's runs over one tenant's findings stand. `version` moves on
-- every run, so two runs at once cannot both commit. `seen_until` is the
-- newest `first_seen` among the findings of the last run: findings seen
-- after it are new to the rule, and a skip of one is logged.
CREATE TABLE automation_rule_runs (
    rule_id       TEXT NOT NULL REFERENCES automation_rules(id) ON DELETE CASCADE,
    tenant_id     TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    version       BIGINT NOT NULL,
    evaluated_at  BIGINT NOT NULL,
    seen_until    BIGINT,
    digest_period TEXT,
    PRIMARY KEY (rule_id, tenant_id)
);

-- The findings a rule matches now. `fired` is 0 for those that matched
-- when the rule was made (its baseline, not acted on unless the rule
-- includes existing findings).
CREATE TABLE automation_matches (
    rule_id          TEXT NOT NULL REFERENCES automation_rules(id) ON DELETE CASCADE,
    tenant_id        TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    device_name      TEXT NOT NULL,
    application_name TEXT NOT NULL,
    version          TEXT NOT NULL,
    cve_id           TEXT NOT NULL,
    fired            BIGINT NOT NULL,
    since            BIGINT NOT NULL,
    PRIMARY KEY (rule_id, tenant_id, device_name, application_name, version, cve_id)
);

-- The events an event trigger's rule has seen (by key, e.g.
-- `exception:<id>:approved`, `sync:rmm`): a key not here fires; a key gone
-- from the source is deleted, so its return fires again.
CREATE TABLE automation_seen (
    rule_id   TEXT NOT NULL REFERENCES automation_rules(id) ON DELETE CASCADE,
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    event_key TEXT NOT NULL,
    since     BIGINT NOT NULL,
    PRIMARY KEY (rule_id, tenant_id, event_key)
);

-- The ticket a rule keeps for one CVE: the devices it names, and whether
-- it is open. `ticket_id` is NULL until its creation is delivered.
CREATE TABLE automation_tickets (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    rule_id    TEXT NOT NULL REFERENCES automation_rules(id) ON DELETE CASCADE,
    cve_id     TEXT NOT NULL,
    company_id TEXT NOT NULL,
    ticket_id  TEXT,
    devices    TEXT NOT NULL,
    state      TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, rule_id, cve_id)
);

-- One action to deliver: queued by a run in the same transaction as the
-- matches that caused it, sent with its own attempts. `tenant_id` is the
-- tenant whose findings fired, `owner_id` the rule's tenant (a partner,
-- for its customers). `status`: pending, sending (leased until
-- `lease_until`), delivered, dead.
CREATE TABLE automation_deliveries (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    owner_id        TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    rule_id         TEXT NOT NULL,
    rule_name       TEXT NOT NULL,
    action          TEXT NOT NULL,
    target          TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    lease_until     BIGINT,
    answer          TEXT,
    created_at      BIGINT NOT NULL,
    delivered_at    BIGINT
);
CREATE INDEX automation_deliveries_due ON automation_deliveries(status, next_attempt_at);
CREATE INDEX automation_deliveries_by_owner ON automation_deliveries(owner_id, created_at);

-- What each run and delivery did, and why: fired, skipped, stopped,
-- baseline, queued, delivered, failed, dead, rate_limited. `tenant_id`
-- and `owner_id` as for deliveries.
CREATE TABLE automation_log (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    owner_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    rule_id     TEXT NOT NULL,
    at          BIGINT NOT NULL,
    outcome     TEXT NOT NULL,
    reason      TEXT NOT NULL,
    cve_id      TEXT,
    device_name TEXT,
    delivery_id TEXT
);
CREATE INDEX automation_log_by_time ON automation_log(owner_id, at);
CREATE INDEX automation_log_by_rule ON automation_log(owner_id, rule_id, at);
CREATE INDEX automation_log_by_cve ON automation_log(owner_id, cve_id, at);

-- Per tenant: the findings write count and reference stamp its rules were
-- last evaluated at, so the sweep evaluates only tenants whose findings
-- or reference data moved (or whose time triggers may have).
CREATE TABLE automation_tenants (
    tenant_id      TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    findings_stamp BIGINT NOT NULL,
    reference_stamp BIGINT NOT NULL,
    evaluated_at   BIGINT NOT NULL
);
