//! The security feeds `POST /news-feeds/feeds/seed` adds: government
//! advisories, vendor response centers and the news sites MSP analysts
//! read. Seeding does not fetch them; the next refresh does.

/// (title, URL) of each default feed.
pub const DEFAULT_FEEDS: &[(&str, &str)] = &[
    (
        "CISA Cybersecurity Advisories",
        "https://www.cisa.gov/cybersecurity-advisories/all.xml",
    ),
    (
        "Microsoft Security Response Center",
        "https://api.msrc.microsoft.com/update-guide/rss",
    ),
    (
        "SANS Internet Storm Center",
        "https://isc.sans.edu/rssfeed_full.xml",
    ),
    ("BleepingComputer", "https://www.bleepingcomputer.com/feed/"),
    (
        "The Hacker News",
        "https://feeds.feedburner.com/TheHackersNews",
    ),
    ("Krebs on Security", "https://krebsonsecurity.com/feed/"),
    ("SecurityWeek", "https://www.securityweek.com/feed/"),
    ("Dark Reading", "https://www.darkreading.com/rss.xml"),
    (
        "Cisco Talos Intelligence",
        "https://blog.talosintelligence.com/rss/",
    ),
    (
        "UK National Cyber Security Centre",
        "https://www.ncsc.gov.uk/api/1/services/v1/all-rss-feed.xml",
    ),
];
