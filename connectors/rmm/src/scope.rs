//! Paging and scope resolution against the Automate API.

use cairn_sdk::{http, json, Config, Error, Page, Value};

const DEFAULT_PAGE_SIZE: u64 = 250;

fn base(config: &Config) -> Result<&str, Error> {
    cairn_sdk::base_url(config, "base_url")
}

fn page_size(config: &Config) -> u64 {
    config["page_size"]
        .as_u64()
        .unwrap_or(DEFAULT_PAGE_SIZE)
        .clamp(1, 1000)
}

fn strings(config: &Config, field: &str) -> Vec<String> {
    config[field]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| {
            v.as_str()
                .map(String::from)
                .or_else(|| v.as_i64().map(|n| n.to_string()))
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// One page of `path` (JSON array), with extra query parameters.
pub fn get_page(
    config: &Config,
    path: &str,
    query: &[(&str, &str)],
    page: u64,
    page_size: u64,
) -> Result<Vec<Value>, Error> {
    let mut url = format!("{}/{path}?page={page}&pageSize={page_size}", base(config)?);
    for (name, value) in query {
        url.push_str(&format!("&{name}={}", http::encode(value)));
    }
    match http::get_json(&url)? {
        Value::Array(items) => Ok(items),
        other => Err(Error::Upstream(format!(
            "{path}: expected a JSON array, got {}",
            kind(&other)
        ))),
    }
}

/// Attaches each computer's software (`_Software`): the first page of
/// every computer in one concurrent batch, further pages (rare: over a page
/// of applications) one computer at a time.
fn attach_software(config: &Config, mut computers: Vec<Value>) -> Result<Vec<Value>, Error> {
    let size = page_size(config);
    let base = base(config)?;
    let ids: Vec<String> = computers
        .iter()
        .map(|c| id_of(c).ok_or_else(|| Error::Upstream("a computer has no Id".into())))
        .collect::<Result<_, _>>()?;
    let requests: Vec<http::Request> = ids
        .iter()
        .map(|id| {
            http::Request::get_json(&format!(
                "{base}/Computers/{id}/Software?page=1&pageSize={size}"
            ))
        })
        .collect();
    for ((computer, id), answer) in computers
        .iter_mut()
        .zip(&ids)
        .zip(http::send_all(&requests))
    {
        let path = format!("Computers/{id}/Software");
        let mut software = match answer?.json()? {
            Value::Array(items) => items,
            other => {
                return Err(Error::Upstream(format!(
                    "{path}: expected a JSON array, got {}",
                    kind(&other)
                )))
            }
        };
        let mut page = 1;
        while software.len() as u64 == size * page {
            page += 1;
            let more = get_page(config, &path, &[], page, size)?;
            if more.is_empty() {
                break;
            }
            software.extend(more);
        }
        computer["_Software"] = Value::Array(software);
    }
    Ok(computers)
}

/// Every page of `path`.
pub fn all_pages(config: &Config, path: &str, query: &[(&str, &str)]) -> Result<Vec<Value>, Error> {
    let size = page_size(config);
    let mut all = vec![];
    for page in 1.. {
        let items = get_page(config, path, query, page, size)?;
        let last = (items.len() as u64) < size;
        all.extend(items);
        if last {
            break;
        }
    }
    Ok(all)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "an object",
        Value::Null => "null",
        _ => "a scalar",
    }
}

/// Ids of the named entities at `path` (clients or groups), plus the ids given.
fn resolve_ids(
    config: &Config,
    ids_field: &str,
    names_field: &str,
    path: &str,
) -> Result<Vec<String>, Error> {
    let mut ids = strings(config, ids_field);
    let names: Vec<String> = strings(config, names_field)
        .iter()
        .map(|n| n.to_lowercase())
        .collect();
    if !names.is_empty() {
        for entity in all_pages(config, path, &[])? {
            let name = entity["Name"].as_str().unwrap_or_default().to_lowercase();
            if names.contains(&name) {
                if let Some(id) = id_of(&entity) {
                    ids.push(id);
                }
            }
        }
    }
    ids.sort();
    ids.dedup();
    Ok(ids)
}

pub fn id_of(value: &Value) -> Option<String> {
    value["Id"]
        .as_i64()
        .map(|n| n.to_string())
        .or_else(|| value["Id"].as_str().map(String::from))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cursor {
    part: usize,
    page: u64,
}

fn parse_cursor(raw: Option<&str>) -> Cursor {
    raw.and_then(|c| c.split_once(':'))
        .and_then(|(part, page)| {
            Some(Cursor {
                part: part.parse().ok()?,
                page: page.parse().ok()?,
            })
        })
        .unwrap_or(Cursor { part: 0, page: 1 })
}

/// One page of computers in scope, each with its software attached.
pub fn fetch_computers(config: &Config, cursor: Option<&str>) -> Result<Page, Error> {
    let size = page_size(config);
    let at = parse_cursor(cursor);
    let groups = resolve_ids(config, "scope_group_ids", "scope_group_names", "Groups")?;
    let (computers, more_in_part, parts) = if !groups.is_empty() {
        // Groups overlap: list every scoped group's members, union them by Id
        // with the groups each was found in, and page through the union.
        let mut union: Vec<(String, Value, Vec<String>)> = vec![];
        for group in &groups {
            for computer in all_pages(config, &format!("Groups/{group}/Computers"), &[])? {
                let Some(id) = id_of(&computer) else { continue };
                match union.iter_mut().find(|(existing, _, _)| *existing == id) {
                    Some((_, _, in_groups)) => in_groups.push(group.clone()),
                    None => union.push((id, computer, vec![group.clone()])),
                }
            }
        }
        union.sort_by(|a, b| a.0.cmp(&b.0));
        let start = ((at.page - 1) * size) as usize;
        let chunk: Vec<Value> = union
            .iter()
            .skip(start)
            .take(size as usize)
            .map(|(_, computer, in_groups)| {
                let mut computer = computer.clone();
                computer["_ScopeGroupIds"] = json!(in_groups);
                computer
            })
            .collect();
        let more = union.len() > start + chunk.len();
        (chunk, more, 1)
    } else {
        let clients = resolve_ids(config, "scope_client_ids", "scope_client_names", "Clients")?;
        let condition = clients.get(at.part).map(|id| format!("Client.Id={id}"));
        let query: Vec<(&str, &str)> = condition
            .iter()
            .map(|c| ("condition", c.as_str()))
            .collect();
        let page = get_page(config, "Computers", &query, at.page, size)?;
        let more = page.len() as u64 == size;
        (page, more, clients.len().max(1))
    };
    let records = attach_software(config, computers)?;
    let next_cursor = if more_in_part {
        Some(format!("{}:{}", at.part, at.page + 1))
    } else if at.part + 1 < parts {
        Some(format!("{}:1", at.part + 1))
    } else {
        None
    };
    Ok(Page {
        records,
        next_cursor,
    })
}
