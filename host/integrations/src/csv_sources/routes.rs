//! `/api/v1/csv-sources/...` and the generic software inventory's
//! `/api/v1/inventory/upload(s)`. A source is a loaded CSV provider; its
//! key is the route segment.

use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::ingest::{upload_key, CSV_PARSE_KIND};
use super::storage::{self, CsvSourceStats, NewUpload, UploadView};
use super::GENERIC_SOFTWARE;
use cairn_core::blobs::Outgoing;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Multipart, Path, Query};
use cairn_core::uploads::{self, SPREADSHEETS};
use cairn_inventory::records::{self, SourceRecordView};
use cairn_inventory::search::{page_bounds, Page};
use cairn_platform::app::AppState;
use cairn_platform::auth::{AdminCaller, Caller};
use cairn_plugins::{CsvDescriptor, LoadedCsvProvider};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_sources))
        .routes(routes!(get_source))
        .routes(routes!(upload_to_source))
        .routes(routes!(source_uploads))
        .routes(routes!(source_upload))
        .routes(routes!(purge_source))
        .routes(routes!(source_device_by_name))
        .routes(routes!(source_records))
        .routes(routes!(upload_inventory))
        .routes(routes!(inventory_uploads))
        .routes(routes!(inventory_upload))
        // Uploads stream to disk and enforce their own limit.
        .layer(DefaultBodyLimit::disable())
}

/// A source's descriptor with the tenant's figures.
#[derive(Serialize, ToSchema)]
pub struct CsvSource {
    #[serde(flatten)]
    pub descriptor: CsvDescriptor,
    pub stats: CsvSourceStats,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Default 0.
    #[param(minimum = 0)]
    pub skip: Option<i64>,
    /// Default 50, at most 500.
    #[param(minimum = 1)]
    pub limit: Option<i64>,
}

/// Options of an upload, in the query string.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UploadOptions {
    /// Excel only: the sheet to read (name, case ignored); the first sheet
    /// by default.
    pub sheet: Option<String>,
}

fn provider(state: &AppState, key: &str) -> ApiResult<std::sync::Arc<LoadedCsvProvider>> {
    state
        .plugins()
        .csv_provider(key)
        .cloned()
        .ok_or(ApiError::NotFound("CSV source"))
}

async fn describe(
    state: &AppState,
    caller: &Caller,
    provider: &LoadedCsvProvider,
) -> ApiResult<CsvSource> {
    let descriptor = provider.descriptor.clone();
    let stats = storage::stats(
        &state.db,
        &caller.tenant_id,
        &descriptor.key,
        descriptor.target == "software",
    )
    .await?;
    Ok(CsvSource { descriptor, stats })
}

/// Every registered CSV source with the tenant's figures: rows held,
/// devices, uploads and the latest upload.
#[utoipa::path(get, path = "/csv-sources/", tag = "csv-sources",
    responses((status = 200, body = Vec<CsvSource>)))]
async fn list_sources(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<CsvSource>>> {
    let mut sources = vec![];
    for provider in &state.plugins().csv_providers {
        sources.push(describe(&state, &caller, provider).await?);
    }
    Ok(Json(sources))
}

/// One source's descriptor with the tenant's figures.
#[utoipa::path(get, path = "/csv-sources/{key}", tag = "csv-sources",
    params(("key" = String, Path)),
    responses((status = 200, body = CsvSource), (status = 404, body = ErrorBody)))]
async fn get_source(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> ApiResult<Json<CsvSource>> {
    let provider = provider(&state, &key)?;
    Ok(Json(describe(&state, &caller, &provider).await?))
}

/// Uploads a CSV or Excel file (multipart, one part named `file`) to the
/// source and queues its parse (`csv_parse` job); 202 with the upload,
/// whose status, counts, rejections, sample rows and fill rate grow as the
/// parse runs. The file must be .csv, .xlsx or .xls, non-empty, at most the
/// configured size (100 MB by default), and really of that type (sniffed
/// from the first 8 KB); otherwise 400 `upload_rejected` with `field`
/// naming the failed check. When the parse succeeds the source's previous
/// rows for the tenant are replaced in one transaction; when it fails they
/// are untouched.
#[utoipa::path(post, path = "/csv-sources/{key}/upload", tag = "csv-sources",
    params(("key" = String, Path), UploadOptions),
    request_body(content = cairn_core::uploads::FileUpload, content_type = "multipart/form-data", description = "one part named `file`"),
    responses((status = 202, body = UploadView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn upload_to_source(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    Query(options): Query<UploadOptions>,
    Multipart(multipart): Multipart,
) -> ApiResult<(StatusCode, Json<UploadView>)> {
    let provider = provider(&state, &key)?;
    accept(&state, &caller, &provider, options, multipart).await
}

async fn accept(
    state: &AppState,
    caller: &Caller,
    provider: &LoadedCsvProvider,
    options: UploadOptions,
    multipart: axum::extract::Multipart,
) -> ApiResult<(StatusCode, Json<UploadView>)> {
    let max_bytes = state.settings.csv_max_upload_mb * 1024 * 1024;
    let store = &state.blobs.uploads;
    let received =
        uploads::receive_one(multipart, SPREADSHEETS, &store.tmp_dir(), max_bytes).await?;
    let id = uuid::Uuid::now_v7().to_string();
    let key = upload_key(&caller.tenant_id, &id);
    // The file is in the store before its row: a parse never finds a row
    // without its file (unless an operator removed it).
    store.put(Outgoing::from(&received), &key).await?;
    let sheet = options
        .sheet
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let inserted = storage::insert(
        &state.db,
        &caller.tenant_id,
        NewUpload {
            id: &id,
            source_key: &provider.descriptor.key,
            received: &received,
            sheet,
            uploaded_by: caller.user_id.as_str(),
            store: &state.jobs.holder,
        },
    )
    .await;
    if let Err(err) = inserted {
        if let Err(cleanup) = store.remove(&key).await {
            tracing::warn!(error = %cleanup, key, "removing an upload without a row failed");
        }
        return Err(err.into());
    }
    // One parse job per tenant works through its waiting uploads in order;
    // while one runs, this queues another to start when it ends. Only a
    // process holding the store that keeps the file claims it.
    let job = state
        .jobs
        .enqueue_held(
            &caller.tenant_id,
            CSV_PARSE_KIND,
            &serde_json::json!({}),
            &state.jobs.holder,
        )
        .await?;
    storage::set_job(&state.db, &caller.tenant_id, &id, &job.job_id).await?;
    let upload = storage::get(&state.db, &caller.tenant_id, &provider.descriptor.key, &id)
        .await?
        .ok_or(ApiError::NotFound("upload"))?;
    Ok((StatusCode::ACCEPTED, Json(upload.into())))
}

/// The source's uploads, newest first.
#[utoipa::path(get, path = "/csv-sources/{key}/uploads", tag = "csv-sources",
    params(("key" = String, Path), PageParams),
    responses((status = 200, body = Page<UploadView>), (status = 404, body = ErrorBody)))]
async fn source_uploads(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    Query(page): Query<PageParams>,
) -> ApiResult<Json<Page<UploadView>>> {
    let provider = provider(&state, &key)?;
    list_uploads(&state, &caller, &provider.descriptor.key, page).await
}

async fn list_uploads(
    state: &AppState,
    caller: &Caller,
    key: &str,
    page: PageParams,
) -> ApiResult<Json<Page<UploadView>>> {
    let (skip, limit) = page_bounds(page.skip, page.limit)?;
    let (rows, total) = storage::list(&state.db, &caller.tenant_id, key, skip, limit).await?;
    Ok(Json(Page::new(
        rows.into_iter().map(UploadView::from).collect(),
        total,
        (skip, limit),
    )))
}

/// One upload: status, counts (read, imported, rejected, duplicates), the
/// first rejections with their reasons, sample rows and per-column fill
/// rate.
#[utoipa::path(get, path = "/csv-sources/{key}/uploads/{upload_id}", tag = "csv-sources",
    params(("key" = String, Path), ("upload_id" = String, Path)),
    responses((status = 200, body = UploadView), (status = 404, body = ErrorBody)))]
async fn source_upload(
    State(state): State<AppState>,
    caller: Caller,
    Path((key, upload_id)): Path<(String, String)>,
) -> ApiResult<Json<UploadView>> {
    let provider = provider(&state, &key)?;
    one_upload(&state, &caller, &provider.descriptor.key, &upload_id).await
}

async fn one_upload(
    state: &AppState,
    caller: &Caller,
    key: &str,
    upload_id: &str,
) -> ApiResult<Json<UploadView>> {
    storage::get(&state.db, &caller.tenant_id, key, upload_id)
        .await?
        .map(|row| Json(row.into()))
        .ok_or(ApiError::NotFound("upload"))
}

#[derive(Serialize, ToSchema)]
pub struct Purged {
    /// Rows deleted (inventory items or records).
    pub deleted: u64,
}

/// Deletes everything the source imported for the tenant (admins only);
/// the software and asset views are rebuilt.
#[utoipa::path(delete, path = "/csv-sources/{key}/data", tag = "csv-sources",
    params(("key" = String, Path)),
    responses((status = 200, body = Purged), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn purge_source(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(key): Path<String>,
) -> ApiResult<Json<Purged>> {
    let provider = provider(&state, &key)?;
    let deleted = storage::purge(&state.db, &caller.tenant_id, &provider.descriptor.key).await?;
    cairn_inventory::rollup::request(
        &state.db,
        &caller.tenant_id,
        &format!("csv source {key} purged"),
    )
    .await?;
    Ok(Json(Purged { deleted }))
}

/// The source's record for a device (device-target sources): the exact
/// name (case ignored) or its 15-character NetBIOS form.
#[utoipa::path(get, path = "/csv-sources/{key}/device-by-name/{device_name}", tag = "csv-sources",
    params(("key" = String, Path), ("device_name" = String, Path)),
    responses((status = 200, body = SourceRecordView), (status = 404, body = ErrorBody)))]
async fn source_device_by_name(
    State(state): State<AppState>,
    caller: Caller,
    Path((key, device_name)): Path<(String, String)>,
) -> ApiResult<Json<SourceRecordView>> {
    let provider = provider(&state, &key)?;
    records::device_record(
        &state.db,
        &caller.tenant_id,
        &provider.descriptor.key,
        &device_name,
    )
    .await?
    .map(Json)
    .ok_or(ApiError::NotFound("device record"))
}

/// The records the source holds (records, device and user targets), by
/// kind and key.
#[utoipa::path(get, path = "/csv-sources/{key}/records", tag = "csv-sources",
    params(("key" = String, Path), PageParams),
    responses((status = 200, body = Page<SourceRecordView>), (status = 404, body = ErrorBody)))]
async fn source_records(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    Query(page): Query<PageParams>,
) -> ApiResult<Json<Page<SourceRecordView>>> {
    let provider = provider(&state, &key)?;
    let (skip, limit) = page_bounds(page.skip, page.limit)?;
    let (items, total) = records::of_source(
        &state.db,
        &caller.tenant_id,
        &provider.descriptor.key,
        skip,
        limit,
    )
    .await?;
    Ok(Json(Page::new(items, total, (skip, limit))))
}

/// Uploads a software-inventory CSV or Excel file to the generic software
/// source (`software-inventory`): as `POST /api/v1/csv-sources/{key}/upload`.
#[utoipa::path(post, path = "/inventory/upload", tag = "inventory",
    params(UploadOptions),
    request_body(content = cairn_core::uploads::FileUpload, content_type = "multipart/form-data", description = "one part named `file`"),
    responses((status = 202, body = UploadView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody, description = "The generic software provider is not loaded")))]
async fn upload_inventory(
    State(state): State<AppState>,
    caller: Caller,
    Query(options): Query<UploadOptions>,
    Multipart(multipart): Multipart,
) -> ApiResult<(StatusCode, Json<UploadView>)> {
    let provider = provider(&state, GENERIC_SOFTWARE)?;
    accept(&state, &caller, &provider, options, multipart).await
}

/// Uploads of the generic software source, newest first.
#[utoipa::path(get, path = "/inventory/uploads", tag = "inventory",
    params(PageParams),
    responses((status = 200, body = Page<UploadView>)))]
async fn inventory_uploads(
    State(state): State<AppState>,
    caller: Caller,
    Query(page): Query<PageParams>,
) -> ApiResult<Json<Page<UploadView>>> {
    list_uploads(&state, &caller, GENERIC_SOFTWARE, page).await
}

/// One upload of the generic software source.
#[utoipa::path(get, path = "/inventory/uploads/{upload_id}", tag = "inventory",
    params(("upload_id" = String, Path)),
    responses((status = 200, body = UploadView), (status = 404, body = ErrorBody)))]
async fn inventory_upload(
    State(state): State<AppState>,
    caller: Caller,
    Path(upload_id): Path<String>,
) -> ApiResult<Json<UploadView>> {
    one_upload(&state, &caller, GENERIC_SOFTWARE, &upload_id).await
}
