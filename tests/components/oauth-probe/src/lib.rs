//! Lists `{config.base_url}/users` (Graph-shaped `{"value": [...]}`); the host
//! obtains the bearer token with OAuth 2.0 client credentials.

use cairn_sdk::{
    export_connector, http, json, AuthScheme, Collection, Config, Connector, Descriptor, Error,
    Page, Row, SourceRecord, Value,
};

struct OauthProbe;

impl Connector for OauthProbe {
    fn describe() -> Descriptor {
        Descriptor {
            id: "oauth-probe".into(),
            area: "oauth-probe".into(),
            name: "OAuth client-credentials probe".into(),
            version: "0.2.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["auth_url", "directory_tenant", "client_id", "base_url"],
                "properties": {
                    "auth_url": {"type": "string"},
                    "directory_tenant": {"type": "string"},
                    "client_id": {"type": "string"},
                    "client_secret": {"type": "string"},
                    "thumbprint": {"type": "string"},
                    "private_key": {"type": "string"},
                    "base_url": {"type": "string"}
                }
            }),
            secret_fields: vec!["client_secret".into(), "private_key".into()],
            streams: vec!["users".into()],
            requested_hosts: vec!["{config.auth_url}".into(), "{config.base_url}".into()],
            auth: AuthScheme::OauthClientCredentials {
                auth_url_field: "auth_url".into(),
                tenant_field: "directory_tenant".into(),
                client_id_field: "client_id".into(),
                client_secret_field: Some("client_secret".into()),
                thumbprint_field: Some("thumbprint".into()),
                private_key_field: Some("private_key".into()),
                scope: "https://graph.example/.default".into(),
            },
            collections: vec![Collection {
                name: "user".into(),
                record_type: "user".into(),
                fields: vec![],
                search: vec![],
            }],
            views: vec![],
            actions: vec![],
            max_concurrent_requests: 1,
            config_from: None,
            pull: None,
            webhook: None,
        }
    }

    fn fetch(config: &Config, _stream: &str, _cursor: Option<&str>) -> Result<Page, Error> {
        let base = config["base_url"]
            .as_str()
            .unwrap_or_default()
            .trim_end_matches('/');
        let body = http::get_json(&format!("{base}/users"))?;
        Ok(Page {
            records: body["value"].as_array().cloned().unwrap_or_default(),
            next_cursor: None,
        })
    }

    fn map_record(_stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        let upn = record["userPrincipalName"]
            .as_str()
            .ok_or("user without a userPrincipalName")?;
        Ok(vec![Row::Record(SourceRecord {
            collection: "user".into(),
            fields: cairn_sdk::Value::Null,
            key: upn.to_string(),
            device_name: None,
            client_id: None,
            group_ids: vec![],
            body: record.clone(),
        })])
    }
}

export_connector!(OauthProbe);
