//! A news site on 127.0.0.1 serving real-shaped feeds:
//!
//! - `/rss.xml`: RSS 2.0 with an `ETag` that changes when an item is
//!   added; a request whose `If-None-Match` matches it gets a 304;
//! - `/atom.xml`: Atom 1.0 with a `Last-Modified`; a request whose
//!   `If-Modified-Since` equals it gets a 304;
//! - `/page.html` (a web page, not a feed), `/broken.xml` (a truncated
//!   RSS document) and `/huge.xml` (a valid RSS document of 2 MiB).

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The `Last-Modified` of the Atom feed.
pub const ATOM_MODIFIED: &str = "Tue, 24 Nov 2026 08:00:00 GMT";

/// One RSS item.
#[derive(Debug, Clone)]
pub struct RssItem {
    pub guid: Option<String>,
    pub title: String,
    pub link: Option<String>,
    pub description: String,
    pub pub_date: String,
}

impl RssItem {
    pub fn new(guid: &str, title: &str, description: &str) -> RssItem {
        RssItem {
            guid: Some(guid.into()),
            title: title.into(),
            link: Some(format!("https://news.example/{guid}")),
            description: description.into(),
            pub_date: "Mon, 23 Nov 2026 10:00:00 GMT".into(),
        }
    }
}

/// A request the site received: path, `If-None-Match`, `If-Modified-Since`,
/// and the status answered.
#[derive(Debug, Clone)]
pub struct FeedRequest {
    pub path: String,
    pub if_none_match: Option<String>,
    pub if_modified_since: Option<String>,
    pub status: u16,
}

#[derive(Default)]
struct Site {
    rss_items: Vec<RssItem>,
    atom_entries: Vec<(String, String, String)>,
    requests: Vec<FeedRequest>,
}

#[derive(Clone)]
pub struct FakeFeeds {
    pub url: String,
    site: Arc<Mutex<Site>>,
}

impl FakeFeeds {
    /// `rss` items and Atom entries as (id, title, summary).
    pub async fn start(rss: Vec<RssItem>, atom: Vec<(&str, &str, &str)>) -> FakeFeeds {
        let site = Arc::new(Mutex::new(Site {
            rss_items: rss,
            atom_entries: atom
                .into_iter()
                .map(|(a, b, c)| (a.into(), b.into(), c.into()))
                .collect(),
            requests: vec![],
        }));
        let app = axum::Router::new()
            .route("/rss.xml", get(rss_feed))
            .route("/atom.xml", get(atom_feed))
            .route("/page.html", get(page))
            .route("/broken.xml", get(broken))
            .route("/huge.xml", get(huge))
            .with_state(site.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeFeeds {
            url: format!("http://{addr}"),
            site,
        }
    }

    pub fn add_rss_item(&self, item: RssItem) {
        self.site.lock().unwrap().rss_items.insert(0, item);
    }

    pub fn requests(&self) -> Vec<FeedRequest> {
        self.site.lock().unwrap().requests.clone()
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(String::from)
}

fn record(site: &mut Site, path: &str, headers: &HeaderMap, status: u16) {
    site.requests.push(FeedRequest {
        path: path.into(),
        if_none_match: header(headers, "if-none-match"),
        if_modified_since: header(headers, "if-modified-since"),
        status,
    });
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

async fn rss_feed(State(site): State<Arc<Mutex<Site>>>, headers: HeaderMap) -> Response {
    let mut site = site.lock().unwrap();
    let etag = format!("\"rss-v{}\"", site.rss_items.len());
    if header(&headers, "if-none-match").as_deref() == Some(etag.as_str()) {
        record(&mut site, "/rss.xml", &headers, 304);
        return (StatusCode::NOT_MODIFIED, [("etag", etag)]).into_response();
    }
    record(&mut site, "/rss.xml", &headers, 200);
    let items: String = site
        .rss_items
        .iter()
        .map(|item| {
            let guid = item
                .guid
                .as_ref()
                .map(|g| format!("<guid isPermaLink=\"false\">{}</guid>", escape(g)))
                .unwrap_or_default();
            let link = item
                .link
                .as_ref()
                .map(|l| format!("<link>{}</link>", escape(l)))
                .unwrap_or_default();
            format!(
                "<item><title>{}</title>{link}{guid}<description>{}</description><pubDate>{}</pubDate></item>",
                escape(&item.title),
                escape(&item.description),
                item.pub_date
            )
        })
        .collect();
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\" xmlns:atom=\"http://www.w3.org/2005/Atom\"><channel>\
         <title>Example Security Wire</title><link>https://news.example/</link>\
         <description>Security news</description><language>en-us</language>{items}</channel></rss>"
    );
    (
        [
            ("content-type", "application/rss+xml; charset=utf-8"),
            ("etag", etag.as_str()),
        ],
        body,
    )
        .into_response()
}

async fn atom_feed(State(site): State<Arc<Mutex<Site>>>, headers: HeaderMap) -> Response {
    let mut site = site.lock().unwrap();
    if header(&headers, "if-modified-since").as_deref() == Some(ATOM_MODIFIED) {
        record(&mut site, "/atom.xml", &headers, 304);
        return StatusCode::NOT_MODIFIED.into_response();
    }
    record(&mut site, "/atom.xml", &headers, 200);
    let entries: String = site
        .atom_entries
        .iter()
        .map(|(id, title, summary)| {
            format!(
                "<entry><title type=\"text\">{}</title><id>{}</id>\
                 <link rel=\"alternate\" href=\"https://advisories.example/{}\"/>\
                 <updated>2026-11-22T09:30:00Z</updated><published>2026-11-22T09:00:00Z</published>\
                 <summary type=\"html\">{}</summary></entry>",
                escape(title),
                escape(id),
                escape(id),
                escape(summary)
            )
        })
        .collect();
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\
         <title>Example Vendor Advisories</title><id>urn:example:advisories</id>\
         <updated>2026-11-22T09:30:00Z</updated>{entries}</feed>"
    );
    (
        [
            ("content-type", "application/atom+xml"),
            ("last-modified", ATOM_MODIFIED),
        ],
        body,
    )
        .into_response()
}

async fn page(State(site): State<Arc<Mutex<Site>>>, headers: HeaderMap) -> Response {
    record(&mut site.lock().unwrap(), "/page.html", &headers, 200);
    (
        [("content-type", "text/html")],
        "<!doctype html><html><head><title>News</title></head><body><p>Hello</p></body></html>",
    )
        .into_response()
}

async fn broken(State(site): State<Arc<Mutex<Site>>>, headers: HeaderMap) -> Response {
    record(&mut site.lock().unwrap(), "/broken.xml", &headers, 200);
    (
        [("content-type", "application/rss+xml")],
        "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Cut off</title><item><title>Half",
    )
        .into_response()
}

async fn huge(State(site): State<Arc<Mutex<Site>>>, headers: HeaderMap) -> Response {
    record(&mut site.lock().unwrap(), "/huge.xml", &headers, 200);
    let filler = "x".repeat(2 * 1024 * 1024);
    (
        [("content-type", "application/rss+xml")],
        format!(
            "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Huge</title>\
             <item><title>Big</title><description>{filler}</description></item></channel></rss>"
        ),
    )
        .into_response()
}
