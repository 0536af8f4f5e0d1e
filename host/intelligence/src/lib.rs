//! Intelligence: what the world knows and how it reaches a tenant. News
//! feeds, advisories e-mailed to the people who run affected software,
//! research on a CVE or a product, threat intel (KEV, EPSS, exploits),
//! subscriptions to vendors and products, and the optional language model
//! that classifies and drafts.
//!
//! - Owns `news_feeds`, `news_items`, `news_item_cves`, `news_item_reads`,
//!   `advisories`, `advisory_recipients`, `research_history`,
//!   `version_rules`, `subscriptions`, `subscription_cves`,
//!   `threat_intel_settings` and `threat_intel_answers`.
//! - Faces: each module's `router()`; the job handlers of news,
//!   subscriptions and advisories (`register`) and their schedules.
//! - Calls: the platform, the inventory, the integrations, the
//!   vulnerabilities (the CVE store, findings, threat data) and the
//!   workflow's tags, through their public functions; every outbound
//!   request through `cairn_plugins::outbound`.

pub mod advisories;
pub mod language_model;
pub mod news;
pub mod research;
pub mod subscriptions;
pub mod threat_intel;
