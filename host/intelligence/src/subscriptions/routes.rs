//! `/api/v1/subscriptions`: a tenant's vendor and product subscriptions,
//! their syncs from NVD, the activity they bring, and the searches that
//! help choose them. Any member may subscribe.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::storage::{self, NewSubscription, SubscriptionView, PRODUCT, VENDOR};
use super::sync::SYNC_KIND;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_core::ids::TenantId;
use cairn_inventory::search::{page_bounds, Page};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_vulnerabilities::findings::views::open_device_counts;
use cairn_vulnerabilities::reference::records::cpe_name;
use cairn_vulnerabilities::reference::sources::{self, NvdSearch, SourceConfig, SourceError};
use cairn_vulnerabilities::reference::store::{self, CpeProduct, CveHit};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_subscriptions, subscribe))
        .routes(routes!(unsubscribe_by_name))
        .routes(routes!(unsubscribe))
        .routes(routes!(check_subscription))
        .routes(routes!(sync_subscriptions))
        .routes(routes!(search_cves))
        .routes(routes!(subscription_activity))
        .routes(routes!(search_cpe))
}

const MAX_NAME: usize = 200;

fn sub_type(text: &str) -> Result<&'static str, ApiError> {
    match text {
        VENDOR => Ok(VENDOR),
        PRODUCT => Ok(PRODUCT),
        _ => Err(ApiError::validation(
            "sub_type",
            "must be vendor or product",
        )),
    }
}

/// A vendor or product name, trimmed, and its CPE form.
fn named(name: &str, field: &str) -> Result<(String, String), ApiError> {
    let name = name.trim();
    Ok((name.to_string(), cpe_name(name, field)?))
}

/// The tenant's subscriptions with their CVE counts and last sync.
#[utoipa::path(get, path = "/", tag = "subscriptions",
    responses((status = 200, body = Vec<SubscriptionView>)))]
async fn list_subscriptions(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<SubscriptionView>>> {
    Ok(Json(
        storage::subscriptions(&state.db, &caller.tenant_id).await?,
    ))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSubscriptionRequest {
    /// `vendor` or `product`.
    sub_type: String,
    /// The vendor or product (`Zoom`, `zoom_workplace`); compared as the
    /// CVE store writes names (lower case, `_` for spaces, company
    /// suffixes dropped).
    name: String,
    /// A product's vendor, when known; it narrows the NVD search.
    vendor: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct Subscribed {
    subscription: SubscriptionView,
    /// The sync that pulls its CVEs: follow it at `/api/v1/jobs/{job_id}`.
    job_id: String,
}

async fn queue_sync(state: &AppState, tenant: &TenantId) -> ApiResult<String> {
    Ok(state
        .jobs
        .enqueue(tenant, SYNC_KIND, &serde_json::json!({}))
        .await?
        .job_id)
}

/// Subscribe to a vendor or a product, even one with no CVE yet, and pull
/// its CVEs from NVD's CVE API (a durable job): by CPE match string
/// (`virtualMatchString`) when the CPE dictionary knows the name, else by
/// keyword (`keywordSearch`). The CVEs are stored in the CVE store; later
/// syncs (`POST /subscriptions/sync`, and every `subscription_sync_hours`)
/// record which are new or changed.
#[utoipa::path(post, path = "/", tag = "subscriptions",
    request_body = NewSubscriptionRequest,
    responses((status = 201, body = Subscribed),
              (status = 409, body = ErrorBody, description = "Subscribed already"),
              (status = 422, body = ErrorBody)))]
async fn subscribe(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<NewSubscriptionRequest>,
) -> ApiResult<(StatusCode, Json<Subscribed>)> {
    let tenant = &caller.tenant_id;
    let kind = sub_type(&request.sub_type)?;
    let (name, key) = named(&request.name, "name")?;
    let vendor = match request.vendor.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(_) if kind == VENDOR => {
            return Err(ApiError::validation(
                "vendor",
                "only a product subscription names a vendor",
            ))
        }
        Some(vendor) => Some(named(vendor, "vendor")?.1),
    };
    let new = NewSubscription {
        sub_type: kind,
        name: &name,
        name_key: &key,
        vendor: vendor.as_deref(),
        by: caller.user_id.as_str(),
    };
    let id = storage::create(&state.db, tenant, &new)
        .await?
        .ok_or_else(|| ApiError::Conflict(format!("subscribed to the {kind} {key} already")))?;
    let job_id = queue_sync(&state, tenant).await?;
    let subscription = storage::subscription(&state.db, tenant, &id)
        .await?
        .ok_or(ApiError::NotFound("subscription"))?;
    Ok((
        StatusCode::CREATED,
        Json(Subscribed {
            subscription,
            job_id,
        }),
    ))
}

/// Unsubscribe by type and name (compared as subscribing compares them).
#[utoipa::path(delete, path = "/by-name/{sub_type}/{name}", tag = "subscriptions",
    params(("sub_type" = String, Path, description = "`vendor` or `product`"), ("name" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn unsubscribe_by_name(
    State(state): State<AppState>,
    caller: Caller,
    Path((kind, name)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let tenant = &caller.tenant_id;
    let kind = sub_type(&kind)?;
    let (_, key) = named(&name, "name")?;
    let found = storage::by_name(&state.db, tenant, kind, &key)
        .await?
        .ok_or(ApiError::NotFound("subscription"))?;
    storage::delete(&state.db, tenant, &found.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Unsubscribe by id.
#[utoipa::path(delete, path = "/{subscription_id}", tag = "subscriptions",
    params(("subscription_id" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
async fn unsubscribe(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    if storage::delete(&state.db, &caller.tenant_id, &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("subscription"))
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CheckParams {
    /// `vendor` or `product`.
    sub_type: String,
    name: String,
}

#[derive(Serialize, ToSchema)]
pub struct Check {
    subscribed: bool,
    subscription: Option<SubscriptionView>,
}

/// Whether the tenant is subscribed to a vendor or product.
#[utoipa::path(get, path = "/check", tag = "subscriptions",
    params(CheckParams),
    responses((status = 200, body = Check), (status = 422, body = ErrorBody)))]
async fn check_subscription(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<CheckParams>,
) -> ApiResult<Json<Check>> {
    let kind = sub_type(&params.sub_type)?;
    let (_, key) = named(&params.name, "name")?;
    let subscription = storage::by_name(&state.db, &caller.tenant_id, kind, &key).await?;
    Ok(Json(Check {
        subscribed: subscription.is_some(),
        subscription,
    }))
}

#[derive(Serialize, ToSchema)]
pub struct SyncQueued {
    /// Follow it at `/api/v1/jobs/{job_id}`.
    job_id: String,
    /// Subscriptions it syncs.
    subscriptions: u64,
}

/// Pull the latest CVEs of every subscription from NVD now (a durable
/// job; one subscription failing records its error and the others go on).
#[utoipa::path(post, path = "/sync", tag = "subscriptions",
    responses((status = 202, body = SyncQueued),
              (status = 404, body = ErrorBody, description = "The tenant has no subscription")))]
async fn sync_subscriptions(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<(StatusCode, Json<SyncQueued>)> {
    let tenant = &caller.tenant_id;
    let subscriptions = storage::request_sync(&state.db, tenant).await?;
    if subscriptions == 0 {
        return Err(ApiError::Missing("the tenant has no subscription".into()));
    }
    let job_id = queue_sync(&state, tenant).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(SyncQueued {
            job_id,
            subscriptions,
        }),
    ))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CveSearchParams {
    /// A CPE vendor (`zoom`).
    vendor: Option<String>,
    /// A CPE product, with `vendor` (`zoom_workplace`).
    product: Option<String>,
    /// Words the description must hold (NVD's `keywordSearch`), instead
    /// of vendor and product.
    keyword: Option<String>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    #[param(minimum = 1)]
    limit: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct SearchedCve {
    #[serde(flatten)]
    cve: CveHit,
    /// The tenant's devices with an open finding of it.
    device_count: i64,
}

/// Search NVD's CVE API for a vendor's or product's CVEs (or by keyword)
/// and save what it answers in the CVE store: one NVD page per request
/// (`skip` and `limit` are NVD's `startIndex` and `resultsPerPage`).
#[utoipa::path(get, path = "/cves/search", tag = "subscriptions",
    params(CveSearchParams),
    responses((status = 200, body = Page<SearchedCve>), (status = 422, body = ErrorBody),
              (status = 502, body = ErrorBody, description = "NVD could not be asked")))]
async fn search_cves(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<CveSearchParams>,
) -> ApiResult<Json<Page<SearchedCve>>> {
    let (skip, limit) = page_bounds(params.skip, params.limit)?;
    let given = |v: Option<String>| v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let search = match (
        given(params.vendor),
        given(params.product),
        given(params.keyword),
    ) {
        (Some(vendor), product, None) => NvdSearch::Cpe {
            vendor: named(&vendor, "vendor")?.1,
            product: product
                .map(|p| named(&p, "product"))
                .transpose()?
                .map(|p| p.1),
        },
        (None, None, Some(keyword)) if keyword.chars().count() <= MAX_NAME => {
            NvdSearch::Keyword(keyword)
        }
        (None, Some(_), None) => {
            return Err(ApiError::validation("vendor", "give it with product"))
        }
        _ => {
            return Err(ApiError::validation(
                "keyword",
                format!("give vendor (and product), or a keyword of at most {MAX_NAME} characters"),
            ))
        }
    };
    let config = SourceConfig::from_settings(&state.settings);
    let page = sources::nvd_search_page(&state.db, &config, &search, skip as u64, limit as u64)
        .await
        .map_err(|err| match err {
            SourceError::Db(err) => ApiError::from(err),
            other => ApiError::Upstream(format!("NVD: {other}")),
        })?;
    if page.written > 0 {
        cairn_vulnerabilities::request_rescans(&state.db).await?;
    }
    let ids: Vec<String> = page.cves.iter().map(|(id, _)| id.clone()).collect();
    let mut hits = store::cve_hits(&state.db, &ids).await?;
    let exposure = open_device_counts(&state.db, &caller.tenant_id, &ids).await?;
    let items = ids
        .iter()
        .filter_map(|id| hits.remove(id))
        .map(|cve| SearchedCve {
            device_count: exposure.get(&cve.cve_id).copied().unwrap_or(0),
            cve,
        })
        .collect();
    Ok(Json(Page::new(items, page.total as i64, (skip, limit))))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ActivityParams {
    /// How far back, in days (default 30, at most 365).
    #[param(minimum = 1, maximum = 365)]
    days: Option<i64>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    #[param(minimum = 1)]
    limit: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct ActivityView {
    /// `new` (appeared after the subscription's first sync) or `changed`
    /// (its record was modified since a sync saw it).
    event: &'static str,
    at: String,
    subscription_id: String,
    sub_type: String,
    subscription_name: String,
    #[serde(flatten)]
    cve: CveHit,
}

/// Recent activity of the tenant's subscriptions: CVEs new since a
/// subscription's first sync, and CVEs whose record changed, newest first.
#[utoipa::path(get, path = "/activity", tag = "subscriptions",
    params(ActivityParams),
    responses((status = 200, body = Page<ActivityView>), (status = 422, body = ErrorBody)))]
async fn subscription_activity(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<ActivityParams>,
) -> ApiResult<Json<Page<ActivityView>>> {
    let bounds = page_bounds(params.skip, params.limit)?;
    let days = params.days.unwrap_or(30);
    if !(1..=365).contains(&days) {
        return Err(ApiError::validation("days", "must be between 1 and 365"));
    }
    let since = cairn_core::db::now_ms() - days * 86_400_000;
    let (entries, total) = storage::activity(&state.db, &caller.tenant_id, since, bounds).await?;
    let ids: Vec<String> = entries.iter().map(|e| e.cve_id.clone()).collect();
    let hits = store::cve_hits(&state.db, &ids).await?;
    let items = entries
        .into_iter()
        .filter_map(|e| {
            Some(ActivityView {
                cve: hits.get(&e.cve_id)?.clone(),
                event: e.event,
                at: cairn_core::db::to_rfc3339(e.at),
                subscription_id: e.subscription_id,
                sub_type: e.sub_type,
                subscription_name: e.subscription_name,
            })
        })
        .collect();
    Ok(Json(Page::new(items, total, bounds)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CpeSearchParams {
    /// Part of a vendor, product or title (ignoring case; spaces match
    /// `_`), at least 2 characters.
    q: String,
    #[param(minimum = 0)]
    skip: Option<i64>,
    #[param(minimum = 1)]
    limit: Option<i64>,
}

/// Search the CPE dictionary (the products NVD configurations and loaded
/// dictionary files name), by vendor and product, a page at a time.
#[utoipa::path(get, path = "/cpe/search", tag = "subscriptions",
    params(CpeSearchParams),
    responses((status = 200, body = Page<CpeProduct>), (status = 422, body = ErrorBody)))]
async fn search_cpe(
    State(state): State<AppState>,
    _caller: Caller,
    Query(params): Query<CpeSearchParams>,
) -> ApiResult<Json<Page<CpeProduct>>> {
    let bounds = page_bounds(params.skip, params.limit)?;
    let q = params.q.trim();
    if q.chars().count() < 2 || q.chars().count() > MAX_NAME {
        return Err(ApiError::validation(
            "q",
            format!("must be 2 to {MAX_NAME} characters"),
        ));
    }
    let (items, total) = store::search_cpe_products(&state.db, q, bounds).await?;
    Ok(Json(Page::new(items, total, bounds)))
}
