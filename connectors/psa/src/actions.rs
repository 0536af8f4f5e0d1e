//! The live actions: thin, typed calls of the ConnectWise API. Lists take
//! the service's paging (`skip`, `limit` up to 500; `page` and
//! `page_size` are the deprecated spellings) and answer
//! `{"items", "skip", "limit", "has_more"}` with ConnectWise's own
//! objects: ConnectWise counts a list only on a second call, so `has_more`
//! stands for the total.

use cairn_sdk::{json, Action, ActionRequest, Config, Error, Value};

use crate::api::{self, bracketed, quoted};
use crate::clock;

const DEFAULT_PAGE_SIZE: u64 = 25;

fn action(
    name: &str,
    method: &str,
    path: &str,
    summary: &str,
    input: Option<Value>,
    query: Option<Value>,
) -> Action {
    Action {
        name: name.into(),
        method: method.into(),
        path: Some(path.into()),
        summary: summary.into(),
        input_schema: input,
        query_schema: query,
        output_schema: Some(json!({"type": "object"})),
        role: "member".into(),
    }
}

/// The largest page of the service's paging rule.
const MAX_LIMIT: u64 = 500;

/// The paging parameters every list takes, with `extra` ones.
fn paged(extra: Value) -> Value {
    let mut properties = json!({
        "skip": {"type": "integer", "minimum": 0, "description": "items to skip (default 0)"},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "page size (default 25)"},
        "page": {"type": "integer", "minimum": 1, "deprecated": true, "description": "Deprecated: use skip. 1-based (default 1)"},
        "page_size": {"type": "integer", "minimum": 1, "maximum": 1000, "deprecated": true, "description": "Deprecated: use limit (default 25)"}
    });
    if let (Some(all), Some(more)) = (properties.as_object_mut(), extra.as_object()) {
        all.extend(more.clone());
    }
    json!({"type": "object", "additionalProperties": false, "properties": properties})
}

const TICKET: &str = "service/tickets/{ticket_id}";

pub fn declared() -> Vec<Action> {
    vec![
        action("status", "GET", "status", "Connection status: a live call, with the site and company (no secrets)", None, None),
        action("companies", "GET", "companies", "Companies, by name", None,
            Some(paged(json!({"search": {"type": "string", "description": "part of the name"}})))),
        action("service_boards", "GET", "service/boards", "Every service board", None, Some(paged(json!({})))),
        action("boards", "GET", "boards", "Service boards open for new tickets (not inactive)", None, Some(paged(json!({})))),
        action("priorities", "GET", "priorities", "Ticket priorities", None, Some(paged(json!({})))),
        action("recent_tickets", "GET", "service/tickets/recent", "Tickets updated lately, newest first", None,
            Some(paged(json!({"days": {"type": "integer", "minimum": 1, "maximum": 90, "description": "default 7"}})))),
        action("list_tickets", "GET", "tickets", "Tickets, filtered", None, Some(paged(json!({
            "board_id": {"type": "integer"}, "company_id": {"type": "integer"},
            "status": {"type": "string", "description": "status name"},
            "closed": {"type": "boolean"},
            "search": {"type": "string", "description": "part of the summary"}})))),
        action("create_ticket", "POST", "tickets", "Create a service ticket (ConnectWise answers 201)",
            Some(json!({"type": "object", "required": ["summary", "company_id"], "additionalProperties": false,
                "properties": {
                    "summary": {"type": "string", "minLength": 1, "maxLength": 100},
                    "company_id": {"type": "integer", "minimum": 1},
                    "board_id": {"type": "integer", "minimum": 1},
                    "priority_id": {"type": "integer", "minimum": 1},
                    "initial_description": {"type": "string"}}})), None),
        action("patch_ticket", "PATCH", TICKET, "Change a ticket with a JSON Patch, e.g. [{\"op\": \"replace\", \"path\": \"status\", \"value\": {\"id\": 5}}]",
            Some(json!({"type": "array", "minItems": 1, "maxItems": 50, "items": {
                "type": "object", "required": ["op", "path"], "additionalProperties": false,
                "properties": {
                    "op": {"type": "string", "enum": ["add", "replace", "remove"]},
                    "path": {"type": "string", "pattern": "^/?[A-Za-z][A-Za-z0-9_/]*$"},
                    "value": {}}}})), None),
        action("notes", "GET", &format!("{TICKET}/notes"), "A ticket's notes", None, Some(paged(json!({})))),
        action("add_note", "POST", &format!("{TICKET}/notes"), "Add a note: to the description (default), the internal analysis or the resolution",
            Some(json!({"type": "object", "required": ["text"], "additionalProperties": false,
                "properties": {
                    "text": {"type": "string", "minLength": 1},
                    "detail": {"type": "boolean"}, "internal": {"type": "boolean"},
                    "resolution": {"type": "boolean"}}})), None),
        action("configurations", "GET", &format!("{TICKET}/configurations"), "Configurations linked to a ticket", None, Some(paged(json!({})))),
        action("link_configuration", "POST", &format!("{TICKET}/configurations"), "Link a configuration to a ticket",
            Some(json!({"type": "object", "required": ["configuration_id"], "additionalProperties": false,
                "properties": {"configuration_id": {"type": "integer", "minimum": 1}}})), None),
        action("unlink_configuration", "DELETE", &format!("{TICKET}/configurations/{{config_id}}"), "Unlink a configuration from a ticket", None, None),
        action("time_entries", "GET", &format!("{TICKET}/timeentries"), "Time charged to a ticket", None, Some(paged(json!({})))),
        action("log_time", "POST", &format!("{TICKET}/time"), "Log time against a ticket: a start and an end or hours",
            Some(json!({"type": "object", "required": ["start"], "additionalProperties": false,
                "properties": {
                    "start": {"type": "string", "format": "date-time"},
                    "end": {"type": "string", "format": "date-time"},
                    "hours": {"type": "number", "exclusiveMinimum": 0, "maximum": 24},
                    "notes": {"type": "string"},
                    "billable": {"type": "string", "enum": ["Billable", "DoNotBill", "NoCharge", "NoDefault"]}}})), None),
        action("schedule_entries", "GET", &format!("{TICKET}/scheduleentries"), "Schedule entries (dispatches) of a ticket", None, Some(paged(json!({})))),
        // Host-only: the full ticket and the ticket context read it.
        Action { path: None, ..action("get_ticket", "GET", TICKET, "One ticket, live", None, None) },
        action("company_configurations", "GET", "configurations", "Company configurations (devices), by name or company", None,
            Some(paged(json!({"search": {"type": "string", "description": "part of the name"},
                              "company_id": {"type": "integer"}})))),
    ]
}

fn query<'a>(request: &'a ActionRequest, name: &str) -> Option<&'a str> {
    request
        .query
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

fn number(request: &ActionRequest, name: &str) -> Result<Option<u64>, Error> {
    query(request, name)
        .map(|v| {
            v.parse().map_err(|_| Error::InvalidInput {
                field: name.into(),
                message: format!("{name} must be a whole number"),
            })
        })
        .transpose()
}

/// A ConnectWise id from the path.
fn id(request: &ActionRequest, name: &str) -> Result<u64, Error> {
    request
        .path_param(name)?
        .parse()
        .map_err(|_| Error::InvalidInput {
            field: name.into(),
            message: format!("{name} must be a ConnectWise id (a whole number)"),
        })
}

/// One page of `path` under `conditions` (joined with `and`).
fn list(
    config: &Config,
    request: &ActionRequest,
    path: &str,
    conditions: &[String],
    order_by: &str,
) -> Result<Value, Error> {
    let (skip, limit) = match (number(request, "skip")?, number(request, "limit")?) {
        (None, None) if request_has(request, "page") || request_has(request, "page_size") => {
            let size = number(request, "page_size")?
                .unwrap_or(DEFAULT_PAGE_SIZE)
                .clamp(1, api::MAX_PAGE_SIZE);
            let page = number(request, "page")?.unwrap_or(1).max(1);
            ((page - 1) * size, size)
        }
        (skip, limit) => (skip.unwrap_or(0), limit.unwrap_or(DEFAULT_PAGE_SIZE)),
    };
    if !(1..=api::MAX_PAGE_SIZE).contains(&limit) {
        return Err(Error::InvalidInput {
            field: "limit".into(),
            message: format!("limit must be 1 to {MAX_LIMIT}"),
        });
    }
    let mut filters = vec![];
    if !conditions.is_empty() {
        filters.push(("conditions", conditions.join(" and ")));
    }
    if !order_by.is_empty() {
        filters.push(("orderBy", order_by.to_string()));
    }
    // ConnectWise pages by number: the pages of `limit` items that hold
    // items skip..skip+limit (two when skip is not a multiple of limit).
    let first = skip / limit + 1;
    let mut items = vec![];
    let mut more = false;
    for page in [first, first + 1] {
        let mut pairs = vec![("page", page.to_string()), ("pageSize", limit.to_string())];
        pairs.extend(filters.iter().cloned());
        let (found, next) = api::page(config, &api::url(config, path, &pairs)?)?;
        items.extend(found);
        more = next.is_some();
        if skip % limit == 0 || !more {
            break;
        }
    }
    let (at, read) = ((skip % limit) as usize, items.len());
    let page: Vec<Value> = items.into_iter().skip(at).take(limit as usize).collect();
    // Items read past the page, or a further page upstream.
    let has_more = more || at + page.len() < read;
    Ok(json!({"items": page, "skip": skip, "limit": limit, "has_more": has_more}))
}

fn request_has(request: &ActionRequest, name: &str) -> bool {
    query(request, name).is_some()
}

fn call(config: &Config, method: &str, path: &str, body: Option<&Value>) -> Result<Value, Error> {
    let response = api::send(config, method, &api::url(config, path, &[])?, body)?;
    api::answer(&response)
}

fn like(search: &str) -> String {
    quoted(&format!("%{search}%"))
}

pub fn invoke(config: &Config, request: &ActionRequest) -> Result<Value, Error> {
    let body = &request.body;
    match request.action.as_str() {
        "status" => {
            let info = call(config, "GET", "system/info", None)?;
            Ok(
                json!({"connected": true, "site": config["site"], "company_id": config["company_id"],
                      "version": info["version"], "cloud": info["cloudRegion"]}),
            )
        }
        "companies" => {
            let mut conditions = vec![];
            if let Some(search) = query(request, "search") {
                conditions.push(format!("name like {}", like(search)));
            }
            list(
                config,
                request,
                "company/companies",
                &conditions,
                "name asc",
            )
        }
        "service_boards" => list(config, request, "service/boards", &[], "name asc"),
        "boards" => list(
            config,
            request,
            "service/boards",
            &["inactiveFlag=false".into()],
            "name asc",
        ),
        "priorities" => list(config, request, "service/priorities", &[], "sortOrder asc"),
        "recent_tickets" => {
            let days = number(request, "days")?.unwrap_or(7).clamp(1, 90);
            let since = format!("lastUpdated > {}", bracketed(&clock::days_ago(days)));
            list(
                config,
                request,
                "service/tickets",
                &[since],
                "lastUpdated desc",
            )
        }
        "list_tickets" => {
            let mut conditions = vec![];
            if let Some(board) = number(request, "board_id")? {
                conditions.push(format!("board/id={board}"));
            }
            if let Some(company) = number(request, "company_id")? {
                conditions.push(format!("company/id={company}"));
            }
            if let Some(status) = query(request, "status") {
                conditions.push(format!("status/name={}", quoted(status)));
            }
            if let Some(closed) = query(request, "closed") {
                conditions.push(format!("closedFlag={}", closed == "true"));
            }
            if let Some(search) = query(request, "search") {
                conditions.push(format!("summary like {}", like(search)));
            }
            list(config, request, "service/tickets", &conditions, "id desc")
        }
        "create_ticket" => {
            let mut ticket = json!({"summary": body["summary"],
                                    "company": {"id": body["company_id"]}});
            if let Some(board) = body["board_id"].as_u64() {
                ticket["board"] = json!({"id": board});
            }
            if let Some(priority) = body["priority_id"].as_u64() {
                ticket["priority"] = json!({"id": priority});
            }
            if let Some(text) = body["initial_description"].as_str() {
                ticket["initialDescription"] = json!(text);
            }
            call(config, "POST", "service/tickets", Some(&ticket))
        }
        "patch_ticket" => {
            let ticket = id(request, "ticket_id")?;
            // ConnectWise's paths are field names without a leading slash.
            let operations: Vec<Value> = body
                .as_array()
                .into_iter()
                .flatten()
                .map(|op| {
                    let mut op = op.clone();
                    if let Some(path) = op["path"].as_str() {
                        op["path"] = json!(path.trim_start_matches('/'));
                    }
                    op
                })
                .collect();
            call(
                config,
                "PATCH",
                &format!("service/tickets/{ticket}"),
                Some(&json!(operations)),
            )
        }
        "notes" => {
            let ticket = id(request, "ticket_id")?;
            list(
                config,
                request,
                &format!("service/tickets/{ticket}/notes"),
                &[],
                "id asc",
            )
        }
        "add_note" => {
            let ticket = id(request, "ticket_id")?;
            let flag = |name: &str, default: bool| body[name].as_bool().unwrap_or(default);
            let internal = flag("internal", false);
            let resolution = flag("resolution", false);
            let note = json!({"text": body["text"],
                              "detailDescriptionFlag": flag("detail", !internal && !resolution),
                              "internalAnalysisFlag": internal,
                              "resolutionFlag": resolution});
            call(
                config,
                "POST",
                &format!("service/tickets/{ticket}/notes"),
                Some(&note),
            )
        }
        "configurations" => {
            let ticket = id(request, "ticket_id")?;
            list(
                config,
                request,
                &format!("service/tickets/{ticket}/configurations"),
                &[],
                "",
            )
        }
        "link_configuration" => {
            let ticket = id(request, "ticket_id")?;
            call(
                config,
                "POST",
                &format!("service/tickets/{ticket}/configurations"),
                Some(&json!({"id": body["configuration_id"]})),
            )
        }
        "unlink_configuration" => {
            let ticket = id(request, "ticket_id")?;
            let configuration = id(request, "config_id")?;
            call(
                config,
                "DELETE",
                &format!("service/tickets/{ticket}/configurations/{configuration}"),
                None,
            )?;
            Ok(json!({"ticket_id": ticket, "configuration_id": configuration, "linked": false}))
        }
        "time_entries" => {
            let ticket = id(request, "ticket_id")?;
            let conditions = [format!(
                "chargeToType={} and chargeToId={ticket}",
                quoted("ServiceTicket")
            )];
            list(
                config,
                request,
                "time/entries",
                &conditions,
                "timeStart desc",
            )
        }
        "log_time" => {
            let ticket = id(request, "ticket_id")?;
            if body["end"].is_null() && body["hours"].is_null() {
                return Err(Error::InvalidInput {
                    field: "end".into(),
                    message: "give an end or hours".into(),
                });
            }
            let mut entry = json!({"chargeToId": ticket, "chargeToType": "ServiceTicket",
                                   "timeStart": body["start"]});
            for (ours, theirs) in [
                ("end", "timeEnd"),
                ("hours", "actualHours"),
                ("notes", "notes"),
                ("billable", "billableOption"),
            ] {
                if !body[ours].is_null() {
                    entry[theirs] = body[ours].clone();
                }
            }
            call(config, "POST", "time/entries", Some(&entry))
        }
        "schedule_entries" => {
            let ticket = id(request, "ticket_id")?;
            let conditions = [format!(
                "type/identifier={} and objectId={ticket}",
                quoted("S")
            )];
            list(
                config,
                request,
                "schedule/entries",
                &conditions,
                "dateStart asc",
            )
        }
        "get_ticket" => {
            let ticket = id(request, "ticket_id")?;
            call(config, "GET", &format!("service/tickets/{ticket}"), None)
        }
        "company_configurations" => {
            let mut conditions = vec![];
            if let Some(search) = query(request, "search") {
                conditions.push(format!("name like {}", like(search)));
            }
            if let Some(company) = number(request, "company_id")? {
                conditions.push(format!("company/id={company}"));
            }
            list(
                config,
                request,
                "company/configurations",
                &conditions,
                "name asc",
            )
        }
        other => Err(Error::NotFound(format!("unsupported action: {other}"))),
    }
}
