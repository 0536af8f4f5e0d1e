//! Entra users and groups to records.

use cairn_sdk::records::{Group, RecordType, User};
use cairn_sdk::text_of as text;
use cairn_sdk::{json, Row, SourceRecord, Value};

pub const USERS: &str = "users";
pub const GROUPS: &str = "groups";
/// One record per (group, member user), keyed `{group id}/{user key}`.
pub const MEMBERSHIPS: &str = "memberships";

/// A user's e-mail aliases: the proxy addresses whose prefix is `smtp:` in
/// any case (`SMTP:` marks the primary one), without the prefix, trimmed
/// and lowercased; other address types (`SIP:`, `X500:`) are not e-mail.
pub fn aliases(proxy_addresses: &Value) -> Vec<String> {
    let mut aliases: Vec<String> = proxy_addresses
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|address| {
            let (prefix, rest) = address.split_at_checked(5)?;
            prefix
                .eq_ignore_ascii_case("smtp:")
                .then(|| rest.trim().to_lowercase())
        })
        .filter(|alias| !alias.is_empty())
        .collect();
    let mut seen = std::collections::HashSet::new();
    aliases.retain(|alias| seen.insert(alias.clone()));
    aliases
}

/// The key of a user: its UPN, lowercased (UPNs ignore case).
fn user_key(user: &Value) -> Option<String> {
    text(&user["userPrincipalName"]).map(|upn| upn.to_lowercase())
}

pub fn map_user(user: &Value) -> Result<Vec<Row>, String> {
    let upn = user_key(user).ok_or("user without a userPrincipalName")?;
    let fields = User {
        upn: Some(upn.clone()),
        mail: text(&user["mail"]).map(|m| m.to_lowercase()),
        aliases: Some(aliases(&user["proxyAddresses"])),
        display_name: text(&user["displayName"]),
        enabled: user["accountEnabled"].as_bool(),
        groups: None,
    };
    Ok(vec![Row::Record(SourceRecord {
        collection: USERS.into(),
        key: upn,
        device_name: None,
        client_id: None,
        group_ids: vec![],
        fields: fields.to_fields(),
        body: user.clone(),
    })])
}

/// A group (with `_members` attached by fetch) to its record and one
/// membership record per member that is a user.
pub fn map_group(group: &Value) -> Result<Vec<Row>, String> {
    let id = text(&group["id"]).ok_or("group without an id")?;
    let name = text(&group["displayName"]);
    let members: Vec<String> = group["_members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(user_key)
        .collect();
    let body = cairn_sdk::without_keys(group, &["_members"]);
    let mut rows = Vec::with_capacity(1 + members.len());
    for member in &members {
        rows.push(Row::Record(SourceRecord {
            collection: MEMBERSHIPS.into(),
            key: format!("{id}/{member}"),
            device_name: None,
            client_id: None,
            group_ids: vec![],
            fields: json!({"user": member, "group_id": id, "group_name": name}),
            body: json!({"group_id": id, "group_name": name, "user": member}),
        }));
    }
    rows.insert(
        0,
        Row::Record(SourceRecord {
            collection: GROUPS.into(),
            key: id.clone(),
            device_name: None,
            client_id: None,
            group_ids: vec![],
            fields: Group {
                group_id: Some(id),
                name,
                members: Some(members),
            }
            .to_fields(),
            body,
        }),
    );
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GROUPS_FIXTURE: &str =
        include_str!("../../../tests/fixtures/graph/groups_list_response.json");

    #[test]
    fn aliases_are_smtp_addresses_in_any_case_lowercased() {
        let addresses = json!([
            "SMTP:Ada.Lovelace@Contoso.example",
            "smtp: ada@contoso.example ",
            "sMtP:AL@contoso.example",
            "SIP:ada@contoso.example",
            "X500:/o=Contoso",
            "smtp:",
            7
        ]);
        assert_eq!(
            aliases(&addresses),
            [
                "ada.lovelace@contoso.example",
                "ada@contoso.example",
                "al@contoso.example"
            ]
        );
    }

    #[test]
    fn a_user_is_keyed_by_its_lowercased_upn() {
        let rows = map_user(&json!({
            "id": "u-1", "userPrincipalName": "Ada@Contoso.example", "mail": "Ada@Contoso.example",
            "displayName": "Ada", "accountEnabled": true,
            "proxyAddresses": ["SMTP:ada@contoso.example", "smtp:a.l@contoso.example"]
        }))
        .unwrap();
        let Row::Record(user) = &rows[0] else {
            panic!("a record")
        };
        assert_eq!(user.key, "ada@contoso.example");
        assert_eq!(user.fields["mail"], "ada@contoso.example");
        assert_eq!(
            user.fields["aliases"],
            json!(["ada@contoso.example", "a.l@contoso.example"])
        );
        assert_eq!(user.fields["enabled"], true);
        assert!(map_user(&json!({"id": "u-2"})).is_err());
    }

    #[test]
    fn the_fixture_groups_map_with_their_member_users() {
        let page: Value = serde_json::from_str(GROUPS_FIXTURE).unwrap();
        let mut group = page["value"][0].clone();
        group["_members"] = json!([
            {"@odata.type": "#microsoft.graph.user", "id": "u-1", "userPrincipalName": "Ada@Contoso.example"},
            {"@odata.type": "#microsoft.graph.group", "id": "g-9"}
        ]);
        let rows = map_group(&group).unwrap();
        assert_eq!(rows.len(), 2, "the group and its one member user");
        let Row::Record(record) = &rows[0] else {
            panic!("the group first")
        };
        assert_eq!(record.key, page["value"][0]["id"].as_str().unwrap());
        assert_eq!(record.fields["members"], json!(["ada@contoso.example"]));
        assert!(record.body.get("_members").is_none());
        let Row::Record(membership) = &rows[1] else {
            panic!("then the membership")
        };
        assert_eq!(membership.fields["user"], "ada@contoso.example");
    }
}
