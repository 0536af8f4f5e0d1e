//! A partner's config serving its customers: one RMM or PSA for the whole
//! MSP, each customer with its own scope of it.
//!
//! A share is a row in the customer's `integration_configs` that names the
//! partner and holds only the customer's scope (`scope_client_ids`,
//! `scope_group_ids`, a PSA company id ...); `storage::config` lays it over
//! the partner's own config at each use, so the customer's syncs, views and
//! actions run unchanged with the partner's connector and secrets, while
//! the secrets are stored once, in the partner's row. A customer with its
//! own config for an area keeps it; saving one replaces a share.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::storage::{self, ShareSaved};
use super::{areas, config, sync_kind};
use cairn_core::db::to_rfc3339;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path};
use cairn_core::ids::TenantId;
use cairn_platform::app::AppState;
use cairn_platform::partner::PartnerCaller;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_shares))
        .routes(routes!(get_share, put_share, delete_share))
        .routes(routes!(sync_shares))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ShareRequest {
    /// Settings laid over the partner's for this customer, e.g.
    /// `{"scope_client_ids": ["17"]}` for rmm. Secret fields are refused.
    #[schema(value_type = Object)]
    scope: Map<String, Value>,
}

#[derive(Serialize, ToSchema)]
pub struct ShareView {
    customer_id: String,
    area: String,
    /// The partner's connector for the area.
    connector: Option<String>,
    #[schema(value_type = Object)]
    scope: Value,
    updated_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct PartnerShares {
    area: String,
    /// Whether the partner has its own config for the area (shares serve
    /// nothing without it).
    partner_configured: bool,
    connector: Option<String>,
    shares: Vec<ShareView>,
}

fn known_area(state: &AppState, area: &str) -> ApiResult<()> {
    if state.plugins().area_connectors(area).is_empty() {
        return Err(ApiError::NotFound("integration"));
    }
    Ok(())
}

/// The partner's own config for `area`, which shares lay scopes over.
async fn partner_config(
    state: &AppState,
    partner: &PartnerCaller,
    area: &str,
) -> ApiResult<Option<storage::StoredConfig>> {
    Ok(
        storage::config(&state.db, &state.secrets, &partner.partner, area)
            .await?
            .filter(|c| c.shared_from.is_none()),
    )
}

fn share_view(area: &str, connector: Option<&str>, share: storage::Share) -> ShareView {
    ShareView {
        customer_id: share.customer,
        area: area.to_string(),
        connector: connector.map(String::from),
        scope: share.scope,
        updated_at: to_rfc3339(share.updated_at),
    }
}

/// The customers the partner's config for an area serves, with each one's
/// scope.
#[utoipa::path(get, path = "/integrations/{area}", tag = "partner",
    params(("area" = String, Path)),
    responses((status = 200, body = PartnerShares), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn list_shares(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(area): Path<String>,
) -> ApiResult<Json<PartnerShares>> {
    known_area(&state, &area)?;
    let own = partner_config(&state, &partner, &area).await?;
    let connector = own.as_ref().and_then(|c| c.connector.clone());
    // Only current, reached customers: a removed customer's share no
    // longer serves it.
    let customers = partner.customer_ids(&state.db).await?;
    let shares = storage::shares(&state.db, &partner.partner, &area)
        .await?
        .into_iter()
        .filter(|s| customers.contains(&s.customer))
        .map(|s| share_view(&area, connector.as_deref(), s))
        .collect();
    Ok(Json(PartnerShares {
        area,
        partner_configured: own.is_some(),
        connector,
        shares,
    }))
}

async fn find_share(
    state: &AppState,
    partner: &PartnerCaller,
    customer_id: &str,
    area: &str,
) -> ApiResult<storage::Share> {
    storage::shares(&state.db, &partner.partner, area)
        .await?
        .into_iter()
        .find(|s| s.customer == customer_id)
        .ok_or(ApiError::NotFound("share"))
}

/// A customer's share of the partner's config for an area.
#[utoipa::path(get, path = "/customers/{customer_id}/integrations/{area}", tag = "partner",
    params(("customer_id" = String, Path), ("area" = String, Path)),
    responses((status = 200, body = ShareView), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn get_share(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path((customer_id, area)): Path<(String, String)>,
) -> ApiResult<Json<ShareView>> {
    partner.customer(&state.db, &customer_id).await?;
    known_area(&state, &area)?;
    let own = partner_config(&state, &partner, &area).await?;
    let share = find_share(&state, &partner, &customer_id, &area).await?;
    Ok(Json(share_view(
        &area,
        own.as_ref().and_then(|c| c.connector.as_deref()),
        share,
    )))
}

/// Serve a customer from the partner's config for an area, with the
/// customer's scope (partner admin). The customer's syncs then fill its
/// tenant with only what its scope selects; the secrets stay in the
/// partner's config and are never shown to the customer.
#[utoipa::path(put, path = "/customers/{customer_id}/integrations/{area}", tag = "partner",
    params(("customer_id" = String, Path), ("area" = String, Path)), request_body = ShareRequest,
    responses(
        (status = 200, body = ShareView),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The partner has no config for the area, or the customer has its own"),
        (status = 422, body = ErrorBody),
    ))]
async fn put_share(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path((customer_id, area)): Path<(String, String)>,
    Json(body): Json<ShareRequest>,
) -> ApiResult<Json<ShareView>> {
    partner.customer(&state.db, &customer_id).await?;
    partner.require_admin()?;
    known_area(&state, &area)?;
    let own = partner_config(&state, &partner, &area).await?.ok_or_else(|| {
        ApiError::Conflict(format!(
            "configure {area} for the partner first (PUT /api/v1/{area}/config); shares use its connector and secrets"
        ))
    })?;
    let connector = areas::resolve(&state.plugins(), &area, own.connector.as_deref())?;
    if let Some(field) = body
        .scope
        .keys()
        .find(|k| connector.descriptor.secret_fields.contains(k) || k.as_str() == "connector")
    {
        return Err(ApiError::validation(
            &format!("scope.{field}"),
            "a share cannot set a secret or the connector; they are the partner's",
        ));
    }
    let mut merged = own.full();
    if let Some(target) = merged.as_object_mut() {
        for (k, v) in &body.scope {
            target.insert(k.clone(), v.clone());
        }
    }
    config::check_schema_masked(&connector.descriptor.config_schema, &merged, &own.secrets)?;
    let customer = TenantId(customer_id.clone());
    let scope = Value::Object(body.scope);
    match storage::save_share(
        &state.db,
        &state.secrets,
        &customer,
        &area,
        &partner.partner,
        &connector.descriptor.id,
        &scope,
    )
    .await?
    {
        ShareSaved::OwnConfig => Err(ApiError::Conflict(format!(
            "the customer has its own {area} config; it keeps it"
        ))),
        ShareSaved::Saved(at) => Ok(Json(ShareView {
            customer_id,
            area,
            connector: Some(connector.descriptor.id.clone()),
            scope,
            updated_at: to_rfc3339(at),
        })),
    }
}

/// Stop serving a customer from the partner's config (partner admin): the
/// share and what its syncs brought in are removed, as when a customer
/// removes a config of its own.
#[utoipa::path(delete, path = "/customers/{customer_id}/integrations/{area}", tag = "partner",
    params(("customer_id" = String, Path), ("area" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_share(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path((customer_id, area)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    partner.customer(&state.db, &customer_id).await?;
    partner.require_admin()?;
    known_area(&state, &area)?;
    find_share(&state, &partner, &customer_id, &area).await?;
    let customer = TenantId(customer_id);
    super::cancel_area_jobs(&state.db, &customer, &area).await?;
    storage::delete_config(&state.db, &customer, &area).await?;
    cairn_inventory::rollup::request(&state.db, &customer, "partner share removed").await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Serialize, ToSchema)]
pub struct ShareSync {
    customer_id: String,
    job_id: String,
    /// False when a sync was already queued for the customer.
    created: bool,
}

/// Sync every customer the partner's config for an area serves (partner
/// admin): one sync job per customer, each reading only its scope.
#[utoipa::path(post, path = "/integrations/{area}/sync", tag = "partner",
    params(("area" = String, Path)),
    responses(
        (status = 202, body = Vec<ShareSync>),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The partner has no config for the area"),
    ))]
async fn sync_shares(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(area): Path<String>,
) -> ApiResult<(StatusCode, Json<Vec<ShareSync>>)> {
    partner.require_admin()?;
    known_area(&state, &area)?;
    if partner_config(&state, &partner, &area).await?.is_none() {
        return Err(ApiError::Conflict(format!(
            "the partner has no {area} config"
        )));
    }
    let customers = partner.customer_ids(&state.db).await?;
    let mut started = vec![];
    for share in storage::shares(&state.db, &partner.partner, &area)
        .await?
        .into_iter()
        .filter(|s| customers.contains(&s.customer))
    {
        let enqueued = state
            .jobs
            .enqueue(
                &TenantId(share.customer.clone()),
                &sync_kind(&area),
                &serde_json::json!({}),
            )
            .await?;
        started.push(ShareSync {
            customer_id: share.customer,
            job_id: enqueued.job_id,
            created: enqueued.created,
        });
    }
    Ok((StatusCode::ACCEPTED, Json(started)))
}
