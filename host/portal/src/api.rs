//! The client portal API (`/api`): what a tenant's customer reaches with its
//! `chp_live_` key. Every query is scoped by the key's tenant and client;
//! another client's invoice or file is 404.

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::files::{self, File, LinkSigner};
use super::invoices::{self, Invoice, Reader};
use super::keys::PortalClient;
use super::payments;
use cairn_core::blobs::{BlobStore, LocalStore, StoreKind};
use cairn_core::db::now_ms;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Multipart, Path, Query};
use cairn_core::ids::TenantId;
use cairn_core::uploads::{self, DOCUMENTS};
use cairn_platform::app::AppState;
use cairn_workflow::sla::exceptions::{self, ExceptionView};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_invoices))
        .routes(routes!(get_invoice))
        .routes(routes!(pay_invoice))
        .routes(routes!(list_files, upload_file))
        .routes(routes!(download_file))
        .routes(routes!(file_content))
        .routes(routes!(list_exceptions))
        .routes(routes!(decide_exception))
        .routes(routes!(list_remediation_plans))
        .routes(routes!(decide_remediation_plan))
        // Uploads stream to disk and enforce their own limit.
        .layer(DefaultBodyLimit::disable())
}

/// The client's invoices, newest first: sent, paid and void ones (drafts
/// are not shown to clients).
#[utoipa::path(get, path = "/invoices", tag = "invoices",
    responses((status = 200, body = Vec<Invoice>), (status = 401, body = ErrorBody)))]
async fn list_invoices(
    State(state): State<AppState>,
    client: PortalClient,
) -> ApiResult<Json<Vec<Invoice>>> {
    let rows = invoices::list(
        &state.db,
        &client.tenant_id,
        Reader::Client(&client.client_id),
    )
    .await?;
    Ok(Json(rows.into_iter().map(|r| r.view()).collect()))
}

/// One of the client's invoices; a draft answers 404.
#[utoipa::path(get, path = "/invoices/{id}", tag = "invoices",
    params(("id" = String, Path)),
    responses((status = 200, body = Invoice), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn get_invoice(
    State(state): State<AppState>,
    client: PortalClient,
    Path(id): Path<String>,
) -> ApiResult<Json<Invoice>> {
    invoices::get(
        &state.db,
        &client.tenant_id,
        Reader::Client(&client.client_id),
        &id,
    )
    .await?
    .map(|r| Json(r.view()))
    .ok_or(ApiError::NotFound("invoice"))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentLink {
    /// Hosted checkout page of the payments provider.
    pub payment_url: String,
}

/// A hosted payment link for a sent invoice (no body). The same link comes
/// back while it is valid; paid and void invoices answer 409 (a draft is
/// not found: clients do not see drafts).
#[utoipa::path(post, path = "/invoices/{id}/pay", tag = "invoices",
    params(("id" = String, Path)),
    responses((status = 200, body = PaymentLink), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 502, body = ErrorBody)))]
async fn pay_invoice(
    State(state): State<AppState>,
    client: PortalClient,
    Path(id): Path<String>,
) -> ApiResult<Json<PaymentLink>> {
    let invoice = invoices::get(
        &state.db,
        &client.tenant_id,
        Reader::Client(&client.client_id),
        &id,
    )
    .await?
    .ok_or(ApiError::NotFound("invoice"))?;
    let payment_url = payments::payment_link(&state, &client.tenant_id, invoice).await?;
    Ok(Json(PaymentLink { payment_url }))
}

/// The client's documents, newest first.
#[utoipa::path(get, path = "/files", tag = "files",
    responses((status = 200, body = Vec<File>), (status = 401, body = ErrorBody)))]
async fn list_files(
    State(state): State<AppState>,
    client: PortalClient,
) -> ApiResult<Json<Vec<File>>> {
    Ok(Json(
        files::list(&state.db, &client.tenant_id, &client.client_id).await?,
    ))
}

/// Uploads one document: multipart/form-data with one part named `file`.
/// Accepted: .pdf, .docx, .xlsx, .csv, .txt, .png, .jpg/.jpeg, non-empty,
/// at most the configured size (100 MB by default), and content that really
/// is of that type (sniffed from the first 8 KB). A refused upload is 400
/// with `type: upload_rejected` and `field` naming the failed check
/// (`extension`, `size`, `content`, `file`).
#[utoipa::path(post, path = "/files", tag = "files",
    request_body(content = cairn_core::uploads::FileUpload, content_type = "multipart/form-data", description = "one part named `file`"),
    responses((status = 201, body = File), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)))]
async fn upload_file(
    State(state): State<AppState>,
    client: PortalClient,
    Multipart(multipart): Multipart,
) -> ApiResult<(StatusCode, Json<File>)> {
    let max_bytes = state.settings.portal_max_upload_mb * 1024 * 1024;
    let received = uploads::receive_one(
        multipart,
        DOCUMENTS,
        &state.blobs.portal.tmp_dir(),
        max_bytes,
    )
    .await?;
    // A task of its own: a client hanging up must not cancel the request
    // between storing the object and writing its row.
    let file = tokio::spawn(keep_upload(state.clone(), client, received))
        .await
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("storing an upload: {e}")))??;
    Ok((StatusCode::CREATED, Json(file)))
}

/// Keeps a checked upload in the configured store and records it; on any
/// failure neither the object nor the row remains.
async fn keep_upload(
    state: AppState,
    client: PortalClient,
    received: uploads::Received,
) -> ApiResult<File> {
    files::keep(
        &state.db,
        &state.blobs.portal,
        &client.tenant_id,
        &client.client_id,
        &received,
    )
    .await
}

/// Redirects (302) to a download link valid for `portal_download_ttl_secs`:
/// a signed link to `/api/files/{id}/content` for the local store, a
/// presigned URL of the object for the S3 store.
#[utoipa::path(get, path = "/files/{id}/download", tag = "files",
    params(("id" = String, Path)),
    responses((status = 302, description = "`Location` is the short-lived signed or presigned URL"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 410, body = ErrorBody, description = "The document's file is no longer in the store")))]
async fn download_file(
    State(state): State<AppState>,
    client: PortalClient,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let stored = files::owned(&state.db, &client.tenant_id, &client.client_id, &id)
        .await?
        .ok_or(ApiError::NotFound("file"))?;
    let ttl = state.settings.portal_download_ttl_secs;
    let link = match stored.store {
        StoreKind::Local => {
            LinkSigner::new(&state.settings.jwt_secret).link(&id, now_ms() / 1000 + ttl as i64)
        }
        StoreKind::S3 => {
            // A presigned URL to a removed object would send the client to
            // the bucket's own 404: say here that the document is gone.
            let store = &state.blobs.portal;
            store.check(&stored.storage_key).await?;
            store
                .presigned_get(&stored.storage_key, std::time::Duration::from_secs(ttl))
                .await?
        }
    };
    Ok((StatusCode::FOUND, [(header::LOCATION, link)]).into_response())
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SignedLink {
    expires: i64,
    signature: String,
}

/// The document's bytes, for a signed link from `/download` to a document
/// of the local store (no API key: the link is the credential). A changed
/// or expired link is refused.
#[utoipa::path(get, path = "/files/{id}/content", tag = "files", security(()),
    params(("id" = String, Path), SignedLink),
    responses((status = 200, description = "The document's bytes, with the content type it was stored with", content(
                  (String = "application/pdf"),
                  (String = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
                  (String = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
                  (String = "text/csv"),
                  (String = "text/plain"),
                  (String = "image/png"),
                  (String = "image/jpeg"),
                  (String = "application/octet-stream"))),
        (status = 403, body = ErrorBody),
        (status = 410, body = ErrorBody)))]
async fn file_content(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(link): Query<SignedLink>,
) -> ApiResult<Response> {
    LinkSigner::new(&state.settings.jwt_secret).verify(
        &id,
        link.expires,
        &link.signature,
        now_ms() / 1000,
    )?;
    let (name, content_type, size, key) = files::for_download(&state.db, &id)
        .await?
        .ok_or(ApiError::NotFound("file"))?;
    // Signed links are only made for documents of the local store, which
    // is this shelf's local directory whatever store is configured now.
    let store = BlobStore::Local(LocalStore::new(state.settings.portal_files_dir.clone()));
    let opened = store.open(&key).await?;
    let body = Body::from_stream(opened.bytes);
    let disposition = cairn_core::blobs::attachment_disposition(&name);
    Ok((
        [
            (
                header::CONTENT_TYPE,
                content_type.unwrap_or_else(|| "application/octet-stream".into()),
            ),
            (header::CONTENT_LENGTH, size.to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        body,
    )
        .into_response())
}

/// An SLA exception of the client's company, as the portal shows it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PortalException {
    pub id: String,
    pub cve_id: String,
    /// Device names it covers; empty: every device with the CVE.
    pub devices: Vec<String>,
    pub reason: String,
    pub compensating_control: Option<String>,
    /// Unix epoch seconds.
    pub expires_at: i64,
    /// `pending`, `approved`, `rejected` or `expired`.
    pub status: String,
    /// Who asked (the managed service provider's analyst).
    pub requested_by: String,
    /// Unix epoch seconds.
    pub requested_at: i64,
    pub decided_by: Option<String>,
    /// Unix epoch seconds.
    pub decided_at: Option<i64>,
    pub decision_comment: Option<String>,
}

impl From<ExceptionView> for PortalException {
    fn from(view: ExceptionView) -> PortalException {
        PortalException {
            id: view.id,
            cve_id: view.cve_id,
            devices: view.devices,
            reason: view.reason,
            compensating_control: view.compensating_control,
            expires_at: view.expires_at / 1000,
            status: view.status,
            requested_by: view.requested_by,
            requested_at: view.requested_at / 1000,
            decided_by: view.decided_by,
            decided_at: view.decided_at.map(|at| at / 1000),
            decision_comment: view.decision_comment,
        }
    }
}

/// The client's company as a customer tenant, with the client's name.
async fn company(state: &AppState, client: &PortalClient) -> ApiResult<Option<(TenantId, String)>> {
    let found = super::clients::get(&state.db, &client.tenant_id, &client.client_id).await?;
    Ok(found.and_then(|c| Some((TenantId(c.customer_id?), c.name))))
}

/// The SLA exceptions asked for the client's company, newest first
/// (none unless the provider linked this client to its company).
#[utoipa::path(get, path = "/exceptions", tag = "exceptions",
    responses((status = 200, body = Vec<PortalException>), (status = 401, body = ErrorBody)))]
async fn list_exceptions(
    State(state): State<AppState>,
    client: PortalClient,
) -> ApiResult<Json<Vec<PortalException>>> {
    let Some((company, _)) = company(&state, &client).await? else {
        return Ok(Json(vec![]));
    };
    let now = state.clock.now_ms();
    let rows = exceptions::list(&state.db, &company).await?;
    Ok(Json(rows.into_iter().map(|r| r.view(now).into()).collect()))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExceptionDecision {
    approve: bool,
    /// Why, at most 2,000 characters.
    #[serde(default)]
    comment: String,
}

impl ExceptionDecision {
    /// The comment, trimmed; 422 past 2,000 characters.
    fn comment(&self) -> ApiResult<&str> {
        let comment = self.comment.trim();
        if comment.chars().count() > 2000 {
            return Err(ApiError::validation(
                "comment",
                "must be at most 2000 characters",
            ));
        }
        Ok(comment)
    }
}

/// Approve or reject a pending exception of the client's company.
#[utoipa::path(post, path = "/exceptions/{id}/decision", tag = "exceptions",
    params(("id" = String, Path)), request_body = ExceptionDecision,
    responses((status = 200, body = PortalException), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Already decided"),
        (status = 422, body = ErrorBody)))]
async fn decide_exception(
    State(state): State<AppState>,
    client: PortalClient,
    Path(id): Path<String>,
    Json(decision): Json<ExceptionDecision>,
) -> ApiResult<Json<PortalException>> {
    let comment = decision.comment()?;
    let (company, name) = company(&state, &client)
        .await?
        .ok_or(ApiError::NotFound("exception"))?;
    let now = state.clock.now_ms();
    let by = format!("{name} (client portal)");
    let decided = exceptions::Decision {
        approve: decision.approve,
        by: &by,
        user_id: None,
        comment,
        at: now,
    };
    let row = exceptions::decide(&state.db, &company, &id, &decided).await?;
    Ok(Json(row.view(now).into()))
}

/// A remediation plan of the client's company that its provider asks it
/// to approve (or that it decided), as the portal shows it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PortalRemediationPlan {
    pub id: String,
    /// The CVE it fixes; absent for a plan over devices from a search.
    pub cve_id: Option<String>,
    /// `awaiting_client`, then `approved`, `running`, `done`, `rejected`
    /// or `cancelled`.
    pub status: String,
    /// The provider's admin who approved it first.
    pub approved_by: Option<String>,
    /// Devices it updates, and devices it leaves out.
    pub devices_planned: i64,
    pub devices_left_out: i64,
    /// Devices a later inventory shows fixed so far.
    pub devices_fixed: i64,
    pub decided_by: Option<String>,
    /// Unix epoch seconds.
    pub decided_at: Option<i64>,
    pub decision_comment: Option<String>,
    /// Unix epoch seconds.
    pub created_at: i64,
}

fn epoch_seconds(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| t.timestamp())
        .unwrap_or_default()
}

impl From<cairn_workflow::remediation::PlanSummary> for PortalRemediationPlan {
    fn from(plan: cairn_workflow::remediation::PlanSummary) -> PortalRemediationPlan {
        let c = &plan.counts;
        PortalRemediationPlan {
            devices_planned: c.planned
                + c.in_progress
                + c.awaiting_inventory
                + c.fixed
                + c.remediation_failed
                + c.failed,
            devices_left_out: c.skipped,
            devices_fixed: c.fixed,
            created_at: epoch_seconds(&plan.created_at),
            decided_at: plan.client_decided_at.as_deref().map(epoch_seconds),
            id: plan.id,
            cve_id: plan.cve_id,
            status: plan.status,
            approved_by: plan.approved_by,
            decided_by: plan.client_decided_by,
            decision_comment: plan.client_comment,
        }
    }
}

/// The remediation plans of the client's company awaiting its approval or
/// decided by it, newest first (none unless the provider linked this
/// client to its company and asks for its approval).
#[utoipa::path(get, path = "/remediation-plans", tag = "remediation",
    responses((status = 200, body = Vec<PortalRemediationPlan>), (status = 401, body = ErrorBody)))]
async fn list_remediation_plans(
    State(state): State<AppState>,
    client: PortalClient,
) -> ApiResult<Json<Vec<PortalRemediationPlan>>> {
    let Some((company, _)) = company(&state, &client).await? else {
        return Ok(Json(vec![]));
    };
    let plans = cairn_workflow::remediation::client_plans(&state, &company).await?;
    Ok(Json(plans.into_iter().map(Into::into).collect()))
}

/// Approve (the plan's updates then go out) or reject a remediation plan
/// of the client's company awaiting its approval.
#[utoipa::path(post, path = "/remediation-plans/{id}/decision", tag = "remediation",
    params(("id" = String, Path)), request_body = ExceptionDecision,
    responses((status = 200, body = PortalRemediationPlan), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Not awaiting the client's decision"),
        (status = 422, body = ErrorBody)))]
async fn decide_remediation_plan(
    State(state): State<AppState>,
    client: PortalClient,
    Path(id): Path<String>,
    Json(decision): Json<ExceptionDecision>,
) -> ApiResult<Json<PortalRemediationPlan>> {
    let comment = decision.comment()?;
    let (company, name) = company(&state, &client)
        .await?
        .ok_or(ApiError::NotFound("remediation plan"))?;
    let by = format!("{name} (client portal)");
    let plan = cairn_workflow::remediation::client_decide(
        &state,
        &company,
        &id,
        decision.approve,
        &by,
        comment,
    )
    .await?;
    Ok(Json(plan.into()))
}
