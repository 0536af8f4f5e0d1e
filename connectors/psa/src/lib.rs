//! A psa connector: ConnectWise PSA (Manage) REST API v3
//! (`{site}/v4_6_release/apis/3.0/`).
//!
//! Area `psa`. Credentials: HTTP Basic with `{company_id}+{public_key}` as
//! the user and the private key as the password, attached by the host; the
//! connector adds the `clientId` header. One stream, `tickets`: the tickets
//! updated in the last `sync_days` days (default 30), paged by the `Link`
//! header's `rel="next"` (the cursor is that URL). The live actions are
//! typed calls for companies, boards, priorities, tickets, notes,
//! configurations, time and schedule entries (`actions.rs`). A bulk pull
//! (`pull.rs`) keeps a whole board with its notes.

mod actions;
mod api;
mod clock;
mod mapping;
mod pull;

use cairn_sdk::records::{Ticket, TicketNote};
use cairn_sdk::{
    export_connector, json, ActionRequest, AuthScheme, Collection, Config, Connector, Descriptor,
    Error, Page, Row, Value, View,
};

pub use mapping::map_ticket;

const TICKETS_STREAM: &str = "tickets";
const DEFAULT_SYNC_DAYS: u64 = 30;

pub struct ConnectWisePsa;

impl Connector for ConnectWisePsa {
    fn describe() -> Descriptor {
        Descriptor {
            id: "connectwise-psa".into(),
            area: "psa".into(),
            name: "ConnectWise PSA".into(),
            version: "0.3.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["site", "company_id", "public_key", "private_key", "client_id"],
                "properties": {
                    "site": {"type": "string", "pattern": "^https?://", "description": "e.g. https://api-na.myconnectwise.net"},
                    "company_id": {"type": "string", "minLength": 1, "description": "The company you log in with"},
                    "public_key": {"type": "string", "minLength": 1},
                    "private_key": {"type": "string", "minLength": 1},
                    "client_id": {"type": "string", "minLength": 1, "description": "Your integration's clientId from the ConnectWise developer network"},
                    "sync_days": {"type": "integer", "minimum": 1, "maximum": 365, "description": "A sync pulls tickets updated in this many days (default 30)"},
                    "page_size": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Tickets a page when syncing (default and ConnectWise's maximum: 1000)"}
                }
            }),
            secret_fields: vec!["private_key".into()],
            streams: vec![TICKETS_STREAM.into()],
            pull: Some(pull::declared()),
            requested_hosts: vec!["{config.site}".into()],
            auth: AuthScheme::BasicTemplate {
                username: "{company_id}+{public_key}".into(),
                password_field: "private_key".into(),
            },
            collections: vec![
                Collection::of::<Ticket>(mapping::TICKETS)
                    .searching(&["summary", "company", "board", "status"]),
                Collection::of::<Ticket>(mapping::BULK_TICKETS)
                    .searching(&["summary", "company", "board", "status"]),
                Collection::of::<TicketNote>(mapping::BULK_NOTES).searching(&["text"]),
            ],
            views: vec![
                View::List {
                    path: "synced-tickets".into(),
                    collection: mapping::TICKETS.into(),
                    summary: "Tickets the last syncs pulled".into(),
                },
                View::List {
                    path: "bulk-tickets".into(),
                    collection: mapping::BULK_TICKETS.into(),
                    summary: "Tickets bulk pulls stored, filtered and paged".into(),
                },
                View::Children {
                    path: "bulk-tickets/{ticket_id}/notes".into(),
                    collection: mapping::BULK_NOTES.into(),
                    summary: "The notes of a bulk-pulled ticket".into(),
                    field: "ticket_id".into(),
                },
                View::Export {
                    path: "bulk-tickets/export.csv".into(),
                    collection: mapping::BULK_TICKETS.into(),
                    summary: "The bulk-pulled tickets matching the filters, as CSV".into(),
                    columns: [
                        "summary",
                        "status",
                        "board",
                        "company",
                        "priority",
                        "owner",
                        "closed",
                        "created_at",
                        "updated_at",
                    ]
                    .map(String::from)
                    .to_vec(),
                },
            ],
            actions: actions::declared(),
            max_concurrent_requests: 4,
            config_from: None,
            webhook: None,
        }
    }

    fn check(config: &Config) -> Result<(), Error> {
        let url = api::url(config, "system/info", &[])?;
        api::answer(&api::send(config, "GET", &url, None)?).map(|_| ())
    }

    fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error> {
        if stream == pull::STREAM {
            return pull::fetch(config, cursor);
        }
        if stream != TICKETS_STREAM {
            return Err(Error::Config(format!("unknown stream {stream}")));
        }
        let url = match cursor {
            Some(next) => next.to_string(),
            None => {
                let days = config["sync_days"]
                    .as_u64()
                    .unwrap_or(DEFAULT_SYNC_DAYS)
                    .clamp(1, 365);
                api::url(
                    config,
                    "service/tickets",
                    &[
                        (
                            "conditions",
                            format!("lastUpdated > {}", api::bracketed(&clock::days_ago(days))),
                        ),
                        ("orderBy", "id asc".into()),
                        (
                            "pageSize",
                            config["page_size"]
                                .as_u64()
                                .unwrap_or(api::MAX_PAGE_SIZE)
                                .clamp(1, api::MAX_PAGE_SIZE)
                                .to_string(),
                        ),
                    ],
                )?
            }
        };
        let (records, next_cursor) = api::page(config, &url)?;
        Ok(Page {
            records,
            next_cursor,
        })
    }

    fn map_record(stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        match stream {
            pull::STREAM => mapping::map_pulled_ticket(record),
            _ => map_ticket(record),
        }
    }

    fn invoke(config: &Config, request: &ActionRequest) -> Result<Value, Error> {
        actions::invoke(config, request)
    }
}

export_connector!(ConnectWisePsa);

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
