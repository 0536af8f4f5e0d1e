//! A fake Qualys VMDR host list detection API on 127.0.0.1: XML pages of
//! hosts by ascending ID, truncated to `truncation_limit` with a `WARNING`
//! (code 1980) whose `URL` repeats the request's parameters with `id_min`;
//! information gathered detections (`TYPE` Info) only with `show_igs=1`
//! and `QDS` scores only with `show_qds=1`, as Qualys answers; HTTP Basic
//! and a mandatory `X-Requested-With`; on request one 409 with code 1965
//! and its seconds to wait, and one page cut short.

use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;

pub const USERNAME: &str = "msp_api_user";
pub const PASSWORD: &str = "Qualys-Passw0rd-5e1f";

#[derive(Default)]
pub struct QualysData {
    /// `(id, <HOST>...</HOST> XML)`, by ascending id.
    pub hosts: Vec<(u64, String)>,
    /// The first request is answered 409 (code 1965).
    pub throttle_once: bool,
    /// The page starting at this id_min is sent cut short once.
    pub truncate_once_at: Option<u64>,
    pub throttled: u32,
    pub truncated: u32,
    pub requests: u32,
}

pub struct FakeQualys {
    pub base_url: String,
    pub data: Arc<Mutex<QualysData>>,
}

#[derive(Clone)]
struct Shared {
    base_url: String,
    data: Arc<Mutex<QualysData>>,
}

/// The hosts of Qualys's own sample answer (the fixture), as XML.
pub fn fixture_hosts() -> Vec<(u64, String)> {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/scanner/qualys_host_list_detections_raw.xml"),
    )
    .expect("the Qualys fixture");
    let mut hosts = Vec::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("<HOST>") {
        let end = rest[start..].find("</HOST>").expect("a closed HOST") + start + "</HOST>".len();
        let host = &rest[start..end];
        let id = host
            .split("<ID>")
            .nth(1)
            .and_then(|s| s.split("</ID>").next())
            .and_then(|s| s.trim().parse().ok())
            .expect("a host ID");
        hosts.push((id, host.to_string()));
        rest = &rest[end..];
    }
    hosts
}

impl FakeQualys {
    pub async fn start(data: QualysData) -> FakeQualys {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let data = Arc::new(Mutex::new(data));
        let shared = Shared {
            base_url: base_url.clone(),
            data: data.clone(),
        };
        let app = axum::Router::new()
            .route("/api/2.0/fo/asset/host/vm/detection/", get(detections))
            .with_state(shared);
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeQualys { base_url, data }
    }
}

fn simple_return(status: StatusCode, code: &str, text: &str, items: &[(&str, &str)]) -> Response {
    let items: String = items
        .iter()
        .map(|(k, v)| format!("<ITEM><KEY>{k}</KEY><VALUE>{v}</VALUE></ITEM>"))
        .collect();
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<SIMPLE_RETURN><RESPONSE><DATETIME>2026-11-24T10:00:00Z</DATETIME>\
         <CODE>{code}</CODE><TEXT>{text}</TEXT><ITEM_LIST>{items}</ITEM_LIST></RESPONSE></SIMPLE_RETURN>"
    );
    (status, [("content-type", "text/xml;charset=UTF-8")], body).into_response()
}

async fn detections(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{USERNAME}:{PASSWORD}"))
    );
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
        return simple_return(StatusCode::UNAUTHORIZED, "2000", "Bad Login/Password", &[]);
    }
    if !headers.contains_key("x-requested-with") {
        return simple_return(
            StatusCode::BAD_REQUEST,
            "1921",
            "Missing required X-Requested-With header",
            &[],
        );
    }
    let mut data = shared.data.lock().unwrap();
    data.requests += 1;
    if data.throttle_once {
        data.throttle_once = false;
        data.throttled += 1;
        return simple_return(
            StatusCode::CONFLICT,
            "1965",
            "This API cannot be run again for another 0 minutes and 1 seconds.",
            &[("SECONDS_TO_WAIT", "1")],
        );
    }
    let limit: usize = query
        .get("truncation_limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(1000);
    let id_min: u64 = query
        .get("id_min")
        .and_then(|i| i.parse().ok())
        .unwrap_or(0);
    let page: Vec<&(u64, String)> = data
        .hosts
        .iter()
        .filter(|(id, _)| *id >= id_min)
        .take(limit)
        .collect();
    let next = data
        .hosts
        .iter()
        .filter(|(id, _)| *id >= id_min)
        .nth(limit)
        .map(|(id, _)| *id);
    let shown = |flag: &str| query.get(flag).map(String::as_str) == Some("1");
    let hosts: String = page
        .iter()
        .map(|(_, xml)| as_asked(xml, shown("show_igs"), shown("show_qds")))
        .collect();
    let warning = match next {
        Some(next) => {
            let mut again: Vec<(&String, String)> = query
                .iter()
                .filter(|(k, _)| *k != "id_min")
                .map(|(k, v)| (k, v.clone()))
                .collect();
            again.sort();
            let id_min = "id_min".to_string();
            again.push((&id_min, next.to_string()));
            let query: Vec<String> = again.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!(
                "<WARNING><CODE>1980</CODE><TEXT>{limit} record limit exceeded. Use URL to get next batch of results.</TEXT>\
                 <URL><![CDATA[{}/api/2.0/fo/asset/host/vm/detection/?{}]]></URL></WARNING>",
                shared.base_url,
                query.join("&")
            )
        }
        None => String::new(),
    };
    let mut body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<HOST_LIST_VM_DETECTION_OUTPUT><RESPONSE>\
         <DATETIME>2026-11-24T10:00:00Z</DATETIME><HOST_LIST>{hosts}</HOST_LIST>{warning}</RESPONSE>\
         </HOST_LIST_VM_DETECTION_OUTPUT>"
    );
    if data.truncate_once_at == Some(id_min) {
        data.truncate_once_at = None;
        data.truncated += 1;
        body.truncate(body.len() / 2);
    }
    (
        StatusCode::OK,
        [("content-type", "text/xml;charset=UTF-8")],
        body,
    )
        .into_response()
}

/// A host's XML as Qualys sends it for the flags asked: without its
/// information gathered detections unless `igs`, without `QDS` unless `qds`.
fn as_asked(host: &str, igs: bool, qds: bool) -> String {
    let mut out = String::with_capacity(host.len());
    let mut rest = host;
    while let Some(start) = rest.find("<DETECTION>") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("</DETECTION>")
            .expect("a closed DETECTION")
            + start
            + "</DETECTION>".len();
        let detection = &rest[start..end];
        if igs || !detection.contains("<TYPE>Info</TYPE>") {
            match (qds, detection.find("<QDS")) {
                (false, Some(at)) => {
                    let close = detection[at..].find("</QDS>").expect("a closed QDS") + at + 6;
                    out.push_str(&detection[..at]);
                    out.push_str(&detection[close..]);
                }
                _ => out.push_str(detection),
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}
