//! The bulk pull of a board: its tickets page by page (ConnectWise's
//! `Link` paging, the cursor being the next page's URL), each page's
//! tickets with their notes, read concurrently.

use cairn_sdk::{http, json, Config, Error, Page, Pull, Value};

use crate::api;
use crate::mapping::{BULK_NOTES, BULK_TICKETS, NOTES_KEY};

pub const STREAM: &str = "board";
/// Notes requests sent in one batch: their answers together stay well
/// under the host's cap of one response.
const NOTES_BATCH: usize = 250;

pub fn declared() -> Pull {
    Pull {
        stream: STREAM.into(),
        summary: "Pull a whole service board: its tickets and their notes".into(),
        parameters: json!({
            "type": "object", "required": ["board_id"], "additionalProperties": false,
            "properties": {
                "board_id": {"type": "integer", "minimum": 1, "description": "The board's ConnectWise id (GET /psa/service/boards)"},
                "include_closed": {"type": "boolean", "description": "Closed tickets too (default true)"},
                "tickets_per_page": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Tickets a page (default 1000)"}
            }
        }),
        collections: vec![BULK_TICKETS.into(), BULK_NOTES.into()],
    }
}

/// One page of the board's tickets, each carrying its notes under
/// [`NOTES_KEY`].
pub fn fetch(config: &Config, cursor: Option<&str>) -> Result<Page, Error> {
    let url = match cursor {
        Some(next) => next.to_string(),
        None => first_page(config)?,
    };
    let (mut tickets, next_cursor) = api::page(config, &url)?;
    let ids: Vec<u64> = tickets.iter().filter_map(|t| t["id"].as_u64()).collect();
    let mut notes = notes_of(config, &ids)?;
    for ticket in &mut tickets {
        if let Some(id) = ticket["id"].as_u64() {
            let of_ticket = notes.remove(&id).unwrap_or_default();
            ticket[NOTES_KEY] = Value::Array(of_ticket);
        }
    }
    Ok(Page {
        records: tickets,
        next_cursor,
    })
}

fn first_page(config: &Config) -> Result<String, Error> {
    let board = config["board_id"]
        .as_u64()
        .ok_or_else(|| Error::InvalidInput {
            field: "board_id".into(),
            message: "board_id must be a ConnectWise board id".into(),
        })?;
    let mut conditions = format!("board/id={board}");
    if config["include_closed"].as_bool() == Some(false) {
        conditions.push_str(" and closedFlag=false");
    }
    let size = config["tickets_per_page"]
        .as_u64()
        .unwrap_or(api::MAX_PAGE_SIZE)
        .clamp(1, api::MAX_PAGE_SIZE);
    api::url(
        config,
        "service/tickets",
        &[
            ("conditions", conditions),
            ("orderBy", "id asc".into()),
            ("pageSize", size.to_string()),
        ],
    )
}

/// Every note of each ticket: one request per ticket, sent in concurrent
/// batches; a ticket with more than a page of notes has the rest read in
/// turn, and a request answered 5xx is sent again alone (with
/// [`api::send`]'s retries).
fn notes_of(
    config: &Config,
    tickets: &[u64],
) -> Result<std::collections::HashMap<u64, Vec<Value>>, Error> {
    let client_id = config["client_id"].as_str().unwrap_or_default().to_string();
    let mut notes = std::collections::HashMap::with_capacity(tickets.len());
    for batch in tickets.chunks(NOTES_BATCH) {
        let urls = batch
            .iter()
            .map(|id| {
                api::url(
                    config,
                    &format!("service/tickets/{id}/notes"),
                    &[
                        ("orderBy", "id asc".into()),
                        ("pageSize", api::MAX_PAGE_SIZE.to_string()),
                    ],
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let requests: Vec<http::Request> = urls
            .iter()
            .map(|url| {
                let mut request = http::Request::get_json(url);
                request.headers.push(("clientId".into(), client_id.clone()));
                request
            })
            .collect();
        for ((id, url), answered) in batch.iter().zip(&urls).zip(http::send_all(&requests)) {
            let (mut items, mut next) = match answered {
                Ok(response) if response.status < 500 => match api::answer(&response)? {
                    Value::Array(items) => (items, api::next_link(&response.headers)),
                    _ => return Err(Error::Upstream(format!("{url} did not answer a list"))),
                },
                Ok(_) | Err(Error::Transient(_)) => api::page(config, url)?,
                Err(other) => return Err(other),
            };
            while let Some(url) = next {
                let (more, after) = api::page(config, &url)?;
                items.extend(more);
                next = after;
            }
            notes.insert(*id, items);
        }
    }
    Ok(notes)
}
