//! The host list detection API: pages, Qualys's throttling answers, and
//! pages that arrive truncated.

use std::time::Duration;

use cairn_sdk::{http, Config, Error, Page, Value};

use crate::xml;

pub const HOSTS: &str = "hosts";

const DEFAULT_TRUNCATION: u64 = 1000;
/// Tries of one page: throttled (409) or cut short.
const TRIES: u32 = 4;
/// The longest wait a 409 may ask for inside one call; a longer one ends
/// the sync as rate limited, to be retried later.
const MAX_WAIT: Duration = Duration::from_secs(60);

const PERMISSION_HINT: &str =
    "use a Qualys user with API access and the VM scanning role (Manager, Unit Manager or Scanner)";

fn base(config: &Config) -> Result<&str, Error> {
    cairn_sdk::base_url(config, "base_url")
}

/// The first page: tags and detection scores shown; information gathered
/// too unless the tenant turned software off (`include_software: false`),
/// since that is where the installed software is listed.
fn first_page(config: &Config, limit: u64) -> Result<String, Error> {
    let gathered = config["include_software"].as_bool().unwrap_or(true);
    Ok(format!(
        "{}/api/2.0/fo/asset/host/vm/detection/?action=list&truncation_limit={limit}\
         &show_tags=1&show_qds=1&show_igs={}",
        base(config)?,
        u8::from(gathered)
    ))
}

/// One host, to check the credentials.
pub fn check(config: &Config) -> Result<(), Error> {
    page(&first_page(config, 1)?).map(|_| ())
}

/// The page at `cursor` (the previous page's `WARNING/URL`), its hosts as
/// JSON.
pub fn fetch(config: &Config, cursor: Option<&str>) -> Result<Page, Error> {
    let url = match cursor {
        Some(next) => next.to_string(),
        None => first_page(
            config,
            config["truncation_limit"]
                .as_u64()
                .unwrap_or(DEFAULT_TRUNCATION)
                .clamp(1, 10_000),
        )?,
    };
    let (records, next_cursor) = page(&url)?;
    Ok(Page {
        records,
        next_cursor,
    })
}

/// GET one page, waiting out throttling and asking again for a page that
/// arrived cut short.
fn page(url: &str) -> Result<(Vec<Value>, Option<String>), Error> {
    let mut tries = 0;
    loop {
        tries += 1;
        let response = http::send(
            "GET",
            url,
            &[("x-requested-with", "cairn"), ("accept", "application/xml")],
            &[],
        )?;
        let body = String::from_utf8_lossy(&response.body);
        match response.status {
            200 => match xml::parse(&body) {
                Ok((_, document)) => return hosts_of(&document),
                Err(reason) if tries < TRIES => {
                    cairn_sdk::log(cairn_sdk::LogLevel::Warn, &format!("page again: {reason}"));
                }
                Err(reason) => return Err(Error::Transient(reason)),
            },
            409 => {
                let wait = throttled(&body)?;
                if tries >= TRIES || wait > MAX_WAIT {
                    return Err(Error::RateLimited {
                        retry_after_secs: wait.as_secs().max(1) as u32,
                    });
                }
                std::thread::sleep(wait);
            }
            status => return Err(refusal(status, &body)),
        }
    }
}

/// The hosts of a detection list and the next page's URL.
fn hosts_of(document: &Value) -> Result<(Vec<Value>, Option<String>), Error> {
    let response = &document["RESPONSE"];
    if response.is_null() {
        return Err(Error::Upstream(
            "a detection answer without RESPONSE".into(),
        ));
    }
    let hosts = xml::items(&response["HOST_LIST"]["HOST"])
        .into_iter()
        .cloned()
        .collect();
    let warning = &response["WARNING"];
    let next = (warning["CODE"].as_str() == Some("1980"))
        .then(|| warning["URL"].as_str().map(String::from))
        .flatten();
    Ok((hosts, next))
}

/// How long a 409 asks to wait: code 1965 says its seconds; 1960 (too
/// many calls at once) and anything unstated, a short pause.
fn throttled(body: &str) -> Result<Duration, Error> {
    let (_, answer) = xml::parse(body).map_err(Error::Upstream)?;
    let response = &answer["RESPONSE"];
    let code = response["CODE"].as_str().unwrap_or_default();
    let seconds = xml::items(&response["ITEM_LIST"]["ITEM"])
        .into_iter()
        .find(|item| item["KEY"].as_str() == Some("SECONDS_TO_WAIT"))
        .and_then(|item| item["VALUE"].as_str()?.trim().parse::<f64>().ok());
    match (code, seconds) {
        ("1965", Some(secs)) if secs.is_finite() && secs >= 0.0 => {
            Ok(Duration::from_secs_f64(secs))
        }
        ("1965" | "1960", _) => Ok(Duration::from_secs(2)),
        _ => Err(Error::Upstream(format!(
            "Qualys answered 409: {}",
            response["TEXT"].as_str().unwrap_or("conflict")
        ))),
    }
}

/// The typed error of another status, with Qualys's `SIMPLE_RETURN` text.
fn refusal(status: u16, body: &str) -> Error {
    let text = xml::parse(body)
        .ok()
        .and_then(|(_, answer)| answer["RESPONSE"]["TEXT"].as_str().map(String::from))
        .unwrap_or_else(|| "no detail".into());
    Error::from_status_detail(
        status,
        &format!("Qualys answered {status}: {text}"),
        PERMISSION_HINT,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttling_answers_say_how_long() {
        let rate = "<SIMPLE_RETURN><RESPONSE><DATETIME>2026-11-24T10:00:00Z</DATETIME><CODE>1965</CODE>\
            <TEXT>This API cannot be run again for another 0 minutes and 2 seconds.</TEXT>\
            <ITEM_LIST><ITEM><KEY>SECONDS_TO_WAIT</KEY><VALUE>2</VALUE></ITEM></ITEM_LIST></RESPONSE></SIMPLE_RETURN>";
        assert_eq!(throttled(rate).unwrap(), Duration::from_secs(2));
        let concurrency = "<SIMPLE_RETURN><RESPONSE><CODE>1960</CODE><TEXT>This API cannot be run again until 1 currently running API instance has finished.</TEXT>\
            <ITEM_LIST><ITEM><KEY>CALLS_TO_FINISH</KEY><VALUE>1</VALUE></ITEM></ITEM_LIST></RESPONSE></SIMPLE_RETURN>";
        assert_eq!(throttled(concurrency).unwrap(), Duration::from_secs(2));
        assert!(
            throttled("<SIMPLE_RETURN><RESPONSE><CODE>999</CODE></RESPONSE></SIMPLE_RETURN>")
                .is_err()
        );
    }

    #[test]
    fn the_fixture_page_has_two_hosts_and_no_next() {
        let text =
            include_str!("../../../tests/fixtures/scanner/qualys_host_list_detections_raw.xml");
        let (_, document) = xml::parse(text).unwrap();
        let (hosts, next) = hosts_of(&document).unwrap();
        assert_eq!(hosts.len(), 2);
        assert_eq!(next, None);
        let warned = "<X><RESPONSE><HOST_LIST><HOST><ID>1</ID></HOST></HOST_LIST><WARNING><CODE>1980</CODE>\
            <TEXT>1000 record limit exceeded.</TEXT><URL><![CDATA[https://q.example/api/2.0/fo/asset/host/vm/detection/?action=list&id_min=2]]></URL>\
            </WARNING></RESPONSE></X>";
        let (_, document) = xml::parse(warned).unwrap();
        let (hosts, next) = hosts_of(&document).unwrap();
        assert_eq!(hosts.len(), 1, "a single host is a list of one");
        assert_eq!(
            next.as_deref(),
            Some("https://q.example/api/2.0/fo/asset/host/vm/detection/?action=list&id_min=2")
        );
    }
}
