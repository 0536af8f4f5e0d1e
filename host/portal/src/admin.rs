//! `/api/v1/portal`: what a tenant's admins use to run the portal: portal
//! clients, their keys, their invoices; and the payment provider's webhook.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::clients::{self, KeyView, MintedKey, PortalClientView};
use super::invoices::{self, AdminInvoice, InvoiceInput, InvoiceStatus, Reader};
use super::payments::{self, WebhookOutcome};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_core::http::paging;
use cairn_core::ids::TenantId;
use cairn_platform::app::AppState;
use cairn_platform::auth::AdminCaller;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_client, list_clients))
        .routes(routes!(link_customer))
        .routes(routes!(mint_key, list_keys))
        .routes(routes!(revoke_key))
        .routes(routes!(create_invoice))
        .routes(routes!(list_invoices))
        .routes(routes!(get_invoice, update_invoice))
        .routes(routes!(set_status))
        .routes(routes!(webhook))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewClient {
    /// The customer company's name, unique within the tenant.
    name: String,
}

/// Adds a portal client (a customer company of this tenant).
#[utoipa::path(post, path = "/clients", tag = "portal",
    request_body = NewClient,
    responses((status = 201, body = PortalClientView), (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn create_client(
    State(state): State<AppState>,
    caller: AdminCaller,
    Json(body): Json<NewClient>,
) -> ApiResult<(StatusCode, Json<PortalClientView>)> {
    let client = clients::create(&state.db, &caller.0.tenant_id, &body.name).await?;
    Ok((StatusCode::CREATED, Json(client)))
}

/// The tenant's portal clients.
#[utoipa::path(get, path = "/clients", tag = "portal",
    responses((status = 200, body = Vec<PortalClientView>), (status = 403, body = ErrorBody)))]
async fn list_clients(
    State(state): State<AppState>,
    caller: AdminCaller,
) -> ApiResult<Json<Vec<PortalClientView>>> {
    Ok(Json(clients::list(&state.db, &caller.0.tenant_id).await?))
}

#[derive(Deserialize, ToSchema)]
#[schema(as = PortalCustomerLink)]
#[serde(deny_unknown_fields)]
pub struct CustomerLink {
    /// One of this partner's customers; `null` unlinks.
    customer_id: Option<String>,
}

/// Links a portal client to one of the partner's customers, whose SLA
/// exceptions the client then decides through the portal API (admin or
/// owner); `null` unlinks.
#[utoipa::path(put, path = "/clients/{client_id}/customer", tag = "portal",
    params(("client_id" = String, Path)), request_body = CustomerLink,
    responses((status = 200, body = PortalClientView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn link_customer(
    State(state): State<AppState>,
    caller: AdminCaller,
    Path(client_id): Path<String>,
    Json(body): Json<CustomerLink>,
) -> ApiResult<Json<PortalClientView>> {
    let tenant = &caller.0.tenant_id;
    if let Some(customer) = &body.customer_id {
        let partner =
            cairn_platform::partner::partner_of(&state.db, &TenantId(customer.clone())).await?;
        if partner.as_ref() != Some(tenant) {
            return Err(ApiError::validation(
                "customer_id",
                "must be one of your customers",
            ));
        }
    }
    if !clients::set_customer(&state.db, tenant, &client_id, body.customer_id.as_deref()).await? {
        return Err(ApiError::NotFound("portal client"));
    }
    clients::get(&state.db, tenant, &client_id)
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound("portal client"))
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// What the key is for, e.g. "accounting export".
    label: Option<String>,
}

/// Mints an API key for the client. The key is in this answer only; it is
/// stored as a hash.
#[utoipa::path(post, path = "/clients/{client_id}/keys", tag = "portal",
    params(("client_id" = String, Path)), request_body = NewKey,
    responses((status = 201, body = MintedKey), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn mint_key(
    State(state): State<AppState>,
    caller: AdminCaller,
    Path(client_id): Path<String>,
    Json(body): Json<NewKey>,
) -> ApiResult<(StatusCode, Json<MintedKey>)> {
    let key = clients::mint_key(
        &state.db,
        &caller.0.tenant_id,
        &client_id,
        body.label.as_deref(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(key)))
}

/// The client's keys (prefixes only), with last use and revocation.
#[utoipa::path(get, path = "/clients/{client_id}/keys", tag = "portal",
    params(("client_id" = String, Path)),
    responses((status = 200, body = Vec<KeyView>), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn list_keys(
    State(state): State<AppState>,
    caller: AdminCaller,
    Path(client_id): Path<String>,
) -> ApiResult<Json<Vec<KeyView>>> {
    if !clients::exists(&state.db, &caller.0.tenant_id, &client_id).await? {
        return Err(ApiError::NotFound("portal client"));
    }
    Ok(Json(
        clients::list_keys(&state.db, &caller.0.tenant_id, &client_id).await?,
    ))
}

/// Revokes a key at once.
#[utoipa::path(delete, path = "/keys/{key_id}", tag = "portal",
    params(("key_id" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn revoke_key(
    State(state): State<AppState>,
    caller: AdminCaller,
    Path(key_id): Path<String>,
) -> ApiResult<StatusCode> {
    if clients::revoke_key(&state.db, &caller.0.tenant_id, &key_id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("key"))
    }
}

/// Creates a draft invoice for the client.
#[utoipa::path(post, path = "/clients/{client_id}/invoices", tag = "portal",
    params(("client_id" = String, Path)), request_body = crate::invoices::NewInvoice,
    responses((status = 403, body = ErrorBody, description = "Not an admin of the tenant"), (status = 201, body = AdminInvoice), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn create_invoice(
    State(state): State<AppState>,
    caller: AdminCaller,
    Path(client_id): Path<String>,
    Json(body): Json<InvoiceInput>,
) -> ApiResult<(StatusCode, Json<AdminInvoice>)> {
    if !clients::exists(&state.db, &caller.0.tenant_id, &client_id).await? {
        return Err(ApiError::NotFound("portal client"));
    }
    let checked = invoices::check(body, None)?;
    let row = invoices::insert(&state.db, &caller.0.tenant_id, &client_id, &checked).await?;
    Ok((StatusCode::CREATED, Json(row.admin_view())))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InvoiceFilter {
    /// Only this client's invoices.
    client_id: Option<String>,
    /// Invoices to skip (default 0).
    #[param(minimum = 0)]
    skip: Option<i64>,
    /// Page size, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

/// A page of the tenant's invoices.
#[derive(Serialize, ToSchema)]
pub struct AdminInvoicePage {
    items: Vec<AdminInvoice>,
    /// Invoices the filter keeps, over every page.
    total: i64,
    skip: i64,
    limit: i64,
}

/// The tenant's invoices, newest first, a page at a time. (The client
/// portal's own `/api/invoices` answers the client's whole list, as its
/// specification says.)
#[utoipa::path(get, path = "/invoices", tag = "portal",
    params(InvoiceFilter),
    responses((status = 200, body = AdminInvoicePage), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
async fn list_invoices(
    State(state): State<AppState>,
    caller: AdminCaller,
    Query(filter): Query<InvoiceFilter>,
) -> ApiResult<Json<AdminInvoicePage>> {
    let (skip, limit) = paging::bounds(filter.skip, filter.limit, paging::DEFAULT_LIMIT)?;
    let rows = invoices::list(
        &state.db,
        &caller.0.tenant_id,
        Reader::Staff {
            client_id: filter.client_id.as_deref(),
        },
    )
    .await?;
    let (rows, total) = paging::slice(rows, (skip, limit));
    Ok(Json(AdminInvoicePage {
        items: rows.into_iter().map(|r| r.admin_view()).collect(),
        total,
        skip,
        limit,
    }))
}

/// One invoice of the tenant.
#[utoipa::path(get, path = "/invoices/{invoice_id}", tag = "portal",
    params(("invoice_id" = String, Path)),
    responses((status = 403, body = ErrorBody, description = "Not an admin of the tenant"), (status = 200, body = AdminInvoice), (status = 404, body = ErrorBody)))]
async fn get_invoice(
    State(state): State<AppState>,
    caller: AdminCaller,
    Path(invoice_id): Path<String>,
) -> ApiResult<Json<AdminInvoice>> {
    invoices::get(
        &state.db,
        &caller.0.tenant_id,
        Reader::Staff { client_id: None },
        &invoice_id,
    )
    .await?
    .map(|r| Json(r.admin_view()))
    .ok_or(ApiError::NotFound("invoice"))
}

/// Changes a draft invoice (other statuses are final documents: 409).
#[utoipa::path(patch, path = "/invoices/{invoice_id}", tag = "portal",
    params(("invoice_id" = String, Path)), request_body = InvoiceInput,
    responses((status = 403, body = ErrorBody, description = "Not an admin of the tenant"), (status = 200, body = AdminInvoice), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn update_invoice(
    State(state): State<AppState>,
    caller: AdminCaller,
    Path(invoice_id): Path<String>,
    Json(body): Json<InvoiceInput>,
) -> ApiResult<Json<AdminInvoice>> {
    let row = invoices::update(&state.db, &caller.0.tenant_id, &invoice_id, body).await?;
    Ok(Json(row.admin_view()))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusChange {
    /// `sent` or `void` from draft; `paid` or `void` from sent.
    status: InvoiceStatus,
}

/// Moves an invoice: draft -> sent -> paid, draft -> void, sent -> void.
/// Any other move is 409.
#[utoipa::path(post, path = "/invoices/{invoice_id}/status", tag = "portal",
    params(("invoice_id" = String, Path)), request_body = StatusChange,
    responses((status = 403, body = ErrorBody, description = "Not an admin of the tenant"), (status = 200, body = AdminInvoice), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn set_status(
    State(state): State<AppState>,
    caller: AdminCaller,
    Path(invoice_id): Path<String>,
    Json(body): Json<StatusChange>,
) -> ApiResult<Json<AdminInvoice>> {
    let row = invoices::transition(
        &state.db,
        &caller.0.tenant_id,
        &invoice_id,
        body.status,
        None,
    )
    .await?;
    Ok(Json(row.admin_view()))
}

/// The payment provider's webhook for one tenant (no session: the
/// provider's signature, checked with the tenant's webhook secret, is the
/// credential). A completed checkout marks its invoice paid; an unsigned,
/// stale or forged delivery is 400 and changes nothing; a replayed event is
/// acknowledged and changes nothing.
#[utoipa::path(post, path = "/webhooks/{integration}/{tenant_id}", tag = "portal", security(()),
    params(("integration" = String, Path), ("tenant_id" = String, Path)),
    request_body(content = Object, content_type = "application/json", description = "the provider's event, as signed"),
    responses((status = 200, body = WebhookOutcome), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn webhook(
    State(state): State<AppState>,
    Path((integration, tenant_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<WebhookOutcome>> {
    let outcome =
        payments::receive_webhook(&state, &integration, &TenantId(tenant_id), &headers, &body)
            .await?;
    Ok(Json(outcome))
}
