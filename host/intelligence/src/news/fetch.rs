//! Fetching a feed through the outbound path (conditional GET with the
//! validators of the last fetch) and reading RSS 2.0, Atom or JSON Feed
//! with `feed-rs` into items.

use std::time::Duration;

use cairn_core::settings::Settings;
use cairn_plugins::outbound::{describe, Outbound};

/// Longest a feed request may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Most items read from one document (feeds carry 10-100).
const MAX_ITEMS: usize = 500;
/// Longest summary kept, in characters.
const MAX_SUMMARY_CHARS: usize = 4000;

/// Why a feed could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    #[error("{0}")]
    Refused(String),
    #[error("fetching the feed failed: {0}")]
    Fetch(String),
    #[error("the feed answered HTTP {0}")]
    Status(u16),
    #[error("not an RSS, Atom or JSON feed: {0}")]
    NotAFeed(String),
}

/// The validators a conditional GET sends.
#[derive(Debug, Clone, Default)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// One entry of a feed, as stored.
#[derive(Debug, Clone)]
pub struct FeedItem {
    /// The guid, else the link, else the title and date.
    pub dedupe_key: String,
    pub title: String,
    pub link: Option<String>,
    /// Plain text (markup removed).
    pub summary: String,
    pub published_at: Option<i64>,
}

/// A parsed document.
#[derive(Debug)]
pub struct FeedDocument {
    pub format: &'static str,
    pub title: Option<String>,
    pub items: Vec<FeedItem>,
    pub validators: Validators,
}

/// What a fetch brought.
#[derive(Debug)]
pub enum Fetched {
    NotModified,
    Document(FeedDocument),
}

/// GETs `url` (with `validators` when given) and parses the answer.
pub async fn fetch(
    settings: &Settings,
    url: &str,
    validators: &Validators,
) -> Result<Fetched, FeedError> {
    let max_bytes = settings.news_max_feed_mb.max(1) * 1024 * 1024;
    let (outbound, url) = Outbound::for_host_feature(settings, url, None, FETCH_TIMEOUT, max_bytes)
        .map_err(FeedError::Refused)?;
    let mut headers = vec![(
        "Accept",
        "application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, */*;q=0.8",
    )];
    if let Some(etag) = &validators.etag {
        headers.push(("If-None-Match", etag));
    }
    if let Some(modified) = &validators.last_modified {
        headers.push(("If-Modified-Since", modified));
    }
    let answer = outbound
        .host_request("news-feeds", "GET", &url, &headers, vec![])
        .await
        .map_err(|e| FeedError::Fetch(describe(&e)))?;
    if answer.status == 304 {
        return Ok(Fetched::NotModified);
    }
    if !(200..300).contains(&answer.status) {
        return Err(FeedError::Status(answer.status));
    }
    let header = |name: &str| {
        answer
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.clone())
    };
    let mut document = parse(&answer.body)?;
    document.validators = Validators {
        etag: header("etag"),
        last_modified: header("last-modified"),
    };
    Ok(Fetched::Document(document))
}

/// Reads an RSS, Atom or JSON Feed document.
pub fn parse(body: &[u8]) -> Result<FeedDocument, FeedError> {
    // No generated ids: an entry without a guid is keyed by its link, else
    // its title and date, below.
    let parser = feed_rs::parser::Builder::new()
        .id_generator(|_, _, _| String::new())
        .build();
    let feed = parser
        .parse(body)
        .map_err(|e| FeedError::NotAFeed(e.to_string()))?;
    let format = match feed.feed_type {
        feed_rs::model::FeedType::Atom => "atom",
        feed_rs::model::FeedType::JSON => "json",
        feed_rs::model::FeedType::RSS0
        | feed_rs::model::FeedType::RSS1
        | feed_rs::model::FeedType::RSS2 => "rss",
    };
    let items = feed
        .entries
        .into_iter()
        .take(MAX_ITEMS)
        .filter_map(|entry| {
            let title = entry
                .title
                .map(|t| plain_text(&t.content))
                .filter(|t| !t.is_empty())?;
            let link = entry.links.first().map(|l| l.href.clone());
            let published_at = entry
                .published
                .or(entry.updated)
                .map(|at| at.timestamp_millis());
            let summary = entry
                .summary
                .map(|s| s.content)
                .or_else(|| entry.content.and_then(|c| c.body))
                .map(|s| plain_text(&s))
                .unwrap_or_default();
            let dedupe_key = if !entry.id.trim().is_empty() {
                format!("id:{}", entry.id.trim())
            } else if let Some(link) = &link {
                format!("link:{link}")
            } else {
                format!("title:{}|{}", title, published_at.unwrap_or_default())
            };
            Some(FeedItem {
                dedupe_key,
                title,
                link,
                summary: summary.chars().take(MAX_SUMMARY_CHARS).collect(),
                published_at,
            })
        })
        .collect();
    Ok(FeedDocument {
        format,
        title: feed.title.map(|t| plain_text(&t.content)),
        items,
        validators: Validators::default(),
    })
}

/// Text without markup: tags dropped (a block element's end keeps the
/// words apart), the common entities decoded, whitespace collapsed. Feed
/// summaries are HTML fragments; the service shows and classifies their
/// text.
pub fn plain_text(html: &str) -> String {
    const BLOCKS: &[&str] = &[
        "p",
        "br",
        "div",
        "li",
        "ul",
        "ol",
        "tr",
        "td",
        "th",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "blockquote",
        "pre",
        "hr",
        "table",
    ];
    let mut text = String::with_capacity(html.len());
    let mut tag: Option<String> = None;
    for c in html.chars() {
        match (&mut tag, c) {
            (None, '<') => tag = Some(String::new()),
            (Some(name), '>') => {
                let name = name
                    .trim_start_matches('/')
                    .split(|c: char| c.is_whitespace() || c == '/')
                    .next()
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                if BLOCKS.contains(&name.as_str()) {
                    text.push(' ');
                }
                tag = None;
            }
            (Some(name), c) => name.push(c),
            (None, c) => text.push(c),
        }
    }
    let decoded = text
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const RSS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Example security news</title>
<link>https://news.example/</link><description>d</description>
<item><title>Chrome zero-day CVE-2023-2033 exploited</title>
<link>https://news.example/a</link><guid isPermaLink="false">a-1</guid>
<description>&lt;p&gt;Google fixed &lt;b&gt;CVE-2023-2033&lt;/b&gt;.&lt;/p&gt;</description>
<pubDate>Fri, 14 Apr 2023 20:00:00 GMT</pubDate></item>
<item><title>No guid here</title><link>https://news.example/b</link></item>
<item><title>Neither guid nor link</title></item>
</channel></rss>"#;

    #[test]
    fn rss_items_are_keyed_by_guid_then_link_then_title() {
        let document = parse(RSS.as_bytes()).unwrap();
        assert_eq!(document.format, "rss");
        assert_eq!(document.title.as_deref(), Some("Example security news"));
        let keys: Vec<&str> = document
            .items
            .iter()
            .map(|i| i.dedupe_key.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "id:a-1",
                "link:https://news.example/b",
                "title:Neither guid nor link|0"
            ]
        );
        assert_eq!(document.items[0].summary, "Google fixed CVE-2023-2033.");
        assert_eq!(document.items[0].published_at, Some(1_681_502_400_000));
    }

    #[test]
    fn html_and_garbage_are_not_feeds() {
        assert!(matches!(
            parse(b"<html><body>hello</body></html>"),
            Err(FeedError::NotAFeed(_))
        ));
        assert!(matches!(
            parse(b"not xml at all"),
            Err(FeedError::NotAFeed(_))
        ));
    }

    #[test]
    fn atom_and_json_feeds_are_read_too() {
        let atom = r#"<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom">
<title>Vendor</title><id>urn:v</id><updated>2026-11-22T09:30:00Z</updated>
<entry><title>Patch for CVE-2024-1</title><id>urn:e:1</id><updated>2026-11-22T09:30:00Z</updated>
<summary type="html">&lt;p&gt;Fixed.&lt;/p&gt;</summary></entry></feed>"#;
        let document = parse(atom.as_bytes()).unwrap();
        assert_eq!(document.format, "atom");
        assert_eq!(document.items[0].dedupe_key, "id:urn:e:1");
        assert_eq!(document.items[0].summary, "Fixed.");
        let json = r#"{"version": "https://jsonfeed.org/version/1.1", "title": "JSON news",
            "items": [{"id": "j-1", "url": "https://news.example/j-1", "title": "Breach at Example",
                       "content_text": "Records exposed.", "date_published": "2026-11-20T08:00:00Z"}]}"#;
        let document = parse(json.as_bytes()).unwrap();
        assert_eq!(document.format, "json");
        assert_eq!(document.items[0].dedupe_key, "id:j-1");
        assert_eq!(document.items[0].title, "Breach at Example");
        assert_eq!(document.items[0].summary, "Records exposed.");
        assert_eq!(
            document.items[0].link.as_deref(),
            Some("https://news.example/j-1")
        );
    }

    #[test]
    fn markup_is_dropped_and_blocks_keep_words_apart() {
        assert_eq!(
            plain_text("<p>One <b>bold</b>, &amp; two</p><p>Three<br/>four</p>"),
            "One bold, & two Three four"
        );
    }
}
