//! The directory connector: Microsoft Entra ID users and groups over
//! Microsoft Graph.
//!
//! Area `directory`. Credentials: OAuth 2.0 client credentials, as the mdm
//! connector; with no seed of its own, its config is derived from the mdm
//! seed (the same app registration).
//!
//! Streams: `users` (with their proxy addresses) and `groups` (each with its
//! members). A user maps to a user record keyed by its lowercased UPN; a
//! group to a group record and one membership record per member user, which
//! the user view attaches.

mod mapping;

use cairn_sdk::records::{Group, User};
use cairn_sdk::{
    export_connector, http, json, AuthScheme, Collection, Config, ConfigFrom, Connector,
    Descriptor, Error, Field, FieldType, Page, Related, Row, Value, View,
};
use microsoft_graph::{get_page, graph_url};

pub use mapping::{aliases, map_group, map_user};

/// What the app registration needs, named in every auth error.
const PERMISSION_HINT: &str = "grant the app registration the application permissions \
     User.Read.All and Group.Read.All (or GroupMember.Read.All), with admin consent";

const USERS: &str = "users";
const GROUPS: &str = "groups";
/// Graph's largest page of directory objects.
const PAGE_SIZE: u32 = 999;

pub struct Directory;

impl Connector for Directory {
    fn describe() -> Descriptor {
        Descriptor {
            id: "microsoft-entra-id".into(),
            area: "directory".into(),
            name: "Microsoft Entra ID".into(),
            version: "0.2.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["auth_url", "graph_url", "tenant_id", "client_id"],
                "properties": {
                    "auth_url": {"type": "string", "pattern": "^https?://", "description": "The identity platform, e.g. https://login.microsoftonline.com"},
                    "graph_url": {"type": "string", "pattern": "^https?://", "description": "Microsoft Graph, e.g. https://graph.microsoft.com"},
                    "tenant_id": {"type": "string", "minLength": 1, "description": "The Entra tenant (directory) id or domain"},
                    "client_id": {"type": "string", "minLength": 1, "description": "The app registration's application (client) id"},
                    "client_secret": {"type": "string", "description": "A client secret; or leave it out and give a certificate"},
                    "certificate_thumbprint": {"type": "string", "description": "The certificate's SHA-1 or SHA-256 thumbprint, hex"},
                    "private_key": {"type": "string", "description": "The certificate's private key, PEM"}
                }
            }),
            secret_fields: vec!["client_secret".into(), "private_key".into()],
            streams: vec![USERS.into(), GROUPS.into()],
            requested_hosts: vec!["{config.auth_url}".into(), "{config.graph_url}".into()],
            auth: AuthScheme::OauthClientCredentials {
                auth_url_field: "auth_url".into(),
                tenant_field: "tenant_id".into(),
                client_id_field: "client_id".into(),
                client_secret_field: Some("client_secret".into()),
                thumbprint_field: Some("certificate_thumbprint".into()),
                private_key_field: Some("private_key".into()),
                scope: "https://graph.microsoft.com/.default".into(),
            },
            collections: vec![
                Collection::of::<User>(mapping::USERS).searching(&[
                    "upn",
                    "mail",
                    "display_name",
                    "aliases",
                ]),
                Collection::of::<Group>(mapping::GROUPS).searching(&["name"]),
                Collection {
                    name: mapping::MEMBERSHIPS.into(),
                    record_type: "group_membership".into(),
                    fields: vec![
                        field(
                            "user",
                            FieldType::String,
                            "The member's user key (lowercased UPN)",
                        ),
                        field("group_id", FieldType::String, "The group's id"),
                        field("group_name", FieldType::String, "The group's name"),
                    ],
                    search: vec![],
                },
            ],
            views: vec![
                View::List {
                    path: "users".into(),
                    collection: mapping::USERS.into(),
                    summary: "Directory users synced from Entra ID".into(),
                },
                View::ByKey {
                    path: "user/{upn}".into(),
                    collection: mapping::USERS.into(),
                    summary: "One directory user by UPN, with aliases, groups, enrichment flags \
                              and linked devices"
                        .into(),
                    related: vec![Related {
                        name: "groups".into(),
                        collection: mapping::MEMBERSHIPS.into(),
                        field: "user".into(),
                    }],
                },
            ],
            actions: vec![],
            // A page's groups have their members read concurrently.
            max_concurrent_requests: 4,
            config_from: Some(ConfigFrom {
                area: "mdm".into(),
                fields: [
                    "auth_url",
                    "graph_url",
                    "tenant_id",
                    "client_id",
                    "client_secret",
                    "certificate_thumbprint",
                ]
                .map(String::from)
                .to_vec(),
                private_key_field: Some("private_key".into()),
            }),
            pull: None,
            webhook: None,
        }
    }

    fn check(config: &Config) -> Result<(), Error> {
        let url = format!("{}/v1.0/users?$select=id&$top=1", graph_url(config)?);
        get_page(&url, PERMISSION_HINT).map(|_| ())
    }

    fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error> {
        let graph = graph_url(config)?;
        let url = match (stream, cursor) {
            (_, Some(next)) => next.to_string(),
            (USERS, None) => format!(
                "{graph}/v1.0/users?$select=id,userPrincipalName,mail,displayName,accountEnabled,\
                 proxyAddresses&$top={PAGE_SIZE}"
            ),
            (GROUPS, None) => {
                format!("{graph}/v1.0/groups?$select=id,displayName,mail&$top={PAGE_SIZE}")
            }
            _ => return Err(Error::Config(format!("unknown stream {stream}"))),
        };
        let (mut records, next_cursor) = get_page(&url, PERMISSION_HINT)?;
        if stream == GROUPS {
            attach_members(graph, &mut records)?;
        }
        Ok(Page {
            records,
            next_cursor,
        })
    }

    fn map_record(stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        match stream {
            USERS => map_user(record),
            GROUPS => map_group(record),
            other => Err(format!("unknown stream {other}")),
        }
    }
}

fn field(name: &str, field_type: FieldType, description: &str) -> Field {
    Field {
        name: name.into(),
        field_type,
        description: description.into(),
    }
}

/// Each group's members under `_members`: the first page of every group's
/// members at once, further pages one group at a time.
fn attach_members(graph: &str, groups: &mut [Value]) -> Result<(), Error> {
    let requests: Vec<http::Request> = groups
        .iter()
        .map(|g| {
            http::Request::get_json(&format!(
                "{graph}/v1.0/groups/{}/members?$select=id,userPrincipalName,mail&$top={PAGE_SIZE}",
                g["id"].as_str().unwrap_or_default()
            ))
        })
        .collect();
    for (group, answer) in groups.iter_mut().zip(http::send_all(&requests)) {
        let answer = answer?;
        let body = microsoft_graph::answer(answer.status, &answer.body, PERMISSION_HINT)?;
        let (mut members, next) = microsoft_graph::page_of(body)?;
        if let Some(next) = next {
            members.extend(microsoft_graph::all_pages(&next, PERMISSION_HINT)?);
        }
        if let Value::Object(object) = group {
            object.insert("_members".into(), Value::Array(members));
        }
    }
    Ok(())
}

export_connector!(Directory);

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
