-- Every process keeps who a session or token belongs to for a few
-- seconds (platform::auth::kept) while nothing it was read from is
-- written. A write to any of those tables, by any process or path,
-- notifies every process at commit as the `identity` topic of the change
-- stamps (core::db::changes; payload: topic, tenant, sender). One
-- notification per statement; PostgreSQL folds repeats within a
-- transaction into one.
CREATE FUNCTION cairn_identity_written() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('cairn_changes', 'identity' || chr(10) || '*' || chr(10) || 'database');
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER users_identity_written AFTER INSERT OR UPDATE OR DELETE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_identity_written();
CREATE TRIGGER sessions_identity_written AFTER INSERT OR UPDATE OR DELETE ON sessions
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_identity_written();
CREATE TRIGGER tenants_identity_written AFTER INSERT OR UPDATE OR DELETE ON tenants
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_identity_written();
CREATE TRIGGER partner_analyst_scopes_identity_written AFTER INSERT OR UPDATE OR DELETE ON partner_analyst_scopes
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_identity_written();
CREATE TRIGGER partner_groups_identity_written AFTER INSERT OR UPDATE OR DELETE ON partner_groups
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_identity_written();
CREATE TRIGGER partner_group_members_identity_written AFTER INSERT OR UPDATE OR DELETE ON partner_group_members
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_identity_written();
