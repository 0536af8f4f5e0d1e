//! `/api/v1/news-feeds`: feeds (admins add, remove and seed them), their
//! refresh, classification, and the items with per-user read marks and
//! assignment.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::classify::{TenantNames, CATEGORIES, SEVERITIES};
use super::defaults::DEFAULT_FEEDS;
use super::fetch::{self, FeedError, Fetched, Validators};
use super::refresh::{self, CLASSIFY_KIND, MAX_BATCH, REFRESH_KIND};
use super::storage::{self, FeedView, FetchOutcome, ItemFilter, ItemStats, ItemView};
use crate::language_model::LanguageModel;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, OptionalJson, Path, Query};
use cairn_core::ids::TenantId;
use cairn_inventory::search::{page_bounds, Page};
use cairn_platform::app::AppState;
use cairn_platform::auth::{AdminCaller, Caller};
use cairn_vulnerabilities::reference::research::cve_id;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_feeds, add_feed))
        .routes(routes!(delete_feed))
        .routes(routes!(seed_feeds))
        .routes(routes!(refresh_feeds))
        .routes(routes!(classify_batch))
        .routes(routes!(list_items))
        .routes(routes!(item_stats))
        .routes(routes!(mark_read))
        .routes(routes!(assign_item))
        .routes(routes!(classify_item))
}

/// The tenant's feeds with their item counts and last fetch.
#[utoipa::path(get, path = "/feeds", tag = "news-feeds",
    responses((status = 200, body = Vec<FeedView>)))]
async fn list_feeds(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<FeedView>>> {
    Ok(Json(storage::feeds(&state.db, &caller.tenant_id).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewFeed {
    /// An http(s) URL of an RSS 2.0, Atom or JSON Feed document; https
    /// unless the operator grants plain http to its host, never a private
    /// address unless the operator allows it.
    url: String,
    /// Defaults to the feed's own title.
    title: Option<String>,
}

/// Add a feed. The URL is fetched once, through the outbound rules, and
/// must answer with a feed; its current items are stored and classified.
#[utoipa::path(post, path = "/feeds", tag = "news-feeds",
    request_body = NewFeed,
    responses((status = 201, body = FeedView),
              (status = 403, body = ErrorBody, description = "Not an admin"),
              (status = 409, body = ErrorBody, description = "The tenant has this feed already"),
              (status = 422, body = ErrorBody, description = "`url` is refused, unreachable, too large or not a feed")))]
async fn add_feed(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Json(request): Json<NewFeed>,
) -> ApiResult<(StatusCode, Json<FeedView>)> {
    let tenant = &caller.tenant_id;
    let url = request.url.trim();
    let parsed =
        url::Url::parse(url).map_err(|e| ApiError::validation("url", format!("not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ApiError::validation("url", "must be an http(s) URL"));
    }
    let document = match fetch::fetch(&state.settings, url, &Validators::default()).await {
        Ok(Fetched::Document(document)) => document,
        Ok(Fetched::NotModified) => {
            return Err(ApiError::validation("url", "answered 304 to a plain GET"))
        }
        Err(err @ FeedError::Refused(_)) => {
            return Err(ApiError::validation("url", format!("refused: {err}")))
        }
        Err(err) => return Err(ApiError::validation("url", err.to_string())),
    };
    let title = request
        .title
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from)
        .or_else(|| document.title.clone().filter(|t| !t.is_empty()))
        .unwrap_or_else(|| parsed.host_str().unwrap_or(url).to_string());
    let Some(id) = storage::add_feed(&state.db, tenant, parsed.as_str(), &title, false).await?
    else {
        return Err(ApiError::Conflict(format!(
            "this tenant has {parsed} already"
        )));
    };
    let outcome = FetchOutcome::Read {
        items: &document.items,
        validators: &document.validators,
        format: document.format,
    };
    let added = storage::record_fetch(&state.db, tenant, &id, outcome).await?;
    if !added.is_empty() {
        state
            .jobs
            .enqueue(
                tenant,
                CLASSIFY_KIND,
                &serde_json::json!({"limit": MAX_BATCH}),
            )
            .await?;
    }
    let feed = storage::feed(&state.db, tenant, &id)
        .await?
        .ok_or(ApiError::NotFound("feed"))?;
    Ok((StatusCode::CREATED, Json(feed)))
}

/// Remove a feed and its items.
#[utoipa::path(delete, path = "/feeds/{feed_id}", tag = "news-feeds",
    params(("feed_id" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorBody, description = "Not an admin"),
              (status = 404, body = ErrorBody)))]
async fn delete_feed(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(feed_id): Path<String>,
) -> ApiResult<StatusCode> {
    if storage::delete_feed(&state.db, &caller.tenant_id, &feed_id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("feed"))
    }
}

#[derive(Serialize, ToSchema)]
pub struct Seeded {
    /// Default feeds the tenant did not have, now added.
    added: usize,
    /// The tenant's feeds after seeding.
    feeds: Vec<FeedView>,
}

/// Add the default security feeds (CISA, Microsoft's response center,
/// SANS ISC, BleepingComputer, The Hacker News, Krebs on Security,
/// SecurityWeek, Dark Reading, Cisco Talos, the UK NCSC) the tenant does
/// not have; repeating it adds nothing. They are fetched by the next
/// refresh.
#[utoipa::path(post, path = "/feeds/seed", tag = "news-feeds",
    responses((status = 200, body = Seeded), (status = 403, body = ErrorBody, description = "Not an admin")))]
async fn seed_feeds(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
) -> ApiResult<Json<Seeded>> {
    let tenant = &caller.tenant_id;
    let mut added = 0;
    for (title, url) in DEFAULT_FEEDS {
        if storage::add_feed(&state.db, tenant, url, title, true)
            .await?
            .is_some()
        {
            added += 1;
        }
    }
    let feeds = storage::feeds(&state.db, tenant).await?;
    Ok(Json(Seeded { added, feeds }))
}

#[derive(Serialize, ToSchema)]
pub struct JobQueued {
    /// Follow it at `/api/v1/jobs/{job_id}`.
    job_id: String,
    /// False when a job of this kind was already waiting or running; its
    /// id is returned.
    created: bool,
}

async fn queue(
    state: &AppState,
    tenant: &TenantId,
    kind: &str,
    args: serde_json::Value,
) -> ApiResult<Json<JobQueued>> {
    let queued = state.jobs.enqueue(tenant, kind, &args).await?;
    Ok(Json(JobQueued {
        job_id: queued.job_id,
        created: queued.created,
    }))
}

/// Refresh every feed of the tenant now (a durable job): conditional GET
/// with each feed's ETag and Last-Modified, new items stored once
/// (deduplicated by guid, else link, else title and date), then
/// classified. A feed that fails records its error and the others go on.
/// Feeds are also refreshed every `news_refresh_minutes`.
#[utoipa::path(post, path = "/feeds/refresh", tag = "news-feeds",
    responses((status = 202, body = JobQueued)))]
async fn refresh_feeds(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<(StatusCode, Json<JobQueued>)> {
    let queued = queue(
        &state,
        &caller.tenant_id,
        REFRESH_KIND,
        serde_json::json!({}),
    )
    .await?;
    Ok((StatusCode::ACCEPTED, queued))
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ClassifyBatch {
    /// Classify these items again (at most 200) along with those never
    /// classified.
    item_ids: Option<Vec<String>>,
    /// Most items the job takes, newest first (default and at most 200).
    #[schema(minimum = 1, maximum = 200)]
    limit: Option<i64>,
}

/// Classify a batch of items (a durable job): by the configured model
/// endpoint when it answers well, else by the rules; each item records
/// which (`classified_by`) and why the model was not used.
#[utoipa::path(post, path = "/classify", tag = "news-feeds",
    request_body(content = Option<ClassifyBatch>, description = "Optional"),
    responses((status = 202, body = JobQueued),
              (status = 404, body = ErrorBody, description = "An item id is not the tenant's"),
              (status = 422, body = ErrorBody)))]
async fn classify_batch(
    State(state): State<AppState>,
    caller: Caller,
    OptionalJson(request): OptionalJson<ClassifyBatch>,
) -> ApiResult<(StatusCode, Json<JobQueued>)> {
    let tenant = &caller.tenant_id;
    if let Some(limit) = request.limit {
        if !(1..=MAX_BATCH).contains(&limit) {
            return Err(ApiError::validation("limit", "must be between 1 and 200"));
        }
    }
    let args = serde_json::json!({"limit": request.limit.unwrap_or(MAX_BATCH)});
    if let Some(ids) = request.item_ids {
        if ids.is_empty() || ids.len() > MAX_BATCH as usize {
            return Err(ApiError::validation("item_ids", "give 1 to 200 item ids"));
        }
        if !storage::request_reclassification(&state.db, tenant, &ids).await? {
            return Err(ApiError::NotFound("news item"));
        }
    }
    let queued = queue(&state, tenant, CLASSIFY_KIND, args).await?;
    Ok((StatusCode::ACCEPTED, queued))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ItemQuery {
    feed_id: Option<String>,
    /// `vulnerability`, `exploit_in_the_wild`, `breach`, `malware`,
    /// `patch_release`, `advisory` or `other`.
    category: Option<String>,
    /// `critical`, `high`, `medium` or `low`.
    severity: Option<String>,
    /// Read (or not) by the caller.
    read: Option<bool>,
    /// Assigned to anyone (or to no one).
    assigned: Option<bool>,
    /// Assigned to this member (a user id, or `me`).
    assigned_to: Option<String>,
    /// Naming the tenant's software or CVEs it has open findings of.
    relevant: Option<bool>,
    /// Naming this CVE.
    cve: Option<String>,
    /// Text in the title or summary, ignoring case.
    search: Option<String>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    /// Default 50, at most 500.
    #[param(minimum = 1)]
    limit: Option<i64>,
}

fn one_of(field: &str, value: Option<String>, allowed: &[&str]) -> ApiResult<Option<String>> {
    match value {
        Some(v) if !allowed.contains(&v.as_str()) => Err(ApiError::validation(
            field,
            format!("must be one of {}", allowed.join(", ")),
        )),
        other => Ok(other),
    }
}

/// The tenant's items, newest first, as the caller sees them (`read` is
/// theirs).
#[utoipa::path(get, path = "/items", tag = "news-feeds",
    params(ItemQuery),
    responses((status = 200, body = Page<ItemView>), (status = 422, body = ErrorBody)))]
async fn list_items(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<ItemQuery>,
) -> ApiResult<Json<Page<ItemView>>> {
    let (skip, limit) = page_bounds(query.skip, query.limit)?;
    let cve = match query.cve {
        Some(text) => Some(
            cve_id(&text)
                .ok_or_else(|| ApiError::validation("cve", "not a CVE id (CVE-YYYY-NNNN)"))?,
        ),
        None => None,
    };
    let filter = ItemFilter {
        feed_id: query.feed_id,
        category: one_of("category", query.category, CATEGORIES)?,
        severity: one_of("severity", query.severity, SEVERITIES)?,
        read: query.read,
        assigned: query.assigned,
        assigned_to: query.assigned_to.map(|who| {
            if who == "me" {
                caller.user_id.as_str().to_string()
            } else {
                who
            }
        }),
        relevant: query.relevant,
        cve_id: cve,
        search: query.search.filter(|s| !s.trim().is_empty()),
    };
    let (items, total) = storage::items(
        &state.db,
        &caller.tenant_id,
        caller.user_id.as_str(),
        &filter,
        skip,
        limit,
    )
    .await?;
    Ok(Json(Page::new(items, total, (skip, limit))))
}

/// Counts by category and severity, and the caller's unread, relevant,
/// unclassified and assigned items.
#[utoipa::path(get, path = "/items/stats", tag = "news-feeds",
    responses((status = 200, body = ItemStats)))]
async fn item_stats(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<ItemStats>> {
    Ok(Json(
        storage::stats(&state.db, &caller.tenant_id, caller.user_id.as_str()).await?,
    ))
}

async fn item_view(state: &AppState, caller: &Caller, item_id: &str) -> ApiResult<Json<ItemView>> {
    storage::item(
        &state.db,
        &caller.tenant_id,
        caller.user_id.as_str(),
        item_id,
    )
    .await?
    .map(Json)
    .ok_or(ApiError::NotFound("news item"))
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ReadMark {
    /// False marks the item unread again. Default true.
    read: Option<bool>,
}

/// Mark an item read (or unread) for the caller.
#[utoipa::path(put, path = "/items/{item_id}/read", tag = "news-feeds",
    params(("item_id" = String, Path)),
    request_body(content = Option<ReadMark>, description = "Optional"),
    responses((status = 200, body = ItemView), (status = 404, body = ErrorBody)))]
async fn mark_read(
    State(state): State<AppState>,
    caller: Caller,
    Path(item_id): Path<String>,
    OptionalJson(mark): OptionalJson<ReadMark>,
) -> ApiResult<Json<ItemView>> {
    let read = mark.read.unwrap_or(true);
    let tenant = &caller.tenant_id;
    if !storage::mark_read(&state.db, tenant, caller.user_id.as_str(), &item_id, read).await? {
        return Err(ApiError::NotFound("news item"));
    }
    item_view(&state, &caller, &item_id).await
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Assignment {
    /// A member of the tenant (user id), `me`, or null to clear.
    user_id: Option<String>,
}

/// Assign an item to a member of the tenant, or clear the assignment.
#[utoipa::path(put, path = "/items/{item_id}/assign", tag = "news-feeds",
    params(("item_id" = String, Path)),
    request_body = Assignment,
    responses((status = 200, body = ItemView), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody, description = "`user_id` is not a member of the tenant")))]
async fn assign_item(
    State(state): State<AppState>,
    caller: Caller,
    Path(item_id): Path<String>,
    Json(request): Json<Assignment>,
) -> ApiResult<Json<ItemView>> {
    let tenant = &caller.tenant_id;
    let member = match request.user_id.as_deref() {
        Some("me") => Some(caller.user_id.as_str().to_string()),
        Some(id) => {
            if !cairn_platform::tenancy::is_member(&state.db, tenant, id).await? {
                return Err(ApiError::validation(
                    "user_id",
                    "not a member of this tenant",
                ));
            }
            Some(id.to_string())
        }
        None => None,
    };
    if !storage::assign(&state.db, tenant, &item_id, member.as_deref()).await? {
        return Err(ApiError::NotFound("news item"));
    }
    item_view(&state, &caller, &item_id).await
}

/// Classify one item again now, by the model endpoint when configured
/// (falling back to the rules), and answer it.
#[utoipa::path(post, path = "/items/{item_id}/classify", tag = "news-feeds",
    params(("item_id" = String, Path)),
    responses((status = 200, body = ItemView), (status = 404, body = ErrorBody)))]
async fn classify_item(
    State(state): State<AppState>,
    caller: Caller,
    Path(item_id): Path<String>,
) -> ApiResult<Json<ItemView>> {
    let tenant = &caller.tenant_id;
    let Some(item) = storage::item_to_classify(&state.db, tenant, &item_id).await? else {
        return Err(ApiError::NotFound("news item"));
    };
    let model = LanguageModel::from_settings(&state.settings);
    let names = TenantNames::load(&state.db, tenant).await?;
    refresh::classify_one(&state.db, model.as_ref(), tenant, &names, &item).await?;
    item_view(&state, &caller, &item_id).await
}
