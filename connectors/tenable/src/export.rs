//! The vulnerability export: start one (or adopt the one already running),
//! poll its status, and read its chunks as they become available, even
//! while it is still processing.

use std::time::Duration;

use cairn_sdk::{http, json, Config, Error, Page, Value};

pub const VULNS: &str = "vulns";

/// Tenable's own default: a chunk holds every finding of its assets, so a
/// few hundred assets with many informational findings each already make
/// a chunk of tens of thousands.
const DEFAULT_NUM_ASSETS: u64 = 50;
/// Findings handed to the host in one page; a larger chunk is handed over
/// in slices (the host caps a page at 10,000 records by default).
const SLICE: usize = 5_000;
const DEFAULT_POLL: f64 = 5.0;
/// Polls in one fetch before it returns an empty page (the sync goes on
/// and fetches again), so one call stays well inside the host's time cap.
const MAX_POLLS_PER_FETCH: u32 = 12;
/// Tries of one chunk download that fails transiently.
const CHUNK_TRIES: u32 = 3;

const PERMISSION_HINT: &str =
    "use the API keys of a user with the Vulnerability Management Scan Operator role or higher";

fn base(config: &Config) -> Result<&str, Error> {
    cairn_sdk::base_url(config, "base_url")
}

/// Where a sync is: the export, the chunks read from it, and a chunk
/// handed over in part (its number and the findings handed so far).
#[derive(Debug, Clone, PartialEq)]
struct Cursor {
    export: String,
    done: Vec<u64>,
    partial: Option<(u64, usize)>,
}

impl Cursor {
    /// `export|done,done[|chunk@offset]`.
    fn parse(raw: &str) -> Option<Cursor> {
        let mut parts = raw.split('|');
        let export = parts.next().filter(|e| !e.is_empty())?;
        let done = parts
            .next()?
            .split(',')
            .filter(|c| !c.is_empty())
            .map(|c| c.parse().ok())
            .collect::<Option<Vec<u64>>>()?;
        let partial = match parts.next() {
            None => None,
            Some(part) => {
                let (chunk, offset) = part.split_once('@')?;
                Some((chunk.parse().ok()?, offset.parse().ok()?))
            }
        };
        if parts.next().is_some() {
            return None;
        }
        Some(Cursor {
            export: export.to_string(),
            done,
            partial,
        })
    }

    fn text(&self) -> String {
        let done: Vec<String> = self.done.iter().map(u64::to_string).collect();
        let mut text = format!("{}|{}", self.export, done.join(","));
        if let Some((chunk, offset)) = self.partial {
            text.push_str(&format!("|{chunk}@{offset}"));
        }
        text
    }

    /// The page of `chunk`'s findings from `offset`: at most [`SLICE`],
    /// the chunk done once its last is handed over.
    fn slice(mut self, chunk: u64, offset: usize, findings: Vec<Value>) -> Page {
        let total = findings.len();
        let end = (offset + SLICE).min(total);
        let records: Vec<Value> = findings
            .into_iter()
            .skip(offset)
            .take(end.saturating_sub(offset))
            .collect();
        if end < total {
            self.partial = Some((chunk, end));
        } else {
            self.partial = None;
            self.done.push(chunk);
        }
        Page {
            records,
            next_cursor: Some(self.text()),
        }
    }
}

/// The export's status, to check the keys.
pub fn check(config: &Config) -> Result<(), Error> {
    let url = format!("{}/vulns/export/status", base(config)?);
    get(&url).map(|_| ())
}

/// The next chunk of the export the cursor names (a new export without
/// one); an empty page with no cursor once the export is finished and
/// every chunk read.
pub fn fetch(config: &Config, cursor: Option<&str>) -> Result<Page, Error> {
    let base = base(config)?;
    let mut cursor = match cursor.and_then(Cursor::parse) {
        Some(cursor) => cursor,
        None => Cursor {
            export: start(config, base)?,
            done: vec![],
            partial: None,
        },
    };
    // A chunk handed over in part: its next slice. The chunk is read
    // again, its totals taken over all of it.
    if let Some((chunk, offset)) = cursor.partial {
        let findings = crate::mapping::with_asset_totals(read_chunk(base, &cursor.export, chunk)?);
        return Ok(cursor.slice(chunk, offset, findings));
    }
    let poll = Duration::from_secs_f64(
        config["poll_seconds"]
            .as_f64()
            .unwrap_or(DEFAULT_POLL)
            .clamp(0.0, 60.0),
    );
    for attempt in 0..MAX_POLLS_PER_FETCH {
        let status = get(&format!("{base}/vulns/export/{}/status", cursor.export))?;
        let next = status["chunks_available"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
            .filter(|c| !cursor.done.contains(c))
            .min();
        if let Some(chunk) = next {
            let records =
                crate::mapping::with_asset_totals(read_chunk(base, &cursor.export, chunk)?);
            cursor.done.push(chunk);
            return Ok(Page {
                records,
                next_cursor: Some(cursor.text()),
            });
        }
        match status["status"].as_str().unwrap_or_default() {
            "FINISHED" => {
                return Ok(Page {
                    records: vec![],
                    next_cursor: None,
                })
            }
            "ERROR" | "CANCELLED" => {
                return Err(Error::Upstream(format!(
                    "the export {} ended {}",
                    cursor.export,
                    status["status"].as_str().unwrap_or_default()
                )))
            }
            _ if attempt + 1 < MAX_POLLS_PER_FETCH => std::thread::sleep(poll),
            _ => {}
        }
    }
    // Still processing with nothing new: the sync fetches again from here.
    Ok(Page {
        records: vec![],
        next_cursor: Some(cursor.text()),
    })
}

/// Starts an export of open, reopened and fixed findings; a 409 names the
/// export already running, which is adopted.
fn start(config: &Config, base: &str) -> Result<String, Error> {
    let num_assets = config["num_assets"]
        .as_u64()
        .unwrap_or(DEFAULT_NUM_ASSETS)
        .clamp(50, 5000);
    let body = json!({"num_assets": num_assets,
                      "filters": {"state": ["OPEN", "REOPENED", "FIXED"]}});
    let response = http::send(
        "POST",
        &format!("{base}/vulns/export"),
        &[
            ("accept", "application/json"),
            ("content-type", "application/json"),
        ],
        body.to_string().as_bytes(),
    )?;
    if response.status == 409 {
        let conflict: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        if let Some(active) = conflict["active_job_id"].as_str() {
            return Ok(active.to_string());
        }
    }
    let answer = answer(response.status, &response.body)?;
    answer["export_uuid"]
        .as_str()
        .map(String::from)
        .ok_or_else(|| Error::Upstream("the export answer has no export_uuid".into()))
}

fn read_chunk(base: &str, export: &str, chunk: u64) -> Result<Vec<Value>, Error> {
    let url = format!("{base}/vulns/export/{export}/chunks/{chunk}");
    let mut tries = 0;
    loop {
        tries += 1;
        match get(&url) {
            Ok(Value::Array(findings)) => return Ok(findings),
            Ok(_) => {
                return Err(Error::Upstream(format!(
                    "chunk {chunk} is not a JSON array"
                )))
            }
            Err(Error::Transient(_)) if tries < CHUNK_TRIES => {
                std::thread::sleep(Duration::from_millis(200 * u64::from(tries)))
            }
            Err(err) => return Err(err),
        }
    }
}

fn get(url: &str) -> Result<Value, Error> {
    let response = http::send("GET", url, &[("accept", "application/json")], &[])?;
    answer(response.status, &response.body)
}

/// A 2xx answer's JSON, or the typed error of Tenable's
/// `{"statusCode", "error", "message"}`.
fn answer(status: u16, body: &[u8]) -> Result<Value, Error> {
    if (200..300).contains(&status) {
        return serde_json::from_slice(body).map_err(|e| {
            Error::Upstream(format!(
                "Tenable answered with a body that is not JSON: {e}"
            ))
        });
    }
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let detail = parsed["message"]
        .as_str()
        .or(parsed["error"].as_str())
        .unwrap_or("no detail");
    Err(Error::from_status_detail(
        status,
        &format!("Tenable answered {status}: {detail}"),
        PERMISSION_HINT,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_garbage() {
        let cursor = Cursor {
            export: "bde9fe80".into(),
            done: vec![1, 3],
            partial: None,
        };
        assert_eq!(cursor.text(), "bde9fe80|1,3");
        assert_eq!(Cursor::parse("bde9fe80|1,3"), Some(cursor.clone()));
        let partial = Cursor {
            partial: Some((4, 5000)),
            ..cursor
        };
        assert_eq!(partial.text(), "bde9fe80|1,3|4@5000");
        assert_eq!(Cursor::parse("bde9fe80|1,3|4@5000"), Some(partial));
        assert_eq!(
            Cursor::parse("e|"),
            Some(Cursor {
                export: "e".into(),
                done: vec![],
                partial: None,
            })
        );
        for bad in ["e|x", "no-separator", "e|1|4", "e|1|4@x", "e|1|4@5|9", "|1"] {
            assert_eq!(Cursor::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_large_chunk_is_handed_over_in_slices() {
        let cursor = Cursor {
            export: "e".into(),
            done: vec![],
            partial: None,
        };
        let findings = |n: usize| (0..n).map(|i| json!({"n": i})).collect::<Vec<Value>>();
        let first = cursor.clone().slice(7, 0, findings(SLICE + 10));
        assert_eq!(first.records.len(), SLICE);
        let next = Cursor::parse(first.next_cursor.as_deref().unwrap()).unwrap();
        assert_eq!(next.partial, Some((7, SLICE)));
        assert!(next.done.is_empty());
        let second = next.slice(7, SLICE, findings(SLICE + 10));
        assert_eq!(second.records.len(), 10);
        assert_eq!(second.records[0]["n"], SLICE);
        let last = Cursor::parse(second.next_cursor.as_deref().unwrap()).unwrap();
        assert_eq!((last.partial, last.done), (None, vec![7]));
        let small = cursor.slice(8, 0, findings(3));
        assert_eq!(small.records.len(), 3);
        assert_eq!(small.next_cursor.as_deref(), Some("e|8"));
    }

    #[test]
    fn errors_are_typed() {
        assert!(matches!(
            answer(
                401,
                br#"{"statusCode":401,"error":"Unauthorized","message":"Invalid Credentials"}"#
            ),
            Err(Error::Auth { status: 401, .. })
        ));
        assert!(matches!(answer(502, b""), Err(Error::Transient(_))));
    }
}
