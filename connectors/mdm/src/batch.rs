//! Each device's detected apps through JSON batching (`POST /beta/$batch`):
//! at most 20 sub-requests a call; throttled sub-requests are sent again,
//! after the largest `Retry-After` among them, in at most 30 rounds a page.

use std::time::Duration;

use cairn_sdk::{http, json, Config, Error, Value};

use crate::graph::PERMISSION_HINT;

/// Graph refuses a batch of more than 20 requests.
const SUB_REQUESTS_PER_CALL: usize = 20;
/// Rounds of sending what is still pending, for one page of devices.
const MAX_ROUNDS: u32 = 30;
/// The wait before a round when no throttled answer says how long.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_WAIT: Duration = Duration::from_secs(30);

/// Where a device's apps still have to be read from.
#[derive(Debug, Clone)]
struct Pending {
    device: usize,
    /// Relative to the beta endpoint, as a batch wants it.
    url: String,
}

/// `devices` with each one's detected apps under `_detectedApps`.
pub fn attach_apps(config: &Config, mut devices: Vec<Value>) -> Result<Vec<Value>, Error> {
    let beta = format!("{}/beta", microsoft_graph::graph_url(config)?);
    let mut apps: Vec<Vec<Value>> = vec![Vec::new(); devices.len()];
    let mut pending: Vec<Pending> = devices
        .iter()
        .enumerate()
        .filter_map(|(device, d)| {
            let id = d["id"].as_str()?;
            Some(Pending {
                device,
                url: format!("/deviceManagement/managedDevices/{id}/detectedApps"),
            })
        })
        .collect();
    let mut backoff = FIRST_BACKOFF;
    for round in 1.. {
        if pending.is_empty() {
            break;
        }
        if round > MAX_ROUNDS {
            return Err(Error::RateLimited {
                retry_after_secs: MAX_WAIT.as_secs() as u32,
            });
        }
        let outcome = send_round(&beta, &pending, &mut apps)?;
        pending = outcome.again;
        if !pending.is_empty() {
            let wait = outcome.retry_after.unwrap_or(Duration::ZERO).max(backoff);
            std::thread::sleep(wait.min(MAX_WAIT));
            backoff = (backoff * 2).min(MAX_WAIT);
        }
    }
    for (device, apps) in devices.iter_mut().zip(apps) {
        if let Value::Object(object) = device {
            object.insert("_detectedApps".into(), Value::Array(apps));
        }
    }
    Ok(devices)
}

struct Round {
    /// Sub-requests to send in the next round: throttled, failed
    /// transiently, unanswered, or a next page of a device's apps.
    again: Vec<Pending>,
    /// The largest `Retry-After` among the throttled ones.
    retry_after: Option<Duration>,
}

/// Sends every pending sub-request once, in calls of 20 sent concurrently.
fn send_round(beta: &str, pending: &[Pending], apps: &mut [Vec<Value>]) -> Result<Round, Error> {
    let chunks: Vec<&[Pending]> = pending.chunks(SUB_REQUESTS_PER_CALL).collect();
    let requests: Vec<http::Request> = chunks.iter().map(|c| batch_request(beta, c)).collect();
    let mut round = Round {
        again: Vec::new(),
        retry_after: None,
    };
    for (chunk, answer) in chunks.iter().zip(http::send_all(&requests)) {
        let answer = answer?;
        let body = microsoft_graph::answer(answer.status, &answer.body, PERMISSION_HINT)?;
        let mut answered = vec![false; chunk.len()];
        for sub in body["responses"].as_array().into_iter().flatten() {
            // Answers come in any order; ids are indexes into the chunk.
            let Some(index) = sub["id"]
                .as_str()
                .and_then(|id| id.parse::<usize>().ok())
                .filter(|i| *i < chunk.len() && !answered[*i])
            else {
                continue;
            };
            answered[index] = true;
            let request = &chunk[index];
            let status = sub["status"].as_u64().unwrap_or(0) as u16;
            match status {
                200..=299 => {
                    let page = &sub["body"];
                    apps[request.device]
                        .extend(page["value"].as_array().into_iter().flatten().cloned());
                    if let Some(next) = page["@odata.nextLink"].as_str() {
                        round.again.push(Pending {
                            device: request.device,
                            url: relative(next)?,
                        });
                    }
                }
                // The device left Intune between its page and its apps.
                404 => {}
                429 | 500..=599 => {
                    if let Some(wait) = retry_after(&sub["headers"]) {
                        round.retry_after = round.retry_after.max(Some(wait));
                    }
                    round.again.push(request.clone());
                }
                _ => {
                    return Err(microsoft_graph::error(
                        status,
                        &sub["body"],
                        PERMISSION_HINT,
                    ))
                }
            }
        }
        round.again.extend(
            chunk
                .iter()
                .zip(answered)
                .filter(|(_, answered)| !answered)
                .map(|(request, _)| request.clone()),
        );
    }
    Ok(round)
}

fn batch_request(beta: &str, chunk: &[Pending]) -> http::Request {
    let requests: Vec<Value> = chunk
        .iter()
        .enumerate()
        .map(|(i, p)| json!({"id": i.to_string(), "method": "GET", "url": p.url}))
        .collect();
    http::Request {
        method: "POST".into(),
        url: format!("{beta}/$batch"),
        headers: vec![
            ("accept".into(), "application/json".into()),
            ("content-type".into(), "application/json".into()),
        ],
        body: json!({ "requests": requests }).to_string().into_bytes(),
    }
}

/// A sub-response's `@odata.nextLink` (absolute) as the relative URL a
/// batch takes: what follows the `/beta` segment.
fn relative(next_link: &str) -> Result<String, Error> {
    next_link
        .find("/beta/")
        .map(|at| next_link[at + "/beta".len()..].to_string())
        .ok_or_else(|| {
            Error::Upstream(format!(
                "a next link outside the beta endpoint: {next_link}"
            ))
        })
}

/// `Retry-After` of a sub-response's headers (any case; seconds, possibly
/// with a fraction).
fn retry_after(headers: &Value) -> Option<Duration> {
    let (_, value) = headers
        .as_object()?
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("retry-after"))?;
    let secs = match value {
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        other => other.as_f64()?,
    };
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_any_case_and_with_a_fraction() {
        assert_eq!(
            retry_after(&json!({"retry-after": "0.25"})),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&json!({"Retry-After": "3"})),
            Some(Duration::from_secs(3))
        );
        assert_eq!(retry_after(&json!({"Retry-After": "soon"})), None);
        assert_eq!(retry_after(&json!({})), None);
    }

    #[test]
    fn next_links_become_relative() {
        assert_eq!(
            relative("https://graph.microsoft.com/beta/deviceManagement/managedDevices/1/detectedApps?$skiptoken=x")
                .unwrap(),
            "/deviceManagement/managedDevices/1/detectedApps?$skiptoken=x"
        );
        assert!(relative("https://graph.microsoft.com/v1.0/x").is_err());
    }
}
